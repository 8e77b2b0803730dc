// The collective model's caches give the answers it computes without them: groups
// keyed by their spacing, prepared groups, and routed tables shared between threads.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/error.h"
#include "helpers.h"
#include "topology/collective_model.h"
#include "topology/paths.h"

namespace dayzero::topology {
namespace {

using testing::shipped;

constexpr double MiB = 1048576.0;
const Collective kCollectives[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                   Collective::all_to_all};
const double kSizes[] = {0.0, 1024.0, 8 * MiB, 1e9};

// Every other device of two nodes (spaced by 2), and the same devices out of order.
std::vector<DeviceId> spaced() { return {0, 2, 4, 6, 8, 10, 12, 14}; }
std::vector<DeviceId> shuffled() { return {6, 0, 14, 2, 10, 4, 12, 8}; }

TEST(TopologyCollectiveCache, ASpacedGroupCostsWhatItsDevicesInAnyOrderCost) {
  const Cluster cl = shipped("h200-2x8");
  for (Collective c : kCollectives) {
    CollectiveModel spaced_model(cl), listed_model(cl);
    for (double size : kSizes) {
      const auto a = spaced_model.cost(c, spaced(), size);
      const auto b = listed_model.cost(c, shuffled(), size);
      EXPECT_EQ(a.time_s, b.time_s) << collective_name(c) << " " << size;
      EXPECT_EQ(a.algorithm, b.algorithm);
      EXPECT_EQ(a.protocol, b.protocol);
    }
    // Keyed by its spacing, the group is one entry however it is listed.
    spaced_model.cost(c, shuffled(), 1.0);
    EXPECT_EQ(spaced_model.cache_entries(), 1u) << collective_name(c);
  }
}

TEST(TopologyCollectiveCache, ASpacedGroupPastTheLastDeviceNamesIt) {
  const Cluster cl = shipped("h200-2x8");
  CollectiveModel m(cl);
  const std::vector<DeviceId> past = {8, 12, 16};  // 16 devices: 16 does not exist
  try {
    m.cost(Collective::all_reduce, past, 1e6);
    FAIL() << "no error";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("field 'group' = 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m.prepare(Collective::all_reduce, past), core::InputError);
}

TEST(TopologyCollectiveCache, APreparedGroupCostsWhatTheGroupCosts) {
  const Cluster cl = shipped("h200-2x8");
  CollectiveModel m(cl);
  const std::vector<DeviceId> nodes = {0, 1, 8, 9};
  for (Collective c : kCollectives) {
    const auto group = m.prepare(c, nodes);
    for (double size : kSizes) {
      const auto want = m.cost(c, nodes, size);
      const auto got = m.cost(group, size);
      EXPECT_EQ(got.time_s, want.time_s) << collective_name(c) << " " << size;
      EXPECT_EQ(m.time_s(group, size), want.time_s);
      EXPECT_EQ(got.latency_s, want.latency_s);
      EXPECT_EQ(got.busbw_Bps, want.busbw_Bps);
      EXPECT_EQ(got.ranks, 4u);
    }
  }
  const auto lone = m.prepare(Collective::all_reduce, std::vector<DeviceId>{5});
  EXPECT_EQ(m.cost(lone, 1e9).time_s, 0.0);  // nothing leaves one device
  EXPECT_EQ(m.cost(CollectiveModel::Group{}, 1e9).time_s, 0.0);
  EXPECT_EQ(m.time_s(lone, 1e9), 0.0);
  EXPECT_THROW(m.cost(m.prepare(Collective::all_reduce, nodes), -1.0), core::InputError);
  EXPECT_THROW(m.time_s(m.prepare(Collective::all_reduce, nodes), std::nan("")), core::InputError);
  EXPECT_THROW(m.time_s(m.prepare(Collective::all_reduce, nodes), HUGE_VAL), core::InputError);
}

TEST(TopologyCollectiveCache, SharedTablesRouteEachGroupOnce) {
  const Cluster cl = shipped("h200-2x8");
  auto shared = std::make_shared<SharedCollectiveTables>(cl);
  CollectiveModel first(cl, {}, shared), second(cl, {}, shared), alone(cl);
  const std::vector<DeviceId> nodes = {0, 1, 8, 9};
  for (double size : kSizes) first.cost(Collective::all_to_all, nodes, size);
  EXPECT_EQ(shared->size(), 1u);
  EXPECT_GT(first.paths_computed(), 0u);
  for (double size : kSizes)
    EXPECT_EQ(second.cost(Collective::all_to_all, nodes, size).time_s,
              alone.cost(Collective::all_to_all, nodes, size).time_s);
  EXPECT_EQ(second.paths_computed(), 0u);  // routed by `first`
  EXPECT_EQ(shared->size(), 1u);
}

TEST(TopologyCollectiveCache, SharedTablesShareTheShortestPathTrees) {
  const Cluster cl = shipped("h200-2x8");
  auto shared = std::make_shared<SharedCollectiveTables>(cl);
  CollectiveModel first(cl, {}, shared), second(cl, {}, shared), alone(cl);
  const std::vector<DeviceId> nodes = {0, 1, 8, 9};
  first.cost(Collective::all_to_all, nodes, 1e6);
  // Another group over the same sources: routed by `second`, over `first`'s trees.
  EXPECT_EQ(second.cost(Collective::all_reduce, nodes, 1e6).time_s,
            alone.cost(Collective::all_reduce, nodes, 1e6).time_s);
  EXPECT_EQ(shared->size(), 2u);
  EXPECT_EQ(second.paths_computed(), 0u);
}

TEST(TopologyCollectiveCache, SharedPathTreesGiveTheLoneRoutes) {
  const Cluster cl = shipped("h200-4x8");
  auto trees = std::make_shared<SharedPathTrees>(cl);
  PathOracle first(cl, kDefaultPathCacheBytes, trees), second(cl, kDefaultPathCacheBytes, trees), alone(cl);
  for (DeviceId src : {0u, 9u, 31u}) first.route(src, 17);
  EXPECT_EQ(trees->size(), 3u);
  for (DeviceId src : {0u, 9u, 31u})
    for (DeviceId dst : {1u, 8u, 17u, 30u}) {
      const Route a = second.route(src, dst), b = alone.route(src, dst);
      EXPECT_EQ(a.channels, b.channels) << src << " -> " << dst;
      EXPECT_EQ(a.latency_s, b.latency_s);
    }
  EXPECT_EQ(second.trees_built(), 0u);
  EXPECT_EQ(first.trees_built(), 3u);
  const Cluster other = shipped("h200-4x8");
  EXPECT_THROW(PathOracle(other, kDefaultPathCacheBytes, trees), std::invalid_argument);
}

TEST(TopologyCollectiveCache, SharedTablesKeepEachModelsParameters) {
  const Cluster cl = shipped("h200-2x8");
  auto shared = std::make_shared<SharedCollectiveTables>(cl);
  CostParams slower;
  slower.launch_latency_ll_s += 1e-6;
  slower.launch_latency_simple_s += 1e-6;
  slower.net_launch_latency_ring_ll_s += 1e-6;  // the group spans two nodes
  slower.net_launch_latency_tree_ll_s += 1e-6;
  slower.net_launch_latency_simple_s += 1e-6;
  CollectiveModel base(cl, {}, shared), slow(cl, slower, shared);
  const std::vector<DeviceId> nodes = {0, 1, 8, 9};
  for (double size : kSizes) {
    const auto a = base.cost(Collective::all_reduce, nodes, size);
    const auto b = slow.cost(Collective::all_reduce, nodes, size);
    // Every candidate starts 1 us later, so the same one wins, 1 us later.
    EXPECT_NEAR(b.time_s - a.time_s, 1e-6, 1e-15) << size;
    EXPECT_EQ(a.algorithm, b.algorithm);
  }
}

TEST(TopologyCollectiveCache, SharedTablesFromThreadsGiveTheLoneAnswers) {
  const Cluster cl = shipped("h200-64x8");
  auto shared = std::make_shared<SharedCollectiveTables>(cl);
  // Groups of 8 to 64 devices at several places and spacings.
  std::vector<std::vector<DeviceId>> groups;
  for (DeviceId step : {1u, 4u, 8u})
    for (DeviceId first : {0u, 64u, 256u}) {
      std::vector<DeviceId> g;
      for (DeviceId i = 0; i < 16; ++i) g.push_back(first + i * step);
      groups.push_back(g);
    }
  std::vector<double> lone;
  CollectiveModel alone(cl);
  for (const auto& g : groups) lone.push_back(alone.cost(Collective::all_to_all, g, 8 * MiB).time_s);
  std::vector<std::vector<double>> got(2);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      CollectiveModel m(cl, {}, shared);
      for (const auto& g : groups) got[t].push_back(m.cost(Collective::all_to_all, g, 8 * MiB).time_s);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(got[0], lone);
  EXPECT_EQ(got[1], lone);
  EXPECT_EQ(shared->size(), groups.size());
}

TEST(TopologyCollectiveCache, SharedTablesBelongToOneCluster) {
  const Cluster a = shipped("h200-2x8"), b = shipped("h200-2x8");
  auto shared = std::make_shared<SharedCollectiveTables>(a);
  EXPECT_THROW(CollectiveModel(b, {}, shared), std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::topology
