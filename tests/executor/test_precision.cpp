// Comparing a reduced-precision run's logits with a full-precision run's
// (executor/precision.h), against hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "executor/precision.h"
#include "executor/runner.h"

namespace dayzero::executor {
namespace {

TEST(Precision, KlDivergenceHandComputed) {
  // p = softmax(0, ln 3) = (1/4, 3/4), q = softmax(0, 0) = (1/2, 1/2):
  // KL = 1/4 ln(1/2) + 3/4 ln(3/2) = -0.1732868 + 0.3040988 = 0.1308120 nats.
  const float p[] = {0.0f, static_cast<float>(std::log(3.0))}, q[] = {0.0f, 0.0f};
  EXPECT_NEAR(kl_divergence_nats(p, q, 2), 0.1308120, 1e-6);
  // Shifting every logit of a row leaves its softmax, so the divergence, unchanged.
  const float q_shifted[] = {5.0f, 5.0f};
  EXPECT_NEAR(kl_divergence_nats(p, q_shifted, 2), 0.1308120, 1e-6);
  EXPECT_EQ(kl_divergence_nats(p, p, 2), 0.0);
}

TEST(Precision, ComparerCountsRowsAgreementAndLargestDifference) {
  const Tensor ref({3, 2}, {0.0f, 1.0f, 2.0f, 0.0f, 1.0f, 1.5f});
  const Tensor cand({3, 2}, {0.0f, 1.0f, 0.0f, 2.0f, 1.0f, 1.25f});  // row 1's top token changes
  LogitComparer c;
  c.add(ref, cand);
  const LogitComparison& r = c.result();
  EXPECT_EQ(r.rows, 3);
  EXPECT_NEAR(r.top1_agreement(), 2.0 / 3.0, 1e-12);
  EXPECT_EQ(r.max_abs_diff, 2.0);
  // Row 0: 0; row 1: p = softmax(2, 0), q = softmax(0, 2), KL = (p0 - p1) * 2 = 2 tanh(1);
  // row 2: p = softmax(1, 1.5), q = softmax(1, 1.25).
  const double row1 = 2 * std::tanh(1.0);
  const float r2p[] = {1.0f, 1.5f}, r2q[] = {1.0f, 1.25f};
  const double row2 = kl_divergence_nats(r2p, r2q, 2);
  EXPECT_NEAR(r.kl_mean_nats(), (row1 + row2) / 3, 1e-9);
  EXPECT_NEAR(r.kl_max_nats, row1, 1e-9);
  EXPECT_THROW(c.add(ref, Tensor({2, 3})), std::invalid_argument);
  EXPECT_EQ(LogitComparer().result().rows, 0);
}

// Decode step i reads generated token i: compared while both runs generated the
// same tokens up to it, skipped after.
TEST(Precision, CompareRunsStopsDecodeRowsWhereTokensPart) {
  auto seq = [](std::vector<int64_t> tokens, float bias) {
    SequenceResult s;
    s.prefill_logits = Tensor({2, 3}, {0, 1, 2, 2, 1, 0});
    for (size_t i = 0; i + 1 < tokens.size(); ++i) s.decode_logits.push_back(Tensor({1, 3}, {bias, 0, 1}));
    s.tokens = std::move(tokens);
    return s;
  };
  const std::vector<SequenceResult> ref{seq({5, 6, 7, 8}, 0)}, cand{seq({5, 6, 9, 9}, 0.5f)};
  const RunComparison c = compare_runs(ref, cand);
  EXPECT_EQ(c.logits.rows, 2 + 2);  // prefill rows, decode steps 0 and 1 (tokens 5, 6 agree); step 2 reads 7 vs 9
  EXPECT_EQ(c.decode_rows_skipped, 1);
  EXPECT_EQ(c.sequences, 1);
  EXPECT_EQ(c.sequences_tokens_equal, 0);
  EXPECT_EQ(c.logits.max_abs_diff, 0.5);
  EXPECT_EQ(compare_runs(ref, ref).sequences_tokens_equal, 1);
  EXPECT_EQ(compare_runs(ref, ref).logits.kl_sum_nats, 0.0);
  EXPECT_THROW(compare_runs(ref, {}), std::invalid_argument);
  std::vector<SequenceResult> no_logits{seq({5}, 0)};
  no_logits[0].prefill_logits = Tensor();
  EXPECT_THROW(compare_runs(ref, no_logits), std::invalid_argument);
}

TEST(Precision, ReferencePlanIsTheCheckpointAtFullPrecision) {
  plan::Plan p;
  p.dtypes.attention = p.dtypes.experts = model::WeightPrecision::fp8;
  p.dtypes.kv_cache = plan::KvDtype::fp8;
  p.attention.tp = 2;
  const plan::Plan r = reference_plan(p);
  EXPECT_EQ(r.dtypes.attention, model::WeightPrecision::checkpoint);
  EXPECT_EQ(r.dtypes.experts, model::WeightPrecision::checkpoint);
  EXPECT_EQ(r.dtypes.kv_cache, plan::KvDtype::fp32);
  EXPECT_EQ(r.attention.tp, 2);
}

}  // namespace
}  // namespace dayzero::executor
