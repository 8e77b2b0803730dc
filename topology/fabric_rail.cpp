// Rail-optimized network (NVIDIA DGX SuperPOD style): nodes come in scalable units of
// `nodes_per_leaf`; inside a unit, NIC k of every node sits on the unit's rail-k leaf,
// so same-rail traffic crosses one switch. Rails and units join through the aggregate
// spine (see fabric_fat_tree.cpp); cross-rail traffic may instead hop over NVLink to
// the peer on the right rail first (PXN) when that path is shorter.
#include <algorithm>

#include "topology/fabric.h"

namespace dayzero::topology::detail {

void build_rail_optimized(Builder& b) {
  const auto& cfg = b.cfg;
  const int per_group = std::min(cfg.inter_node.nodes_per_leaf, cfg.nodes);
  std::vector<std::pair<uint32_t, double>> leaves;
  for (int first = 0; first < cfg.nodes; first += per_group) {
    const int last = std::min(first + per_group, cfg.nodes);
    for (int k = 0; k < cfg.nics.per_node; ++k) {
      const uint32_t leaf = b.add_vertex(VertexKind::network_switch,
                                         "su" + std::to_string(first / per_group) + ".rail" + std::to_string(k));
      for (int n = first; n < last; ++n)
        b.add_link(b.nic_vertices[static_cast<std::size_t>(n * cfg.nics.per_node + k)], leaf, LinkKind::network,
                   cfg.nics.bw_Bps, cfg.inter_node.latency_s);
      leaves.emplace_back(leaf, (last - first) * cfg.nics.bw_Bps);
    }
  }
  add_spine(b, leaves);
}

}  // namespace dayzero::topology::detail
