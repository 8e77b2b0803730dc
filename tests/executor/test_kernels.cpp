// Dense and attention kernels against naive loops written here, and hand cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "executor/kernels.h"
#include "helpers.h"

namespace dayzero::executor {
namespace {
using testing::f32_weight;
using testing::random_tensor;

void expect_close(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape, b.shape);
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(a.data[i], b.data[i], tol) << "element " << i;
}

TEST(Kernels, RmsNormOverAllHeadsFromTheirMeanSquare) {
  // MiniMax's whole-layer norm split over 2 ranks: [3] and [4] each scaled by the mean square of
  // the whole row [3, 4] (12.5), as rms_norm of the whole row: [0.848528, 2.262742] with weight [1, 2].
  Tensor a({1, 1}, {3}), b({1, 1}, {4});
  const std::vector<float> mean{12.5f};
  rms_norm_given_mean(a, std::vector<float>{1}, 0.0, mean);
  rms_norm_given_mean(b, std::vector<float>{2}, 0.0, mean);
  EXPECT_NEAR(a.data[0], 0.848528, 1e-6);
  EXPECT_NEAR(b.data[0], 2.262742, 1e-6);
  EXPECT_THROW(rms_norm_given_mean(a, std::vector<float>{1, 1}, 0.0, mean), std::invalid_argument);
}

TEST(Kernels, EmbeddingGathersRows) {
  const Tensor table = random_tensor({5, 3}, 1);
  const Tensor e = embedding(f32_weight(table), std::vector<int64_t>{4, 0, 4});
  EXPECT_EQ(std::vector<float>(e.row(0), e.row(0) + 3), std::vector<float>(table.row(4), table.row(4) + 3));
  EXPECT_EQ(std::vector<float>(e.row(1), e.row(1) + 3), std::vector<float>(table.row(0), table.row(0) + 3));
  EXPECT_THROW(embedding(f32_weight(table), std::vector<int64_t>{5}), std::out_of_range);
  // -1: a token of another rank's vocabulary slice, a row of zeros (the TP embedding's sum)
  const Tensor z = embedding(f32_weight(table), std::vector<int64_t>{-1, 2});
  EXPECT_EQ(std::vector<float>(z.row(0), z.row(0) + 3), std::vector<float>(3, 0.0f));
  EXPECT_EQ(std::vector<float>(z.row(1), z.row(1) + 3), std::vector<float>(table.row(2), table.row(2) + 3));
  EXPECT_THROW(embedding(f32_weight(table), std::vector<int64_t>{-2}), std::out_of_range);
}

TEST(Kernels, RmsNormHandCaseAndPerHead) {
  // x = [3, 4]: mean(x^2) = 12.5, rsqrt(12.5) = 0.282843; weight [1, 2] -> [0.848528, 2.262742].
  Tensor x({1, 2}, {3, 4});
  rms_norm(x, std::vector<float>{1, 2}, 0.0);
  EXPECT_NEAR(x.data[0], 0.848528, 1e-6);
  EXPECT_NEAR(x.data[1], 2.262742, 1e-6);
  // Per head (q_norm): a [1, 4] row is two heads of 2, each normalized on its own.
  Tensor h({1, 4}, {3, 4, 1, 1});
  rms_norm(h, std::vector<float>{1, 1}, 0.0);
  EXPECT_NEAR(h.data[1], 4 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(h.data[2], 1.0, 1e-6);  // [1, 1]: rms 1
}

TEST(Kernels, LinearMatchesNaiveLoop) {
  const Tensor x = random_tensor({3, 5}, 2), w = random_tensor({4, 5}, 3), b = random_tensor({4}, 4);
  Tensor ref({3, 4});
  for (int t = 0; t < 3; ++t)
    for (int o = 0; o < 4; ++o) {
      double s = b.data[o];
      for (int i = 0; i < 5; ++i) s += x.row(t)[i] * w.row(o)[i];
      ref.row(t)[o] = static_cast<float>(s);
    }
  expect_close(linear_f32(x, f32_weight(w), 0, b.data), ref, 1e-5);
  expect_close(linear_dequant(x, f32_weight(w), 0, b.data), ref, 1e-5);
  // Input-major storage ([in, out], gpt-oss experts) of the same matrix gives the same product.
  Tensor wt({5, 4});
  for (int o = 0; o < 4; ++o)
    for (int i = 0; i < 5; ++i) wt.row(i)[o] = w.row(o)[i];
  StoredWeight sw = f32_weight(wt);
  sw.input_major = true;
  expect_close(linear_f32(x, sw, 0, b.data), ref, 1e-5);
  // Matrix 1 of a stacked [2, 4, 5] expert tensor.
  Tensor stacked({2, 4, 5});
  std::copy(w.data.begin(), w.data.end(), stacked.data.begin() + 20);
  expect_close(linear_f32(x, f32_weight(stacked), 1, b.data), ref, 1e-5);
  EXPECT_THROW(linear_f32(random_tensor({3, 4}, 5), f32_weight(w), 0, {}), std::invalid_argument);
}

TEST(Kernels, SwigluAndClampedVariant) {
  const ActivationParams p;  // alpha 1.702, limit 7
  // silu(1) * 2 = 1 / (1 + e^-1) * 2 = 0.731059 * 2 = 1.462117
  Tensor out = swiglu(Tensor({1, 1}, {1}), Tensor({1, 1}, {2}), p);
  EXPECT_NEAR(out.data[0], 1.462117, 1e-6);
  // gpt-oss: gate 10 -> clamped to 7; up 9 -> 7; (7 + 1) * 7 * sigmoid(1.702 * 7) = 56 * 0.99999339 = 55.99963
  out = swiglu_clamped(Tensor({1, 1}, {10}), Tensor({1, 1}, {9}), p);
  EXPECT_NEAR(out.data[0], 56.0 / (1.0 + std::exp(-1.702 * 7.0)), 1e-4);
  // gate -1 (not clamped below), up -20 -> -7: (-7 + 1) * (-1) * sigmoid(-1.702) = 6 * 0.154207 = 0.925244
  out = swiglu_clamped(Tensor({1, 1}, {-1}), Tensor({1, 1}, {-20}), p);
  EXPECT_NEAR(out.data[0], 6.0 / (1.0 + std::exp(1.702)), 1e-6);
  Tensor gate, up;
  deinterleave_gate_up(Tensor({1, 4}, {1, 2, 3, 4}), gate, up);
  EXPECT_EQ(gate.data, (std::vector<float>{1, 3}));  // [..., ::2]
  EXPECT_EQ(up.data, (std::vector<float>{2, 4}));    // [..., 1::2]
}

// softmax(q k^T * scale + mask) v with an explicit mask, over all C keys.
Tensor naive_attention(const Tensor& q, const std::vector<int64_t>& pos, const Tensor& k, const Tensor& v,
                       const AttentionParams& p) {
  Tensor out({q.rows(), p.heads * p.v_dim});
  const int64_t group = p.heads / p.kv_heads;
  for (int64_t t = 0; t < q.rows(); ++t)
    for (int64_t h = 0; h < p.heads; ++h) {
      std::vector<double> s(static_cast<size_t>(k.rows()), -std::numeric_limits<double>::infinity());
      for (int64_t j = 0; j < k.rows(); ++j) {
        const bool visible = j <= pos[t] && (p.window == 0 || pos[t] - j < p.window);
        if (!visible) continue;
        double d = 0;
        for (int64_t i = 0; i < p.qk_dim; ++i) d += q.row(t)[h * p.qk_dim + i] * k.row(j)[(h / group) * p.qk_dim + i];
        s[j] = d * p.scale;
      }
      double denom = p.sinks.empty() ? 0.0 : std::exp(p.sinks[h]);
      for (double x : s) denom += std::exp(x);
      for (int64_t i = 0; i < p.v_dim; ++i) {
        double acc = 0;
        for (int64_t j = 0; j < k.rows(); ++j) acc += std::exp(s[j]) / denom * v.row(j)[(h / group) * p.v_dim + i];
        out.row(t)[h * p.v_dim + i] = static_cast<float>(acc);
      }
    }
  return out;
}

// The kernels over contiguous k / v (one block).
Tensor attention(const Tensor& q, const std::vector<int64_t>& pos, const Tensor& k, const Tensor& v,
                 const AttentionParams& p) {
  std::vector<int32_t> block;
  return dayzero::executor::attention(q, pos, KvPages::contiguous(k, v, block), p);
}
Tensor mla_attention(const Tensor& q, const std::vector<int64_t>& pos, const Tensor& latent, const Tensor& k_rope,
                     const StoredWeight& kv_b, const MlaParams& p) {
  std::vector<int32_t> block;
  return dayzero::executor::mla_attention(q, pos, KvPages::contiguous(latent, k_rope, block), kv_b, p);
}

// The sigmoid gate: x / (1 + e^-g) element by element, or with one gate a row (Qwen3.5's
// shared expert): g = 0 halves its row, ln 3 keeps three quarters; any other gate shape
// is refused naming both.
TEST(Kernels, SigmoidGateElementwiseOrOneGateARow) {
  const Tensor x({2, 3}, {4, 8, -2, 1, 2, 3});
  const Tensor per_row({2, 1}, {0.0f, std::log(3.0f)});
  const Tensor y = sigmoid_gate(per_row, x, ActivationParams{});
  const std::vector<float> want = {2, 4, -1, 0.75f, 1.5f, 2.25f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y.data[i], want[i], 1e-6f) << i;
  const Tensor same = sigmoid_gate(Tensor({2, 3}, {0, 0, 0, 0, 0, 0}), x, ActivationParams{});
  EXPECT_FLOAT_EQ(same.data[1], 4.0f);
  try {
    sigmoid_gate(Tensor({2, 2}), x, ActivationParams{});
    ADD_FAILURE() << "a [2, 2] gate over [2, 3] was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 2]"), std::string::npos) << e.what();
  }
}

TEST(Kernels, AttentionPrefillDecodeGqaWindowSinks) {
  AttentionParams p;
  p.heads = 4;
  p.kv_heads = 2;
  p.qk_dim = 3;
  p.v_dim = 2;
  p.scale = 1.0 / std::sqrt(3.0);
  const int64_t T = 6;
  const Tensor q = random_tensor({T, 12}, 10), k = random_tensor({T, 6}, 11), v = random_tensor({T, 4}, 12);
  const std::vector<int64_t> pos = {0, 1, 2, 3, 4, 5};
  const std::vector<float> sinks = {0.5f, -1.0f, 2.0f, 0.0f};
  for (int64_t window : {0, 2}) {
    for (bool with_sinks : {false, true}) {
      p.window = window;
      p.sinks = with_sinks ? std::span<const float>(sinks) : std::span<const float>();
      const Tensor prefill = attention(q, pos, k, v, p);
      expect_close(prefill, naive_attention(q, pos, k, v, p), 1e-6);
      // Decode: the last query alone over the same cache gives the prefill's last row.
      Tensor q1({1, 12});
      std::copy(q.row(T - 1), q.row(T - 1) + 12, q1.data.begin());
      const Tensor d = attention(q1, std::vector<int64_t>{T - 1}, k, v, p);
      for (int i = 0; i < 8; ++i) EXPECT_EQ(d.data[i], prefill.row(T - 1)[i]);
    }
  }
}

// The same keys and values written into a paged cache of 4-token blocks, behind
// another sequence's blocks (so this one's block ids are not 0, 1, ...), give
// the contiguous result exactly.
TEST(Kernels, AttentionOverPagedCacheEqualsContiguous) {
  AttentionParams p;
  p.heads = 4;
  p.kv_heads = 2;
  p.qk_dim = 3;
  p.v_dim = 2;
  p.scale = 0.5;
  const int64_t T = 11;
  const Tensor q = random_tensor({T, 12}, 30), k = random_tensor({T, 6}, 31), v = random_tensor({T, 4}, 32);
  std::vector<int64_t> pos(T);
  for (int64_t i = 0; i < T; ++i) pos[i] = i;
  KvCache cache(2, 4, 6, 4);
  const int other = cache.add_sequence(), seq = cache.add_sequence();
  // Interleave growth so the two sequences' blocks alternate in the pool.
  for (int64_t i = 0; i < T; ++i) {
    cache.extend(other, 1);
    const int64_t at = cache.extend(seq, 1);
    EXPECT_EQ(at, i);
    cache.write(1, seq, at, k.row(i), v.row(i), 1);
  }
  const KvPages pages = cache.pages(1, seq);
  EXPECT_EQ(pages.tokens, T);
  ASSERT_EQ(pages.blocks.size(), 3u);  // ceil(11 / 4)
  EXPECT_NE(pages.blocks[1], 1);       // not laid out contiguously
  EXPECT_EQ(cache.allocated_blocks(), 6);
  EXPECT_EQ(cache.bytes(), 2 * 6 * 4 * (6 + 4) * 4);
  const Tensor paged = dayzero::executor::attention(q, pos, pages, p);
  EXPECT_EQ(paged.data, attention(q, pos, k, v, p).data);
  EXPECT_THROW(cache.write(0, seq, T, k.row(0), v.row(0), 1), std::out_of_range);
}

TEST(Kernels, AttentionHandCases) {
  AttentionParams p;
  p.heads = p.kv_heads = 1;
  p.qk_dim = 1;
  p.v_dim = 1;
  p.scale = 1.0;
  const Tensor q({2, 1}, {0, 0}), k({2, 1}, {1, 1}), v({2, 1}, {2, 4});
  const std::vector<int64_t> pos = {0, 1};
  // Scores all 0: query 1 averages v0 and v1 = 3; query 0 sees only v0 = 2.
  Tensor o = attention(q, pos, k, v, p);
  EXPECT_FLOAT_EQ(o.data[0], 2.0f);
  EXPECT_FLOAT_EQ(o.data[1], 3.0f);
  // Window 1: each query sees only itself.
  p.window = 1;
  o = attention(q, pos, k, v, p);
  EXPECT_FLOAT_EQ(o.data[1], 4.0f);
  // A sink of logit 0 adds e^0 to the denominator: query 0 -> 2 * e^0 / (e^0 + e^0) = 1.
  p.window = 0;
  const std::vector<float> sink = {0.0f};
  p.sinks = sink;
  o = attention(q, pos, k, v, p);
  EXPECT_FLOAT_EQ(o.data[0], 1.0f);
  EXPECT_FLOAT_EQ(o.data[1], 2.0f);  // (2 + 4) / 3
}

TEST(Kernels, MlaMatchesNaiveExpansion) {
  MlaParams p;
  p.heads = 2;
  p.nope_dim = 3;
  p.rope_dim = 2;
  p.kv_lora_rank = 4;
  p.v_dim = 3;
  p.scale = 0.37;
  const int64_t T = 4;
  const Tensor q = random_tensor({T, 10}, 20), latent = random_tensor({T, 4}, 21), k_rope = random_tensor({T, 2}, 22);
  const Tensor kv_b = random_tensor({12, 4}, 23);  // [heads * (nope + v), rank]
  const std::vector<int64_t> pos = {0, 1, 2, 3};
  const Tensor out = mla_attention(q, pos, latent, k_rope, f32_weight(kv_b), p);
  // Naive: per head, k_j = [kv_b_nope_h latent_j, k_rope_j], v_j = kv_b_v_h latent_j.
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < 2; ++h) {
      std::vector<double> s, vals;
      for (int64_t j = 0; j <= t; ++j) {
        double d = 0;
        for (int64_t i = 0; i < 3; ++i) {
          double kn = 0;
          for (int64_t r = 0; r < 4; ++r) kn += kv_b.row(h * 6 + i)[r] * latent.row(j)[r];
          d += q.row(t)[h * 5 + i] * kn;
        }
        for (int64_t i = 0; i < 2; ++i) d += q.row(t)[h * 5 + 3 + i] * k_rope.row(j)[i];
        s.push_back(std::exp(d * p.scale));
      }
      double denom = 0;
      for (double x : s) denom += x;
      for (int64_t i = 0; i < 3; ++i) {
        double acc = 0;
        for (int64_t j = 0; j <= t; ++j) {
          double vv = 0;
          for (int64_t r = 0; r < 4; ++r) vv += kv_b.row(h * 6 + 3 + i)[r] * latent.row(j)[r];
          acc += s[j] / denom * vv;
        }
        EXPECT_NEAR(out.row(t)[h * 3 + i], acc, 1e-5);
      }
    }
}

// The absorbed form (attending over the latent) equals the expanded one, for a
// decode query and for a prefill; mla_attention picks absorbed when it is cheaper.
TEST(Kernels, MlaAbsorbedEqualsExpanded) {
  MlaParams p;
  p.heads = 3;
  p.nope_dim = 4;
  p.rope_dim = 2;
  p.kv_lora_rank = 5;
  p.v_dim = 3;
  p.scale = 0.41;
  const int64_t C = 9;
  const Tensor q = random_tensor({C, 18}, 40), latent = random_tensor({C, 5}, 41), k_rope = random_tensor({C, 2}, 42);
  const Tensor kv_b_values = random_tensor({21, 5}, 43);  // [heads * (nope + v), rank]
  const StoredWeight kv_b = f32_weight(kv_b_values);
  std::vector<int64_t> pos(C);
  for (int64_t i = 0; i < C; ++i) pos[static_cast<size_t>(i)] = i;
  std::vector<int32_t> block;
  const KvPages pages = KvPages::contiguous(latent, k_rope, block);
  ASSERT_FALSE(mla_absorbed(C, C, 4, 2, 5, 3));  // prefill of 9 over 9: expanding is cheaper
  const Tensor expanded = dayzero::executor::mla_attention(q, pos, pages, kv_b, p);
  const Tensor absorbed = mla_absorbed_attention(q, pos, pages, kv_b, p);
  expect_close(absorbed, expanded, 1e-5);
  // Decode: one query at the last position takes the absorbed path, same values.
  ASSERT_TRUE(mla_absorbed(1, C, 4, 2, 5, 3));
  Tensor q1({1, 18});
  std::copy(q.row(C - 1), q.row(C - 1) + 18, q1.data.begin());
  const Tensor d = dayzero::executor::mla_attention(q1, std::vector<int64_t>{C - 1}, pages, kv_b, p);
  for (int64_t i = 0; i < 9; ++i) EXPECT_NEAR(d.data[static_cast<size_t>(i)], expanded.row(C - 1)[i], 1e-5);
  // DeepSeek-V3's dims (nope 128, rope 64, rank 512, v 128): decode absorbs, a long prefill expands.
  EXPECT_TRUE(mla_absorbed(1, 4096, 128, 64, 512, 128));
  EXPECT_FALSE(mla_absorbed(4096, 4096, 128, 64, 512, 128));
}

TEST(Kernels, MoeCombineWeightedSum) {
  Tensor out({2, 2});
  moe_combine(out, Tensor({2, 2}, {1, 2, 3, 4}), std::vector<int64_t>{1, 0}, std::vector<float>{0.5f, 2.0f});
  EXPECT_EQ(out.data, (std::vector<float>{6, 8, 0.5f, 1}));  // row 0 += 2 * [3, 4]; row 1 += 0.5 * [1, 2]
}

}  // namespace
// Columns of every row as a tensor of their own (MLA's latent and rope key out of
// kv_a's output): hand-computed, and a range past the row is an error naming it.
TEST(Kernels, ColumnsCopiesARangeOfEveryRow) {
  const Tensor x({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor c = columns(x, 1, 2);
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.data, (std::vector<float>{2, 3, 6, 7}));
  EXPECT_EQ(columns(x, 4, 0).numel(), 0);
  EXPECT_THROW(columns(x, 3, 2), std::invalid_argument);
  EXPECT_THROW(columns(x, -1, 1), std::invalid_argument);
}

// Rows' sums of squares (MiniMax-M2's RMSNorm across heads): 1 + 4 = 5, 9 + 16 = 25.
TEST(Kernels, RowSumSquaresSumsEachRow) {
  EXPECT_EQ(row_sum_squares(Tensor({2, 2}, {1, 2, 3, -4})), (std::vector<float>{5, 25}));
  EXPECT_TRUE(row_sum_squares(Tensor({0, 4})).empty());
}

// A batch's rows apart and back together: hand-computed, and what does not fit is an
// error naming the shapes.
TEST(Kernels, RowsAndStackRowsTakeABatchApartAndBack) {
  const Tensor x({3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor a = rows(x, 0, 1), b = rows(x, 1, 2);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(b.data, (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(rows(x, 3, 0).numel(), 0);
  const std::vector<Tensor> parts{b, a};
  const Tensor s = stack_rows(parts);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(s.data, (std::vector<float>{3, 4, 5, 6, 1, 2}));
  EXPECT_THROW(rows(x, 2, 2), std::invalid_argument);
  EXPECT_THROW(rows(x, -1, 1), std::invalid_argument);
  const std::vector<Tensor> uneven{a, Tensor({1, 3})};
  try {
    stack_rows(uneven);
    ADD_FAILURE() << "parts of two widths stacked";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[1, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(stack_rows(std::span<const Tensor>()), std::invalid_argument);
}

}  // namespace dayzero::executor
