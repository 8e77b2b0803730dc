// Ranking, the Pareto front and the parallel evaluator as pure functions, on
// hand-made lists of evaluated plans whose answers are worked out by hand.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "core/parallel.h"
#include "search/ranking.h"

namespace dayzero::search {
namespace {

// A plan of `tp` x `dp` (pp 1) with the given predicted TPOT, throughput per
// device and TTFT; it fits and meets the SLA unless `meets` is false.
Evaluated plan_with(int tp, int dp, double tpot_s, double thr_per_device, double ttft_s = 0.1, bool meets = true) {
  Evaluated e;
  e.plan.attention = {tp, dp};
  e.plan.moe.dp = tp * dp;
  e.plan.workload.batch = dp;
  e.prediction.fits = true;
  e.prediction.tpot_s = tpot_s;
  e.prediction.ttft_s = ttft_s;
  e.prediction.throughput_tokens_per_s_per_device = thr_per_device;
  e.prediction.throughput_tokens_per_s = thr_per_device * tp * dp;
  e.prediction.decode.time_s = tpot_s;
  e.prediction.decode.by_kind_s[simulate::CostKind::gemm] = 0.75 * tpot_s;
  e.prediction.decode.by_kind_s[simulate::CostKind::attention] = 0.25 * tpot_s;
  e.meets_sla = meets;
  return e;
}

TEST(Ranking, BetterFollowsTheObjective) {
  const Evaluated fast = plan_with(8, 1, 0.010, 100, 0.2), dense = plan_with(1, 8, 0.030, 300, 0.1);
  EXPECT_TRUE(better(dense, fast, Objective::throughput_per_device));
  EXPECT_TRUE(better(fast, dense, Objective::latency));
  // Equal TPOT: the lower TTFT wins under latency.
  EXPECT_TRUE(better(plan_with(8, 1, 0.010, 100, 0.1), fast, Objective::latency));
  // Fewest devices first, then throughput per device.
  EXPECT_TRUE(better(plan_with(2, 1, 0.05, 10), plan_with(4, 1, 0.01, 500), Objective::fewest_devices));
  EXPECT_TRUE(better(plan_with(2, 1, 0.05, 20), plan_with(1, 2, 0.05, 10), Objective::fewest_devices));
}

TEST(Ranking, BestOfEachLayoutAmongPlansMeetingTheSla) {
  std::vector<Evaluated> all = {
      plan_with(1, 8, 0.03, 300),              // 0: best, layout tp1 dp8
      plan_with(1, 8, 0.02, 200),              // 1: same layout (another batch): dropped
      plan_with(2, 4, 0.02, 250),              // 2: second
      plan_with(4, 2, 0.01, 400, 0.1, false),  // 3: misses the SLA: never ranked
      plan_with(8, 1, 0.01, 250),              // 4: ties with 2: enumeration order keeps 2 first
  };
  all[1].plan.workload.batch = 4;
  EXPECT_EQ(rank_plans(all, Objective::throughput_per_device, 10), (std::vector<size_t>{0, 2, 4}));
  EXPECT_EQ(rank_plans(all, Objective::throughput_per_device, 2), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(rank_plans(all, Objective::latency, 10), (std::vector<size_t>{4, 1, 2}));
}

TEST(Ranking, ParetoFrontOfTpotAgainstThroughputPerDevice) {
  // (TPOT ms, tok/s/dev): A (10, 100) and B (20, 150) are the front; C (15, 90)
  // is beaten by A; D (20, 140) by B; E (30, 150) by B (same throughput, slower);
  // F (5, 500) misses the SLA and does not count.
  const std::vector<Evaluated> all = {plan_with(1, 1, 0.015, 90),  plan_with(1, 2, 0.010, 100),
                                      plan_with(1, 4, 0.020, 140), plan_with(2, 1, 0.020, 150),
                                      plan_with(2, 2, 0.030, 150), plan_with(4, 1, 0.005, 500, 0.1, false)};
  EXPECT_EQ(pareto_front(all), (std::vector<size_t>{1, 3}));
  EXPECT_TRUE(pareto_front({}).empty());
}

TEST(Ranking, ReasonsSayWhatDiffersAndWhatBoundsDecode) {
  const std::vector<Evaluated> all = {plan_with(1, 8, 0.03, 300), plan_with(2, 4, 0.02, 240)};
  const auto reasons = ranking_reasons(all, {0, 1}, {0}, Objective::throughput_per_device);
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0], "best throughput_per_device within the SLA; decode bound by gemm 75 %; on the Pareto front");
  EXPECT_EQ(reasons[1], "20 % less throughput/device (tp 2, batch 4); decode bound by gemm 75 %");
}

TEST(Parallel, EveryItemOnceWhateverTheThreads) {
  for (int threads : {1, 2, 3, 8}) {
    std::vector<std::atomic<int>> seen(1000);
    core::parallel_blocks(seen.size(), threads, 7, [&](int, size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) ++seen[i];
    });
    for (const auto& s : seen) ASSERT_EQ(s.load(), 1) << threads << " threads";
  }
}

// A pool's threads serve run after run, each item once, worker w always the same
// thread; a run after one that threw is whole again.
TEST(Parallel, APoolServesRunAfterRun) {
  core::WorkerPool pool(3);
  std::vector<std::thread::id> ids(3);
  for (int run = 0; run < 50; ++run) {
    std::vector<std::atomic<int>> seen(257);
    std::mutex mu;
    pool.run(seen.size(), 5, [&](int w, size_t b, size_t e) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (run == 0 && ids[static_cast<size_t>(w)] == std::thread::id{})
          ids[static_cast<size_t>(w)] = std::this_thread::get_id();
        if (ids[static_cast<size_t>(w)] != std::thread::id{}) {
          EXPECT_EQ(ids[static_cast<size_t>(w)], std::this_thread::get_id());
        }
      }
      for (size_t i = b; i < e; ++i) ++seen[i];
    });
    for (const auto& s : seen) ASSERT_EQ(s.load(), 1) << "run " << run;
  }
  EXPECT_THROW(pool.run(100, 1,
                        [](int, size_t b, size_t) {
                          if (b == 50) throw std::runtime_error("x");
                        }),
               std::runtime_error);
  std::atomic<size_t> handled{0};
  pool.run(100, 1, [&](int, size_t b, size_t e) { handled += e - b; });
  EXPECT_EQ(handled.load(), 100u);
  std::atomic<bool> cancel{true};
  pool.run(
      100, 1, [&](int, size_t, size_t) { ADD_FAILURE() << "a cancelled run took a block"; }, {}, &cancel);
}

TEST(Parallel, AWorkersExceptionReachesTheCaller) {
  std::atomic<size_t> handled{0};
  EXPECT_THROW(
      {
        try {
          core::parallel_blocks(10'000, 4, 16, [&](int, size_t b, size_t e) {
            if (b <= 5000 && 5000 < e) throw std::runtime_error("plan 5000 cannot be costed");
            handled += e - b;
          });
        } catch (const std::runtime_error& err) {
          EXPECT_STREQ(err.what(), "plan 5000 cannot be costed");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_LT(handled.load(), 10'000u);  // the others stopped
}

}  // namespace
}  // namespace dayzero::search
