// NICs: each NIC links to every device behind it. The link stands for GPUDirect RDMA
// through the node's PCIe switch (so its latency is that of two PCIe links), and it is
// separate from the device's link to its host: NIC traffic does not cross the host.
#include "topology/fabric.h"

namespace dayzero::topology::detail {

void build_nics(Builder& b) {
  const auto& cfg = b.cfg;
  const double pcie_bw_Bps = cfg.nics.pcie_bw_Bps.value_or(b.host_link_bw_Bps);
  for (int n = 0; n < cfg.nodes; ++n) {
    for (int k = 0; k < cfg.nics.per_node; ++k) {
      const uint32_t nic = b.add_vertex(VertexKind::nic, b.node_name(n) + ".nic" + std::to_string(k), n, k);
      b.nic_vertices.push_back(nic);
      for (int d : cfg.nics.devices[static_cast<std::size_t>(k)])
        b.add_link(b.device_vertex(n, d), nic, LinkKind::pcie, pcie_bw_Bps, cfg.nics.latency_s);
    }
  }
}

}  // namespace dayzero::topology::detail
