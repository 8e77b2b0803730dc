// Collective costs against hand-computed figures. Constants used below:
//   NVLink link latency 0.25 us (a GPU->NVSwitch->GPU route: 0.5 us); device<->NIC
//   1.0 us; NIC<->leaf 0.35 us; launch latency Simple 8.4 us, LL 3.6 us; Simple
//   per-step overhead 2.9 us; LL gets 1/4 of the bandwidth (topology/collective.h).
//   Across a network, NCCL's tuning model (tuning.cc): launch ring LL 6.6 us, tree LL
//   6.8, Simple 8.4; a tree level across nodes LL 5.0 us, Simple 14; a ring hop across
//   nodes LL at the route's latency, Simple 14 us; a ring's hops inside a node at least
//   1 us (LL) or 3 us (Simple).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "helpers.h"
#include "topology/collective_model.h"
#include "topology/paths.h"

namespace dayzero::topology {
namespace {

using testing::inline_cluster;
using testing::shipped;

constexpr double GiB = 1073741824.0;  // 2^30
constexpr double MiB = 1048576.0;

// Relative tolerance for figures computed by hand in doubles.
void expect_close(double got, double want) { EXPECT_NEAR(got, want, std::abs(want) * 1e-9) << "want " << want; }

TEST(TopologyCollectives, RingAllReduceOneGiBOverEightNvlinkDevices) {
  const Cluster cl = shipped("h100x8");
  CollectiveModel m(cl);
  const auto group = cl.node_devices(0);
  const auto r = m.cost(Collective::all_reduce, group, GiB);
  // Ring, Simple: every device sends 2(n-1)/n . S = 2*7/8 * 2^30 = 1,879,048,192 bytes
  // through its own NVLink port at 450e9 B/s: 1,879,048,192 / 450e9 = 4.175662649 ms.
  // Latency: 8.4 us + 2(n-1) = 14 steps x (0.5 us route + 2.9 us) = 8.4 + 47.6 = 56.0 us.
  const double want = 1879048192.0 / 450e9 + 56.0e-6;  // 4.231662649 ms
  expect_close(r.time_s, want);
  EXPECT_EQ(r.algorithm, Algorithm::ring);
  EXPECT_EQ(r.protocol, Protocol::simple);
  expect_close(r.algbw_Bps, GiB / want);                // 253.74 GB/s
  expect_close(r.busbw_Bps, GiB / want * 2.0 * 7 / 8);  // 444.04 GB/s, under the 450 GB/s port
  EXPECT_LT(r.busbw_Bps, 450e9);
}

TEST(TopologyCollectives, SmallAllReduceIsLatencyBoundAndUsesLL) {
  const Cluster cl = shipped("h100x8");
  CollectiveModel m(cl);
  const auto group = cl.node_devices(0);
  const auto r = m.cost(Collective::all_reduce, group, 1024);
  // Ring, LL: 3.6 us launch + 14 steps x 0.5 us = 10.6 us; bytes: 2*7/8 * 1024 through
  // each port at 450e9 / 4 (LL) = 0.016 us. Simple would pay 8.4 + 14 x 3.4 = 56 us.
  // (Inside one node NCCL's tree is a chain: the same 14 steps and 2 S per port, so
  // the ring wins.)
  expect_close(r.time_s, 3.6e-6 + 14 * 0.5e-6 + 2.0 * 7 / 8 * 1024 / (450e9 * 0.25));
  EXPECT_EQ(r.algorithm, Algorithm::ring);
  EXPECT_EQ(r.protocol, Protocol::ll);
}

TEST(TopologyCollectives, SmallAllReduceOverManyNodesUsesTheTree) {
  const Cluster cl = shipped("h200-64x8");
  CollectiveModel m(cl);
  const auto r = m.cost(Collective::all_reduce, cl.all_devices(), 1024);
  // 512 ranks in 64 nodes of 8. Tree: 2 x (7 chain steps + floor(log2 64) = 6 levels):
  // the 14 chain steps over NVLink at 0.5 us, the 12 levels across the network at NCCL's
  // 5.0 us. LL: 6.8 + 14 x 0.5 + 12 x 5.0 = 73.8 us. (Ring: 1022 steps; hierarchical:
  // Simple only across a network.) Bytes: a node's chain head has its chain neighbour
  // plus up to 3 tree neighbours (parent, 2 children), each 1/2 S both ways: its NIC
  // carries 3/2 S at 50e9 / 4 (LL).
  EXPECT_EQ(r.algorithm, Algorithm::tree);
  EXPECT_EQ(r.protocol, Protocol::ll);
  expect_close(r.latency_s, 73.8e-6);
  expect_close(r.time_s, 73.8e-6 + 1.5 * 1024 / (50e9 * 0.25));
}

TEST(TopologyCollectives, SmallAllReduceOverTwoNodesUsesNcclsTree) {
  const Cluster cl = inline_cluster(R"({
    "name": "2x8-fat-tree", "device": "H100-SXM", "nodes": 2, "devices_per_node": 8,
    "intra_node": {"fabric": "nvswitch"},
    "nics": {"per_node": 8, "bw_Bps": 50e9}, "inter_node": {"fabric": "fat-tree"}})");
  CollectiveModel m(cl);
  const auto r = m.cost(Collective::all_reduce, cl.all_devices(), 1024);
  // Tree, LL: 6.8 + 2 x 7 chain steps x 0.5 + 2 x 1 level x 5.0 = 23.8 us (NCCL's own
  // model: 6.8 + 2 x (7 x 0.6 + 5.0) = 25.2 us), vs ring 6.6 + 28 x max(0.5, 1.0) +
  // 2 x 2.7 = 40.0 us; hierarchical runs Simple only across a network (8.4 +
  // 14 x 3.4 + 2 x 14 = 84.0 us). Bytes at LL (1/4): the two trees cross between the
  // nodes from different devices, 1/2 S each way through one NIC at 50e9; a chain's
  // middle device moves 2 S through its NVLink port at 450e9.
  EXPECT_EQ(r.algorithm, Algorithm::tree);
  EXPECT_EQ(r.protocol, Protocol::ll);
  expect_close(r.time_s, 23.8e-6 + 1024 * 4 * std::max(0.5 / 50e9, 2.0 / 450e9));
  // Inside one node nothing changes: the engines' kernels and NCCL's NVLink figures.
  expect_close(m.cost(Collective::all_reduce, cl.node_devices(0), 1024).time_s,
               3.6e-6 + 14 * 0.5e-6 + 2.0 * 7 / 8 * 1024 / (450e9 * 0.25));
}

const char* kTwoNodesFatTree = R"({
  "name": "2x8-fat-tree", "device": "H100-SXM", "nodes": 2, "devices_per_node": 8,
  "host": {"pcie_switches": 4}, "intra_node": {"fabric": "nvswitch"},
  "nics": {"per_node": 8, "bw_Bps": 50e9}, "inter_node": {"fabric": "fat-tree"}})";

TEST(TopologyCollectives, AllToAllAcrossTwoNodesIsLimitedByTheNics) {
  const Cluster cl = inline_cluster(kTwoNodesFatTree);
  CollectiveModel m(cl);
  const auto group = cl.all_devices();
  const auto r = m.cost(Collective::all_to_all, group, GiB);
  // Each of 16 ranks sends S/16 to each peer; 8 peers are in the other node and all of
  // that leaves through the rank's own NIC (route dev -> NIC -> leaf -> NIC -> dev:
  // 1.0 + 0.35 + 0.35 + 1.0 = 2.7 us; the PXN detour over NVLink is 3.2 us).
  // NIC egress: 8 * S/16 = S/2 = 536,870,912 B at 50e9 B/s = 10.737418 ms. NVLink carries
  // only 7 * S/16 at 450e9 (1.04 ms); PCIe to the NIC S/2 at 64e9 (8.39 ms).
  // Latency (Simple, one step): 8.4 + 2.7 + 2.9 = 14.0 us.
  const double want = 536870912.0 / 50e9 + 14.0e-6;
  expect_close(r.time_s, want);
  expect_close(r.busbw_Bps, GiB / want * 15.0 / 16.0);  // 93.6 GB/s: 2 x NIC rate x 15/16
  // The same volume inside one node moves over NVLink: 7/8 S at 450e9 = 2.09 ms.
  const auto one_node = m.cost(Collective::all_to_all, cl.node_devices(0), GiB);
  expect_close(one_node.time_s, 7.0 / 8 * GiB / 450e9 + (8.4e-6 + 0.5e-6 + 2.9e-6));
}

TEST(TopologyCollectives, SendRecvAcrossNodesUsesTheNicRateAndRouteLatency) {
  const Cluster cl = inline_cluster(kTwoNodesFatTree);
  PathOracle paths(cl);
  const Route rt = paths.route(cl.device(0, 3), cl.device(1, 3));
  EXPECT_NEAR(rt.latency_s, 2.7e-6, 1e-15);  // 1.0 + 0.35 + 0.35 + 1.0 us
  EXPECT_EQ(rt.channels.size(), 4u);
  EXPECT_DOUBLE_EQ(rt.bottleneck_bw_Bps, 50e9);
  CollectiveModel m(cl);
  const DeviceId pair[] = {cl.device(0, 3), cl.device(1, 3)};
  const auto r = m.cost(Collective::send_recv, pair, 64 * MiB);
  // 64 MiB = 67,108,864 B / 50e9 = 1.34217728 ms + (8.4 + 2.7 + 2.9) us.
  expect_close(r.time_s, 67108864.0 / 50e9 + 14.0e-6);
  expect_close(r.busbw_Bps, r.algbw_Bps);  // bus factor 1
}

TEST(TopologyCollectives, RingsOverTwoNodesUseEveryNic) {
  const Cluster cl = inline_cluster(kTwoNodesFatTree);
  CollectiveModel m(cl);
  const auto r = m.cost(Collective::all_reduce, cl.all_devices(), GiB, Algorithm::ring);
  // 8 rings rotated per node: ring k leaves each node from a different device, so each
  // NIC carries one ring's crossing: 2*15/16 * S/8 = 251,658,240 B at 50e9 = 5.033 ms,
  // while each NVLink port carries 2*15/16 S minus the crossing (7 of 8 rings) =
  // 1,761,607,680 B at 450e9 = 3.91 ms. Latency (NCCL's, Simple): 8.4 + 28 hops inside
  // a node x max(0.5 + 2.9, 3 x 1.0) + 2 across x 14 = 131.6 us.
  expect_close(r.time_s, 2.0 * 15 / 16 * GiB / 8 / 50e9 + 8.4e-6 + 28 * 3.4e-6 + 2 * 14e-6);
  expect_close(r.busbw_Bps, r.algbw_Bps * 2.0 * 15 / 16);
}

TEST(TopologyCollectives, OneNicPerNodeFavoursTreeThenHierarchicalOverRing) {
  const Cluster cl = inline_cluster(R"({
    "name": "2x8-one-nic", "device": "H100-SXM", "nodes": 2, "devices_per_node": 8,
    "intra_node": {"fabric": "nvswitch"},
    "nics": {"per_node": 1, "bw_Bps": 50e9, "pcie_bw_Bps": 64e9}, "inter_node": {"fabric": "fat-tree"}})");
  CollectiveModel m(cl);
  const auto group = cl.all_devices();
  const auto ring = m.cost(Collective::all_reduce, group, GiB, Algorithm::ring);
  const auto hier = m.cost(Collective::all_reduce, group, GiB, Algorithm::hierarchical);
  const auto tree = m.cost(Collective::all_reduce, group, GiB, Algorithm::tree);
  const auto best = m.cost(Collective::all_reduce, group, GiB);
  // Flat ring: all 8 rotated rings cross the one NIC: 2*15/16 S = 2,013,265,920 B at 50e9
  // = 40.27 ms. Hierarchical: reduce-scatter inside (7/8 S at 450e9 = 2.088 ms), 8 rings
  // of 2 nodes over S/8 each, all through the NIC (8 * 2*(1/2) * S/8 = S at 50e9 =
  // 21.47 ms), all-gather inside (2.088 ms). Latency: 8.4 + 7 x (0.5 + 2.9) +
  // 2 x 14 (across, NCCL's Simple network step) + 7 x (0.5 + 2.9) = 84.0 us.
  const double want_hier = 2 * (7.0 / 8 * GiB / 450e9) + GiB / 50e9 + 8.4e-6 + 14 * 3.4e-6 + 2 * 14e-6;
  expect_close(hier.time_s, want_hier);
  EXPECT_GT(ring.time_s, 2.0 * 15 / 16 * GiB / 50e9);
  EXPECT_LT(hier.time_s, ring.time_s);
  // Tree: the two trees cross between the nodes once each (n0.d0-n1.d0 and n0.d7-n1.d7),
  // 1/2 S each way, both through the one NIC: S at 50e9 = 21.47 ms, while the chains
  // inside the nodes (2 S per NVLink port, 4.77 ms) run pipelined with it, not before
  // it. Latency: 8.4 + 14 chain steps x (0.5 + 2.9) + 2 levels x 14 = 84.0 us.
  const double want_tree = GiB / 50e9 + 8.4e-6 + 14 * 3.4e-6 + 2 * 14e-6;
  expect_close(tree.time_s, want_tree);
  EXPECT_EQ(best.algorithm, Algorithm::tree);
  expect_close(best.time_s, want_tree);
}

TEST(TopologyCollectives, MeshUsesStridedRingsOverSeveralLinks) {
  const Cluster cl = shipped("mi300x-1x8");
  CollectiveModel m(cl);
  const auto r = m.cost(Collective::all_reduce, cl.node_devices(0), GiB);
  // One ring would use one 64 GB/s link per GPU. Rings of stride 1, 3, 5, 7 (coprime to
  // 8) use 4 different links out of each GPU, each carrying 1/4 of 2*7/8 S:
  // 469,762,048 B at 64e9 = 7.340 ms. Route latency is one mesh link: 0.5 us.
  // Latency: 8.4 + 14 x (0.5 + 2.9) = 56 us. busbw ~ 4 x 64 = 256 GB/s.
  const double want = 2.0 * 7 / 8 * GiB / 4 / 64e9 + 56.0e-6;
  expect_close(r.time_s, want);
  EXPECT_GT(r.busbw_Bps, 250e9);
}

TEST(TopologyCollectives, PcieBoxRingCrossesEachSwitchUplinkOncePerDirection) {
  const Cluster cl = shipped("acc300-1x8-pcie");
  CollectiveModel m(cl);
  const auto r = m.cost(Collective::all_gather, cl.node_devices(0), GiB);
  // Cards 0-3 on switch 0, 4-7 on switch 1. The ring 0..7 crosses the host once each
  // way (3 -> 4 and 7 -> 0), so every link carries one flow of (n-1)/n S =
  // 939,524,096 B at 64e9 = 14.68 ms. Routes inside a switch: 2 x 0.5 = 1.0 us; across:
  // 4 x 0.5 = 2.0 us (the slowest sets each step). Latency: 8.4 + 7 x (2.0 + 2.9) = 42.7 us.
  const double want = 7.0 / 8 * GiB / 64e9 + 8.4e-6 + 7 * (2.0e-6 + 2.9e-6);
  expect_close(r.time_s, want);
  EXPECT_EQ(r.algorithm, Algorithm::ring);
}

TEST(TopologyCollectives, Nvl72StaysOnNvlinkAcrossTrays) {
  const Cluster cl = shipped("gb200-nvl72");
  PathOracle paths(cl);
  const Route rt = paths.route(cl.device(0, 0), cl.device(17, 3));
  EXPECT_EQ(rt.channels.size(), 2u);  // GPU -> NVLink switch -> GPU
  EXPECT_DOUBLE_EQ(rt.bottleneck_bw_Bps, 900e9);
  CollectiveModel m(cl);
  const auto all = cl.all_devices();
  const auto ring = m.cost(Collective::all_reduce, all, GiB, Algorithm::ring);
  const auto tree = m.cost(Collective::all_reduce, all, GiB, Algorithm::tree);
  const auto best = m.cost(Collective::all_reduce, all, GiB);
  // Flat ring over 72 ranks: 2*71/72 S = 2,117,418,780 B per port at 900e9 = 2.3527 ms,
  // plus 142 steps of (0.5 + 2.9) us = 482.8 us, plus 8.4 us.
  expect_close(ring.time_s, 2.0 * 71 / 72 * GiB / 900e9 + 8.4e-6 + 142 * 3.4e-6);
  // Tree: 2 x (3 + floor(log2 18) = 4) = 14 steps; a tray's chain head has 1 chain
  // neighbour and up to 3 tree neighbours, 1/2 S each way per tree edge: 5/2 S per port.
  expect_close(tree.time_s, 2.5 * GiB / 900e9 + 8.4e-6 + 14 * 3.4e-6);
  // Hierarchical over 18 trays of 4 moves the same bytes per port as the ring on a
  // non-blocking switch (3/4 + 2*17/18/4 + 3/4 = 2*71/72 of S) in 3 + 34 + 3 = 40 steps.
  EXPECT_EQ(best.algorithm, Algorithm::hierarchical);
  expect_close(best.time_s, 2.0 * 71 / 72 * GiB / 900e9 + 8.4e-6 + 40 * 3.4e-6);
}

TEST(TopologyCollectives, CachedShapesGiveIdenticalAnswers) {
  const Cluster cl = shipped("h200-2x8");
  CollectiveModel m(cl);
  std::vector<DeviceId> g = {cl.device(1, 2), cl.device(0, 5), cl.device(0, 1)};
  const auto first = m.cost(Collective::all_gather, g, 8 * MiB);
  std::vector<DeviceId> reordered = {g[2], g[0], g[1]};
  const auto again = m.cost(Collective::all_gather, reordered, 8 * MiB);
  EXPECT_EQ(m.cache_misses(), 1u);
  EXPECT_EQ(m.cache_hits(), 1u);
  EXPECT_DOUBLE_EQ(first.time_s, again.time_s);
  const auto one = m.cost(Collective::all_reduce, std::vector<DeviceId>{3}, GiB);
  EXPECT_EQ(one.time_s, 0.0);  // nothing leaves a one-device group
}

TEST(TopologyCollectives, AllToAllvWithUnevenPairs) {
  const Cluster cl = inline_cluster(kTwoNodesFatTree);
  CollectiveModel m(cl);
  const std::vector<DeviceId> g = {cl.device(0, 0), cl.device(0, 1), cl.device(1, 0)};
  // Rank 0 sends 100 MB to rank 2 (other node) and 10 MB to rank 1; the rest send 0.
  // Bottleneck: n0.d0's NIC egress, 100e6 B at 50e9 = 2.0 ms; plus 8.4 + 2.7 + 2.9 us.
  const std::vector<double> bytes = {0, 10e6, 100e6, 0, 0, 0, 0, 0, 0};
  const auto r = m.all_to_allv(g, bytes);
  expect_close(r.time_s, 100e6 / 50e9 + 14.0e-6);
  EXPECT_DOUBLE_EQ(r.size_bytes, 110e6);
}

}  // namespace
}  // namespace dayzero::topology
