// Concurrent collectives share the links their routes cross. Hand arithmetic uses the
// constants listed at the top of test_collectives.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "topology/collective_model.h"

namespace dayzero::topology {
namespace {

using testing::inline_cluster;
using testing::shipped;

constexpr double GiB = 1073741824.0;
constexpr double MiB = 1048576.0;

void expect_close(double got, double want) { EXPECT_NEAR(got, want, std::abs(want) * 1e-9) << "want " << want; }

TEST(TopologySharing, TwoTensorParallelGroupsInOneNodeDoNotSlowEachOther) {
  const Cluster cl = shipped("h100x8");
  CollectiveModel m(cl);
  const std::vector<DeviceId> a = {0, 1, 2, 3}, b = {4, 5, 6, 7};
  // Alone: ring over 4 on NVSwitch, each port carries 2*3/4 S = 1.5 * 256 MiB =
  // 402,653,184 B at 450e9 = 0.894785 ms; latency 8.4 + 6 x (0.5 + 2.9) = 28.8 us.
  const double want = 1.5 * 256 * MiB / 450e9 + 28.8e-6;
  expect_close(m.cost(Collective::all_reduce, a, 256 * MiB).time_s, want);
  // Together: the groups use disjoint NVSwitch ports, so neither slows down.
  const CollectiveCall calls[] = {{Collective::all_reduce, a, 256 * MiB}, {Collective::all_reduce, b, 256 * MiB}};
  const auto both = m.cost_concurrent(calls);
  ASSERT_EQ(both.size(), 2u);
  expect_close(both[0].time_s, want);
  expect_close(both[1].time_s, want);
}

// 2 nodes x 8 GPUs, 4 NICs per node: NIC k serves GPUs 2k and 2k+1.
const char* kSharedNics = R"({
  "name": "2x8-shared-nics", "device": "H100-SXM", "nodes": 2, "devices_per_node": 8,
  "intra_node": {"fabric": "nvswitch"},
  "nics": {"per_node": 4, "bw_Bps": 50e9}, "inter_node": {"fabric": "fat-tree"}})";

TEST(TopologySharing, TwoExpertParallelGroupsBehindTheSameNicsSlowEachOther) {
  const Cluster cl = inline_cluster(kSharedNics);
  CollectiveModel m(cl);
  const std::vector<DeviceId> a = {cl.device(0, 0), cl.device(1, 0)};  // behind NIC 0 of each node
  const std::vector<DeviceId> b = {cl.device(0, 1), cl.device(1, 1)};  // behind NIC 0 as well
  const std::vector<DeviceId> c = {cl.device(0, 2), cl.device(1, 2)};  // behind NIC 1
  // Alone: each rank sends S/2 to its peer in the other node through NIC 0:
  // 536,870,912 B at 50e9 = 10.737 ms; latency 8.4 + 2.7 (route) + 2.9 = 14.0 us.
  const double alone = 0.5 * GiB / 50e9 + 14.0e-6;
  expect_close(m.cost(Collective::all_to_all, a, GiB).time_s, alone);
  // A and B together: NIC 0 carries S/2 of each = S = 1,073,741,824 B at 50e9 = 21.475 ms.
  const CollectiveCall ab[] = {{Collective::all_to_all, a, GiB}, {Collective::all_to_all, b, GiB}};
  const auto shared = m.cost_concurrent(ab);
  expect_close(shared[0].time_s, 1.0 * GiB / 50e9 + 14.0e-6);
  expect_close(shared[1].time_s, 1.0 * GiB / 50e9 + 14.0e-6);
  // A and C together: different NICs, no slow-down.
  const CollectiveCall ac[] = {{Collective::all_to_all, a, GiB}, {Collective::all_to_all, c, GiB}};
  const auto apart = m.cost_concurrent(ac);
  expect_close(apart[0].time_s, alone);
  expect_close(apart[1].time_s, alone);
}

TEST(TopologySharing, OversubscribedLeafUplinksLimitCrossLeafTraffic) {
  const Cluster cl = inline_cluster(R"({
    "name": "2x8-oversubscribed", "device": "H100-SXM", "nodes": 2, "devices_per_node": 8,
    "intra_node": {"fabric": "nvswitch"}, "nics": {"per_node": 8, "bw_Bps": 50e9},
    "inter_node": {"fabric": "fat-tree", "nodes_per_leaf": 1, "oversubscription": 2}})");
  CollectiveModel m(cl);
  // Each node has its own leaf; leaf -> spine = 8 x 50e9 / 2 = 200e9 B/s. All-to-all over
  // 16 ranks: each node sends 8 ranks x 8 remote peers x S/16 = 4 S up its leaf:
  // 4 * 2^30 / 200e9 = 21.475 ms (the NICs alone would allow S/2 / 50e9 = 10.7 ms).
  // Route: 1.0 + 0.35 x 4 + 1.0 = 3.4 us; latency 8.4 + 3.4 + 2.9 = 14.7 us.
  const auto r = m.cost(Collective::all_to_all, cl.all_devices(), GiB);
  expect_close(r.time_s, 4.0 * GiB / 200e9 + 14.7e-6);
}

}  // namespace
}  // namespace dayzero::topology
