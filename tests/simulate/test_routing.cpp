// Expert popularity and the busiest EP rank, against hand arithmetic.
#include <gtest/gtest.h>

#include <cmath>

#include "plan/plan.h"
#include "simulate/routing.h"

namespace dayzero::simulate {
namespace {

TEST(Routing, UniformSplitsEvenly) {
  plan::Workload w;  // s = 0
  const Routing r(256, w);
  EXPECT_NEAR(r.busiest_rank_share(16), 1.0 / 16, 1e-12);
  // 128 assignments: each of a rank's 16 experts touched with 1 - (255/256)^128.
  const auto load = r.busiest_rank_load(16, 128, 64, -1);
  EXPECT_NEAR(load.assignments, 8, 1e-9);
  EXPECT_NEAR(load.experts_touched, 16 * (1 - std::pow(255.0 / 256.0, 128)), 1e-9);
  EXPECT_EQ(load.cold_touched, 0);
  // Fewer than a tile per expert: every touched expert pads to 64 rows.
  EXPECT_NEAR(load.padded_rows, 64 * load.experts_touched, 1e-9);
}

TEST(Routing, ZipfSkewLoadsTheBusiestRank) {
  plan::Workload w;
  w.routing_zipf_s = 1.0;
  const Routing r(256, w);
  // Harmonic weights 1/k: the hottest expert alone has 1/H_256 = 1/6.1243 = 16.3 %.
  double h = 0;
  for (int k = 1; k <= 256; ++k) h += 1.0 / k;
  double hottest = 0;
  for (double p : r.popularity()) hottest = std::max(hottest, p);
  EXPECT_NEAR(hottest, 1 / h, 1e-12);
  EXPECT_GT(r.busiest_rank_share(16), 1 / h);
  EXPECT_GT(r.busiest_rank_share(16), 1.0 / 16);
  // Same seed, same placement; another seed, another.
  plan::Workload w2 = w;
  EXPECT_EQ(Routing(256, w2).popularity(), r.popularity());
  w2.routing_seed = 5;
  EXPECT_NE(Routing(256, w2).popularity(), r.popularity());
}

TEST(Routing, MeasuredCountsTakePrecedence) {
  plan::Workload w;
  w.routing_zipf_s = 2;
  w.expert_counts = {6, 2, 1, 1};  // rank 0 holds experts 0,1 (80 %), rank 1 experts 2,3
  const Routing r(4, w);
  EXPECT_NEAR(r.busiest_rank_share(2), 0.8, 1e-12);
  // Resident = the 2 hottest (experts 0 and 1): rank 1's are both cold.
  EXPECT_TRUE(r.is_resident(0, 2));
  EXPECT_TRUE(r.is_resident(1, 2));
  EXPECT_FALSE(r.is_resident(2, 2));
  const auto load = r.busiest_rank_load(2, 10, 64, 2);
  EXPECT_NEAR(load.assignments, 8, 1e-12);
  EXPECT_EQ(load.cold_touched, 0);  // the busiest rank is the hot one
}

// Balanced placement with redundant replicas, by hand: popularity 0.4, 0.3, 0.2, 0.1
// (measured counts) on 2 EP ranks with 2 redundant slots (3 slots per rank). The
// replicas go to expert 0 (0.4 -> 0.2 each), then expert 1 (0.3 -> 0.15 each):
// replicas 0.2 (e0), 0.2 (e0), 0.2 (e2), 0.15 (e1), 0.15 (e1), 0.1 (e3). Heaviest
// first to the least-loaded rank with a free slot: rank 0 gets e0, rank 1 e0, rank 0
// e2 (0.4), rank 1 e1 (0.35), rank 1 e1 (0.5, full), rank 0 e3 (0.5). Both ranks
// carry 0.5 (the contiguous placement: 0.7); rank 0 (the first of the ties) is the busiest.
TEST(Routing, RedundantExpertsBalanceTheRanks) {
  plan::Workload w;
  w.expert_counts = {4, 3, 2, 1};
  const Routing r(4, w);
  EXPECT_NEAR(r.busiest_rank_share(2), 0.7, 1e-12);
  const auto busiest = r.balanced_placement(2, 2);
  ASSERT_EQ(busiest.size(), 3u);
  EXPECT_EQ(busiest[0].first, 0);
  EXPECT_NEAR(busiest[0].second, 0.2, 1e-12);
  EXPECT_EQ(busiest[1].first, 2);
  EXPECT_NEAR(busiest[1].second, 0.2, 1e-12);
  EXPECT_EQ(busiest[2].first, 3);
  EXPECT_NEAR(busiest[2].second, 0.1, 1e-12);
  // 100 assignments: 50 land on the busiest rank (70 without replicas); each replica
  // is touched with 1 - (1 - share)^100.
  const auto load = r.busiest_rank_load(2, 100, 64, -1, 2);
  EXPECT_NEAR(load.assignments, 50, 1e-9);
  EXPECT_NEAR(load.experts_touched, 2 * (1 - std::pow(0.8, 100)) + (1 - std::pow(0.9, 100)), 1e-9);
  EXPECT_LT(load.assignments, r.busiest_rank_load(2, 100, 64, -1).assignments);
}

}  // namespace
}  // namespace dayzero::simulate
