// Fat tree: a leaf switch per group of `nodes_per_leaf` nodes with all their NICs on
// it; leaves join through the spine layer. The spine is one aggregate vertex whose link
// to each leaf carries the leaf's downlink bandwidth / oversubscription: equal-cost
// multipath spreads flows over all spines, so the aggregate is the capacity a leaf
// really has upward (the same abstraction as astra-sim's analytical fat tree).
#include <algorithm>

#include "topology/fabric.h"

namespace dayzero::topology::detail {

void add_spine(Builder& b, const std::vector<std::pair<uint32_t, double>>& leaves) {
  if (leaves.size() < 2) return;
  const uint32_t spine = b.add_vertex(VertexKind::network_switch, "spine");
  for (auto [leaf, down_bw_Bps] : leaves)
    b.add_link(leaf, spine, LinkKind::network, down_bw_Bps / b.cfg.inter_node.oversubscription,
               b.cfg.inter_node.latency_s);
}

void build_fat_tree(Builder& b) {
  const auto& cfg = b.cfg;
  const int per_leaf = std::min(cfg.inter_node.nodes_per_leaf, cfg.nodes);
  std::vector<std::pair<uint32_t, double>> leaves;
  for (int first = 0; first < cfg.nodes; first += per_leaf) {
    const uint32_t leaf = b.add_vertex(VertexKind::network_switch, "leaf" + std::to_string(first / per_leaf));
    const int last = std::min(first + per_leaf, cfg.nodes);
    for (int n = first; n < last; ++n)
      for (int k = 0; k < cfg.nics.per_node; ++k)
        b.add_link(b.nic_vertices[static_cast<std::size_t>(n * cfg.nics.per_node + k)], leaf, LinkKind::network,
                   cfg.nics.bw_Bps, cfg.inter_node.latency_s);
    leaves.emplace_back(leaf, (last - first) * cfg.nics.per_node * cfg.nics.bw_Bps);
  }
  add_spine(b, leaves);
}

}  // namespace dayzero::topology::detail
