// ContinuousBatcher against hand-worked schedules.
#include "executor/batcher.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dayzero::executor {
namespace {

// Runs the batcher to the end; returns every step's rows.
std::vector<std::vector<StepRows>> schedule(ContinuousBatcher& b) {
  std::vector<std::vector<StepRows>> steps;
  while (!b.done()) {
    steps.push_back(b.next_step());
    b.complete(steps.back());
    if (steps.size() > 10000) throw std::runtime_error("no progress");
  }
  return steps;
}

void expect_rows(const std::vector<StepRows>& got, const std::vector<StepRows>& want, int step) {
  ASSERT_EQ(got.size(), want.size()) << "step " << step;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].request, want[i].request) << "step " << step << " row " << i;
    EXPECT_EQ(got[i].first, want[i].first) << "step " << step << " row " << i;
    EXPECT_EQ(got[i].count, want[i].count) << "step " << step << " row " << i;
    EXPECT_EQ(got[i].samples, want[i].samples) << "step " << step << " row " << i;
  }
}

// One request alone: its prompt in chunks of the budget (10 = 4 + 4 + 2), the last
// chunk sampling the first token, then one decode row per further token, fed at
// positions 10, 11: 3 + 2 = 5 steps for 3 tokens.
TEST(ContinuousBatcher, OneRequestIsChunkedPrefillThenDecode) {
  ContinuousBatcher b({/*kv_blocks=*/8, /*block_tokens=*/4, /*token_budget=*/4, /*max_running=*/8}, {{10, 3}});
  EXPECT_EQ(b.blocks_of(0), 3);  // 10 + 3 - 1 = 12 positions = 3 blocks of 4
  const auto steps = schedule(b);
  ASSERT_EQ(steps.size(), 5u);
  expect_rows(steps[0], {{0, 0, 4, false}}, 0);
  expect_rows(steps[1], {{0, 4, 4, false}}, 1);
  expect_rows(steps[2], {{0, 8, 2, true}}, 2);
  expect_rows(steps[3], {{0, 10, 1, true}}, 3);
  expect_rows(steps[4], {{0, 11, 1, true}}, 4);
  EXPECT_EQ(b.reserved_blocks(), 0);
  EXPECT_EQ(b.finished(), 1);
}

// Two requests, budget 4: the running one goes first (its decode row), the new
// one's prompt fills what is left of the budget.
TEST(ContinuousBatcher, RunningFirstThenNewPromptsInTheBudgetLeft) {
  ContinuousBatcher b({16, 4, 4, 8}, {{3, 2}, {5, 1}});
  const auto steps = schedule(b);
  ASSERT_EQ(steps.size(), 3u);
  expect_rows(steps[0], {{0, 0, 3, true}, {1, 0, 1, false}}, 0);  // A's whole prompt; 1 row of B's
  expect_rows(steps[1], {{0, 3, 1, true}, {1, 1, 3, false}}, 1);  // A decodes (and finishes); B 3 more
  expect_rows(steps[2], {{1, 4, 1, true}}, 2);                    // B's last prompt row samples its only token
}

// A pool of 4 blocks of 4 tokens holds one request of 3 blocks at a time: the
// second waits until the first finishes and returns its blocks (FCFS).
TEST(ContinuousBatcher, KvTooSmallForBothQueuesTheSecond) {
  ContinuousBatcher b({4, 4, 64, 8}, {{8, 4}, {8, 4}});  // each 8 + 3 = 11 positions = 3 blocks
  auto s0 = b.next_step();
  expect_rows(s0, {{0, 0, 8, true}}, 0);
  EXPECT_EQ(b.running(), 1);
  EXPECT_EQ(b.waiting(), 1);
  EXPECT_EQ(b.reserved_blocks(), 3);
  b.complete(s0);
  for (int i = 0; i < 2; ++i) {  // decode rows 2 and 3 of request 0: request 1 still waits
    const auto s = b.next_step();
    expect_rows(s, {{0, 8 + i, 1, true}}, 1 + i);
    b.complete(s);
  }
  const auto s3 = b.next_step();
  expect_rows(s3, {{0, 10, 1, true}}, 3);
  EXPECT_EQ(b.complete(s3), std::vector<int64_t>{0});
  EXPECT_EQ(b.reserved_blocks(), 0);
  const auto s4 = b.next_step();
  expect_rows(s4, {{1, 0, 8, true}}, 4);
  EXPECT_EQ(b.admitted(), std::vector<int64_t>{1});
}

// max_running caps the sequences at once even with budget and blocks to spare.
TEST(ContinuousBatcher, MaxRunningCapsAdmission) {
  ContinuousBatcher b({100, 4, 100, 2}, {{2, 2}, {2, 2}, {2, 2}});
  const auto s0 = b.next_step();
  EXPECT_EQ(s0.size(), 2u);
  EXPECT_EQ(b.waiting(), 1);
}

// A closed batch's steps: every request yields exactly its output tokens, and the
// rows over all steps are every prompt token plus (output - 1) decode rows each.
TEST(ContinuousBatcher, EveryTokenAccountedFor) {
  std::vector<BatchRequest> reqs;
  int64_t rows_expected = 0, sampled_expected = 0;
  for (int i = 0; i < 40; ++i) {
    reqs.push_back({1 + (i * 37) % 29, 1 + (i * 11) % 7});
    rows_expected += reqs.back().prompt_tokens + reqs.back().output_tokens - 1;
    sampled_expected += reqs.back().output_tokens;
  }
  ContinuousBatcher b({12, 4, 16, 5}, reqs);
  int64_t rows = 0, sampled = 0;
  for (const auto& step : schedule(b))
    for (const auto& r : step) {
      rows += r.count;
      sampled += r.samples;
      EXPECT_LE(b.reserved_blocks(), 12);
    }
  EXPECT_EQ(rows, rows_expected);
  EXPECT_EQ(sampled, sampled_expected);
}

TEST(ContinuousBatcher, RequestLargerThanThePoolIsRefused) {
  try {
    ContinuousBatcher b({2, 4, 8, 8}, {{4, 1}, {8, 2}});  // request 1: 9 positions = 3 blocks > 2
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("request 1 needs 3 KV blocks"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ContinuousBatcher({2, 4, 8, 8}, {{0, 1}}), std::invalid_argument);
  EXPECT_THROW(ContinuousBatcher({0, 4, 8, 8}, {{1, 1}}), std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::executor
