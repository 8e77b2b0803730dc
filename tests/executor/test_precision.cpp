// Comparing a reduced-precision run's logits with a full-precision run's
// (executor/precision.h), against hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "executor/precision.h"

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
  const LogitComparison r = c.result();
  EXPECT_EQ(r.rows, 3);
  EXPECT_NEAR(r.top1_agreement, 2.0 / 3.0, 1e-12);
  EXPECT_EQ(r.max_abs_diff, 2.0);
  // Row 0: 0; row 1: p = softmax(2, 0), q = softmax(0, 2), KL = (p0 - p1) * 2 = 2 tanh(1);
  // row 2: p = softmax(1, 1.5), q = softmax(1, 1.25).
  const double row1 = 2 * std::tanh(1.0);
  const float r2p[] = {1.0f, 1.5f}, r2q[] = {1.0f, 1.25f};
  const double row2 = kl_divergence_nats(r2p, r2q, 2);
  EXPECT_NEAR(r.kl_mean_nats, (row1 + row2) / 3, 1e-9);
  EXPECT_NEAR(r.kl_max_nats, row1, 1e-9);
  EXPECT_THROW(c.add(ref, Tensor({2, 3})), std::invalid_argument);
  EXPECT_EQ(LogitComparer().result().rows, 0);
}

}  // namespace
}  // namespace dayzero::executor
