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

}  // namespace
}  // namespace dayzero::simulate
