// NVSwitch: every device has one aggregate link (all its NVLinks) to a non-blocking
// switch. An NVLink domain may span several nodes (GB200 NVL72: 18 trays of 4 GPUs
// behind the same NVLink switch trays), so the switch vertex belongs to the domain.
#include "topology/fabric.h"

namespace dayzero::topology::detail {

void build_nvswitch(Builder& b) {
  const auto& cfg = b.cfg;
  const int per_domain = cfg.intra_node.domain_nodes;
  for (int first = 0; first < cfg.nodes; first += per_domain) {
    const std::string name =
        per_domain == 1 ? b.node_name(first) + ".nvswitch" : "nvl-domain" + std::to_string(first / per_domain);
    const uint32_t sw = b.add_vertex(VertexKind::nvswitch, name, per_domain == 1 ? first : -1);
    for (int n = first; n < first + per_domain; ++n)
      for (int d = 0; d < cfg.devices_per_node; ++d)
        b.add_link(b.device_vertex(n, d), sw, LinkKind::nvlink, b.intra_link_bw_Bps, cfg.intra_node.latency_s);
  }
}

}  // namespace dayzero::topology::detail
