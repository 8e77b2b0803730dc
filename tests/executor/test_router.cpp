// MoE routing: softmax top-k, gpt-oss top-k-then-softmax, DeepSeek-V3 noaux_tc.
#include <gtest/gtest.h>

#include <cmath>

#include "executor/kernels.h"

namespace dayzero::executor {
namespace {

TEST(Router, SoftmaxTopkWithAndWithoutRenormalization) {
  // logits ln [1, 2, 3, 4]: softmax = [0.1, 0.2, 0.3, 0.4]; top-2 = experts 3, 2.
  const Tensor logits({1, 4}, {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)});
  RouterParams p;
  p.top_k = 2;
  Routing r = route_softmax_topk(logits, p);
  EXPECT_EQ(r.experts, (std::vector<int64_t>{3, 2}));
  EXPECT_NEAR(r.weights[0], 0.4, 1e-6);
  EXPECT_NEAR(r.weights[1], 0.3, 1e-6);
  p.normalize = true;  // Mixtral / Qwen3-MoE norm_topk_prob: 0.4 / 0.7, 0.3 / 0.7
  r = route_softmax_topk(logits, p);
  EXPECT_NEAR(r.weights[0], 4.0 / 7.0, 1e-6);
  EXPECT_NEAR(r.weights[1], 3.0 / 7.0, 1e-6);
  // A tie goes to the lower index.
  p.top_k = 1;
  r = route_softmax_topk(Tensor({1, 4}, {0, 1, 1, 0}), p);
  EXPECT_EQ(r.experts, (std::vector<int64_t>{1}));
}

TEST(Router, GptOssTopkThenSoftmax) {
  // logits [2, 0, 2 + ln 3, 1]: top-2 = experts 2, 0; softmax over them = [3/4, 1/4].
  const Tensor logits({1, 4}, {2.0f, 0.0f, 2.0f + std::log(3.0f), 1.0f});
  RouterParams p;
  p.top_k = 2;
  const Routing r = route_topk_softmax(logits, p);
  EXPECT_EQ(r.experts, (std::vector<int64_t>{2, 0}));
  EXPECT_NEAR(r.weights[0], 0.75, 1e-6);
  EXPECT_NEAR(r.weights[1], 0.25, 1e-6);
}

TEST(Router, DeepSeekGroupLimitedWithTie) {
  // 8 experts in 4 groups of 2; keep 2 groups; top-2; scaling 2.5; normalized.
  // logits 0 except expert 3 = ln 3: sigmoid scores 0.5, and 0.75 for expert 3.
  std::vector<float> l(8, 0.0f);
  l[3] = std::log(3.0f);
  const std::vector<float> bias = {0.1f, 0.0f, 0.0f, 0.1f, 0.05f, 0.05f, 0.2f, -0.2f};
  RouterParams p;
  p.top_k = 2;
  p.normalize = true;
  p.n_group = 4;
  p.topk_group = 2;
  p.routed_scaling_factor = 2.5;
  p.correction_bias = bias;
  const Routing r = route_sigmoid_group_topk(Tensor({1, 8}, l), p);
  // Biased scores: [0.6, 0.5, 0.5, 0.85, 0.55, 0.55, 0.7, 0.3].
  // Group sums of the top 2: g0 1.1, g1 1.35, g2 1.1, g3 1.0 -> g1, then g0 and g2 tie: g0 (lower index).
  // Expert 6 (0.7, the second-best biased score) is in the dropped group g3.
  // Top-2 among experts 0..3 by biased score: 3 (0.85), 0 (0.6).
  EXPECT_EQ(r.experts, (std::vector<int64_t>{3, 0}));
  // Weights from the unbiased scores: 0.75 and 0.5, normalized -> 0.6 and 0.4, times 2.5 -> 1.5 and 1.0.
  EXPECT_NEAR(r.weights[0], 1.5, 1e-6);
  EXPECT_NEAR(r.weights[1], 1.0, 1e-6);
  // Equal scores everywhere: groups 0 and 1, experts 0 and 1 (lowest indices).
  RouterParams q = p;
  q.correction_bias = {};
  const Routing t = route_sigmoid_group_topk(Tensor({1, 8}, std::vector<float>(8, 0.0f)), q);
  EXPECT_EQ(t.experts, (std::vector<int64_t>{0, 1}));
  EXPECT_NEAR(t.weights[0], 1.25, 1e-6);  // 0.5 / 1.0 * 2.5
  // Two runs are identical.
  EXPECT_EQ(route_sigmoid_group_topk(Tensor({1, 8}, l), p).weights, r.weights);
  p.topk_group = 5;
  EXPECT_THROW(route_sigmoid_group_topk(Tensor({1, 8}, l), p), std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::executor
