// Cluster graphs built from the shipped files: the vertices and links each fabric adds,
// routes and their bottlenecks, names, and the JSON round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "helpers.h"
#include "topology/paths.h"

namespace dayzero::topology {
namespace {

using testing::catalog;
using testing::shipped;

std::size_t count(const Cluster& cl, VertexKind k) {
  return static_cast<std::size_t>(
      std::count_if(cl.vertices().begin(), cl.vertices().end(), [&](const VertexInfo& v) { return v.kind == k; }));
}

TEST(TopologyCluster, H100NodeHasSwitchesHostAndLinks) {
  const Cluster cl = shipped("h100x8");
  EXPECT_EQ(cl.num_devices(), 8u);
  EXPECT_EQ(cl.device_spec().name, "H100-SXM");
  // 8 devices + 1 host + 4 PCIe switches + 1 NVSwitch.
  EXPECT_EQ(cl.vertices().size(), 14u);
  EXPECT_EQ(count(cl, VertexKind::pcie_switch), 4u);
  // 8 device-PCIe + 4 PCIe-host + 8 device-NVSwitch.
  EXPECT_EQ(cl.links().size(), 20u);
  EXPECT_EQ(cl.device_name(5), "n0.d5");
  EXPECT_EQ(cl.find_device("n0.d5"), DeviceId{5});
  EXPECT_FALSE(cl.find_device("n1.d0").has_value());
}

TEST(TopologyCluster, TwoH200NodesOnRails) {
  const Cluster cl = shipped("h200-2x8");
  // Per node 8 devices + host + 4 PCIe + NVSwitch + 8 NICs = 22; 8 rail leaves + spine.
  EXPECT_EQ(cl.vertices().size(), 2 * 22u + 9u);
  EXPECT_EQ(count(cl, VertexKind::nic), 16u);
  EXPECT_EQ(count(cl, VertexKind::network_switch), 9u);
  // Per node 8 + 4 + 8 + 8 = 28 links; 16 NIC-leaf; 8 leaf-spine.
  EXPECT_EQ(cl.links().size(), 56u + 16u + 8u);

  PathOracle paths(cl);
  // Same rail: device -> NIC -> rail leaf -> NIC -> device: 1.0 + 0.35 + 0.35 + 1.0 us.
  const Route same = paths.route(cl.device(0, 5), cl.device(1, 5));
  EXPECT_EQ(same.channels.size(), 4u);
  EXPECT_NEAR(same.latency_s, 2.7e-6, 1e-15);
  EXPECT_DOUBLE_EQ(same.bottleneck_bw_Bps, 50e9);
  // Other rail: over NVLink to the peer on rail 5 first (PXN), 0.5 + 2.7 = 3.2 us, rather
  // than up through the spine (1.0 + 4 x 0.35 + 1.0 = 3.4 us).
  const Route cross = paths.route(cl.device(0, 0), cl.device(1, 5));
  EXPECT_EQ(cross.channels.size(), 6u);
  EXPECT_NEAR(cross.latency_s, 3.2e-6, 1e-15);
  EXPECT_EQ(cl.links()[cross.channels[0] / 2].kind, LinkKind::nvlink);
  // Inside the node: NVLink only, 450e9.
  const Route local = paths.route(cl.device(0, 0), cl.device(0, 7));
  EXPECT_DOUBLE_EQ(local.bottleneck_bw_Bps, 450e9);
}

TEST(TopologyCluster, SixtyFourNodesInTwoScalableUnits) {
  const Cluster cl = shipped("h200-64x8");
  EXPECT_EQ(cl.num_devices(), 512u);
  EXPECT_EQ(count(cl, VertexKind::network_switch), 2u * 8u + 1u);
  // A rail leaf's uplink carries its 32 downlinks of 50e9 at 1:1.
  int uplinks = 0;
  for (const auto& l : cl.links()) {
    if (cl.vertices()[l.b].name != "spine") continue;
    EXPECT_DOUBLE_EQ(l.bw_Bps, 32 * 50e9);
    ++uplinks;
  }
  EXPECT_EQ(uplinks, 16);
  PathOracle paths(cl);
  // Across units on the same rail: device, NIC, leaf, spine, leaf, NIC, device.
  const Route r = paths.route(cl.device(0, 2), cl.device(40, 2));
  EXPECT_EQ(r.channels.size(), 6u);
  EXPECT_NEAR(r.latency_s, 1.0e-6 + 4 * 0.35e-6 + 1.0e-6, 1e-15);
}

TEST(TopologyCluster, Nvl72IsOneNvlinkDomainWithC2cHosts) {
  const Cluster cl = shipped("gb200-nvl72");
  EXPECT_EQ(cl.num_devices(), 72u);
  EXPECT_EQ(count(cl, VertexKind::nvswitch), 1u);
  EXPECT_EQ(count(cl, VertexKind::pcie_switch), 0u);
  const auto c2c =
      std::count_if(cl.links().begin(), cl.links().end(), [](const LinkInfo& l) { return l.kind == LinkKind::c2c; });
  EXPECT_EQ(c2c, 72);
  EXPECT_DOUBLE_EQ(cl.host_link_bw_Bps(), 225e9);
}

TEST(TopologyCluster, MeshAndPcieBoxes) {
  const Cluster mi = shipped("mi300x-1x8");
  // 28 mesh links (8 choose 2) of 448e9 / 7 = 64e9 each.
  const auto mesh =
      std::count_if(mi.links().begin(), mi.links().end(), [](const LinkInfo& l) { return l.kind == LinkKind::mesh; });
  EXPECT_EQ(mesh, 28);
  EXPECT_DOUBLE_EQ(mi.intra_link_bw_Bps(), 64e9);
  const Cluster acc = shipped("acc300-1x8-pcie");
  PathOracle paths(acc);
  // Cards 3 and 4 sit on different switches: card, switch, host, switch, card.
  EXPECT_EQ(paths.route(3, 4).channels.size(), 4u);
  EXPECT_EQ(paths.route(0, 3).channels.size(), 2u);
}

TEST(TopologyCluster, NodeNamesNameTheDevices) {
  auto cfg = parse_cluster_config(R"({"name": "x", "device": "L40S", "nodes": 2, "devices_per_node": 2,
    "node_names": ["gpu-a", "gpu-b"], "host": {"pcie_switches": 1}, "intra_node": {"fabric": "pcie"},
    "nics": {"per_node": 1, "bw_Bps": 25e9}, "inter_node": {"fabric": "fat-tree"}})",
                                  "inline");
  const Cluster cl(cfg, catalog());
  EXPECT_EQ(cl.device_name(3), "gpu-b.d1");
  EXPECT_EQ(cl.find_device("gpu-a.d1"), DeviceId{1});
}

TEST(TopologyCluster, ConfigRoundTripsThroughJson) {
  const auto cfg = load_cluster_config(testing::kDataDir / "clusters" / "h200-64x8.json");
  nlohmann::json j = cfg;
  const auto back = cluster_config_from_json(j, "round-trip");
  EXPECT_EQ(back.nodes, 64);
  EXPECT_EQ(back.inter_node.fabric, InterFabric::rail_optimized);
  EXPECT_EQ(back.inter_node.nodes_per_leaf, 32);
  EXPECT_EQ(back.nics.devices, cfg.nics.devices);
  EXPECT_EQ(nlohmann::json(back), j);
}

TEST(TopologyCluster, EveryShippedClusterBuilds) {
  for (const auto& entry : std::filesystem::directory_iterator(testing::kDataDir / "clusters")) {
    SCOPED_TRACE(entry.path().string());
    const Cluster cl = Cluster::load(entry.path(), catalog());
    EXPECT_GT(cl.num_devices(), 0u);
    EXPECT_FALSE(cl.config().description.empty());
  }
}

}  // namespace
}  // namespace dayzero::topology
