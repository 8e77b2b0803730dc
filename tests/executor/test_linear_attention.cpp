// Gated delta-net (executor/cpu_linear_attention.cpp): a hand-computed case, the
// chunked form against the recurrent one, and a sequence split over steps against
// one call (the state carried between them).
#include <gtest/gtest.h>

#include <cmath>

#include "executor/kernels.h"
#include "helpers.h"

namespace dayzero::executor {
namespace {
using testing::random_tensor;

struct Case {
  LinearAttentionParams p;
  std::vector<float> conv, dt_bias, a_log, norm;
  LinearAttentionWeights weights() const { return {conv, dt_bias, a_log, norm}; }
  LinearState fresh() const { return zero_linear_state(p); }
};

Case random_case(int64_t hk, int64_t hv, int64_t dk, int64_t dv, int64_t K, uint64_t seed) {
  Case c;
  c.p = {hk, hv, dk, dv, K};
  auto values = [&](int64_t n, uint64_t s, float scale, float offset) {
    const Tensor t = random_tensor({n}, s);
    std::vector<float> v(t.data.begin(), t.data.end());
    for (auto& x : v) x = offset + scale * x;
    return v;
  };
  c.conv = values(c.p.conv_dim() * K, seed, 0.5f, 0.0f);
  c.dt_bias = values(hv, seed + 1, 0.5f, 0.0f);
  c.a_log = values(hv, seed + 2, 0.5f, 0.0f);
  c.norm = values(dv, seed + 3, 0.2f, 1.0f);
  return c;
}

TEST(LinearAttention, HandCaseOneHeadTwoTokens) {
  // dk = dv = 1, conv of 1 tap (weight 1: silu only), A_log = 0, dt_bias = 0, a = 0:
  // g = -softplus(0) = -ln 2 (decay 1/2); b = 0: beta = 1/2. L2 norm makes q = k = sign.
  // qkv rows [q, k, v]: t0 = [1, 1, x0], t1 = [1, -1, x1] after silu: q, k -> +1/+1, +1/-1
  // (sign kept by silu: silu(1) > 0, silu(-1) < 0), v = silu(x).
  // t0: S = 0; S += k (beta (v0 - 0)) = v0 / 2; o0 = S = v0 / 2.
  // t1: S = v0 / 4; S^T k = -v0 / 4; S += k beta (v1 + v0 / 4) = v0/4 - (v1 + v0/4)/2; o1 = S.
  Case c;
  c.p = {1, 1, 1, 1, 1};
  c.p.norm_eps = 0.0;
  c.conv = {1, 1, 1};
  c.dt_bias = {0};
  c.a_log = {0};
  c.norm = {1};
  auto silu = [](double x) { return x / (1 + std::exp(-x)); };
  const double x0 = 0.7, x1 = -1.3, v0 = silu(x0), v1 = silu(x1);
  const Tensor qkv({2, 3}, {1, 1, static_cast<float>(x0), 1, -1, static_cast<float>(x1)});
  const Tensor z({2, 1}, {2, 2}), zero({2, 1}, {0, 0});
  LinearState s = c.fresh();
  // The gated norm of one element: sign(o) * silu(z).
  const Tensor o = gated_delta_net(qkv, z, zero, zero, c.weights(), s, c.p);
  const double o0 = v0 / 2, o1 = v0 / 4 - (v1 + v0 / 4) / 2;
  EXPECT_NEAR(o.data[0], (o0 > 0 ? 1 : -1) * silu(2), 1e-5);
  EXPECT_NEAR(o.data[1], (o1 > 0 ? 1 : -1) * silu(2), 1e-5);
  EXPECT_NEAR(s.recurrent.data[0], o1, 1e-6);  // the state is the un-normalized output here (q = 1)
}

TEST(LinearAttention, ChunkedEqualsRecurrentAcrossChunks) {
  // 2 key heads, 4 value heads (ratio 2), 70 tokens: chunks of 16 give 5 chunks, the last short.
  const Case c = random_case(2, 4, 8, 6, 4, 11);
  const int64_t T = 70;
  const Tensor qkv = random_tensor({T, c.p.conv_dim()}, 21), z = random_tensor({T, 24}, 22);
  const Tensor b = random_tensor({T, 4}, 23), a = random_tensor({T, 4}, 24);
  LinearState s1 = c.fresh(), s2 = c.fresh();
  LinearAttentionParams chunked = c.p;
  chunked.chunk = 16;
  const Tensor r = gated_delta_net(qkv, z, b, a, c.weights(), s1, c.p);
  const Tensor k = gated_delta_net(qkv, z, b, a, c.weights(), s2, chunked);
  ASSERT_EQ(r.shape, k.shape);
  for (int64_t i = 0; i < r.numel(); ++i) ASSERT_NEAR(r.data[i], k.data[i], 2e-5) << "element " << i;
  for (size_t i = 0; i < s1.recurrent.data.size(); ++i) ASSERT_NEAR(s1.recurrent.data[i], s2.recurrent.data[i], 2e-5);
  EXPECT_EQ(s1.conv.data, s2.conv.data);
}

TEST(LinearAttention, StepsCarryTheState) {
  // A prefill of 9 tokens (chunked) then 3 decode steps equals one recurrent call over all 12.
  const Case c = random_case(1, 2, 4, 4, 4, 5);
  const int64_t T = 12;
  const Tensor qkv = random_tensor({T, c.p.conv_dim()}, 31), z = random_tensor({T, 8}, 32);
  const Tensor b = random_tensor({T, 2}, 33), a = random_tensor({T, 2}, 34);
  LinearState whole = c.fresh(), steps = c.fresh();
  const Tensor all = gated_delta_net(qkv, z, b, a, c.weights(), whole, c.p);
  auto rows = [](const Tensor& x, int64_t lo, int64_t hi) {
    return Tensor({hi - lo, x.cols()}, std::vector<float>(x.row(lo), x.row(lo) + (hi - lo) * x.cols()));
  };
  LinearAttentionParams prefill = c.p;
  prefill.chunk = 64;
  std::vector<float> out;
  const Tensor first =
      gated_delta_net(rows(qkv, 0, 9), rows(z, 0, 9), rows(b, 0, 9), rows(a, 0, 9), c.weights(), steps, prefill);
  out.insert(out.end(), first.data.begin(), first.data.end());
  for (int64_t t = 9; t < T; ++t) {
    const Tensor o = gated_delta_net(rows(qkv, t, t + 1), rows(z, t, t + 1), rows(b, t, t + 1), rows(a, t, t + 1),
                                     c.weights(), steps, c.p);
    out.insert(out.end(), o.data.begin(), o.data.end());
  }
  ASSERT_EQ(out.size(), all.data.size());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], all.data[i], 2e-5) << "element " << i;
}

TEST(LinearAttention, RejectsShapesThatDoNotFit) {
  const Case c = random_case(2, 4, 8, 6, 4, 1);
  LinearState s = c.fresh();
  const Tensor b = random_tensor({3, 4}, 2), z = random_tensor({3, 24}, 3);
  EXPECT_THROW(gated_delta_net(random_tensor({3, 10}, 1), z, b, b, c.weights(), s, c.p), std::invalid_argument);
  LinearAttentionParams bad = c.p;
  bad.key_heads = 3;  // does not divide 4 value heads
  EXPECT_THROW(gated_delta_net(random_tensor({3, bad.conv_dim()}, 1), z, b, b, c.weights(), s, bad),
               std::invalid_argument);
  LinearState small = s;
  small.recurrent = Tensor({c.p.value_heads, c.p.key_head_dim * c.p.value_head_dim - 1});
  EXPECT_THROW(gated_delta_net(random_tensor({3, c.p.conv_dim()}, 1), z, b, b, c.weights(), small, c.p),
               std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::executor
