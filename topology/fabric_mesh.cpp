// Point-to-point mesh: devices joined pairwise by direct links (AMD Infinity Fabric on
// an 8-GPU MI300X platform: 7 links per GPU, one to each peer). With no links listed
// every pair is joined; a listed subset models partial meshes (hybrid cube-mesh).
#include "topology/fabric.h"

namespace dayzero::topology::detail {

void build_mesh(Builder& b) {
  const auto& cfg = b.cfg;
  std::vector<std::pair<int, int>> pairs = cfg.intra_node.mesh_links;
  if (pairs.empty())
    for (int i = 0; i < cfg.devices_per_node; ++i)
      for (int j = i + 1; j < cfg.devices_per_node; ++j) pairs.emplace_back(i, j);
  for (int n = 0; n < cfg.nodes; ++n)
    for (auto [i, j] : pairs)
      b.add_link(b.device_vertex(n, i), b.device_vertex(n, j), LinkKind::mesh, b.intra_link_bw_Bps,
                 cfg.intra_node.latency_s);
}

}  // namespace dayzero::topology::detail
