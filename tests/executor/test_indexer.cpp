// DeepSeek sparse attention's kernels (executor/cpu_indexer.cpp, the keep mask in
// cpu_attention.cpp): hand cases, and masked attention equal to attention over only
// the kept tokens.
#include <gtest/gtest.h>

#include <cmath>

#include "executor/kernels.h"
#include "helpers.h"

namespace dayzero::executor {
namespace {
using testing::random_tensor;

TEST(Indexer, LayerNormHandCase) {
  // [1, 2, 3]: mean 2, biased variance 2/3; (x - 2) / sqrt(2/3) = [-1.224745, 0, 1.224745].
  Tensor x({1, 3}, {1, 2, 3});
  layer_norm(x, std::vector<float>{1, 2, 1}, std::vector<float>{0, 0.5f, -1}, 0.0);
  EXPECT_NEAR(x.data[0], -1.224745, 1e-6);
  EXPECT_NEAR(x.data[1], 0.5, 1e-6);
  EXPECT_NEAR(x.data[2], 1.224745 - 1, 1e-6);
  EXPECT_THROW(layer_norm(x, std::vector<float>{1, 1}, std::vector<float>{0, 0}, 0.0), std::invalid_argument);
}

TEST(Indexer, TopKHandCase) {
  // 1 head of 2 dims, weight 1 (scaled by 1^-1/2), keys e0, e1, -e0, (e0 + e1): query (1, 0.5) at position 3 scores
  // relu(q.k) / sqrt(2): 1, 0.5, 0 (relu), 1.5 -> top-2 = tokens 3 and 0.
  const Tensor keys({4, 2}, {1, 0, 0, 1, -1, 0, 1, 1});
  std::vector<int32_t> block;
  const KvPages pages = KvPages::contiguous(keys, keys, block);  // the values are not read
  const Tensor q({2, 2}, {1, 0.5f, 1, 0.5f}), w({2, 1}, {1, 1});
  const std::vector<int64_t> pos{1, 3};
  const Tensor keep = dsa_topk(q, w, pos, pages, IndexerParams{1, 2, 2});
  // Position 1 sees 2 tokens <= top-k: both kept; nothing after it.
  EXPECT_EQ(std::vector<float>(keep.row(0), keep.row(0) + 4), (std::vector<float>{1, 1, 0, 0}));
  EXPECT_EQ(std::vector<float>(keep.row(1), keep.row(1) + 4), (std::vector<float>{1, 0, 0, 1}));
  // A negative head weight turns the order around: token 2 (score 0) and token 1 (-0.5) beat 0 and 3.
  const Tensor neg({2, 1}, {-1, -1});
  const Tensor k2 = dsa_topk(q, neg, pos, pages, IndexerParams{1, 2, 2});
  EXPECT_EQ(std::vector<float>(k2.row(1), k2.row(1) + 4), (std::vector<float>{0, 1, 1, 0}));
  EXPECT_THROW(dsa_topk(q, w, std::vector<int64_t>{1, 4}, pages, IndexerParams{1, 2, 2}), std::out_of_range);
  EXPECT_THROW(dsa_topk(q, w, pos, pages, IndexerParams{2, 2, 2}), std::invalid_argument);
}

TEST(Indexer, KeepMaskEqualsAttentionOverTheKeptTokens) {
  // One query at position 5 keeping tokens {0, 2, 5} equals the same query over a
  // cache holding only those three (positions renumbered 0..2).
  const int64_t C = 6, heads = 2, d = 4;
  const Tensor k = random_tensor({C, heads * d}, 3), v = random_tensor({C, heads * d}, 4);
  const Tensor q = random_tensor({1, heads * d}, 5);
  std::vector<int32_t> b1, b2;
  AttentionParams p;
  p.heads = p.kv_heads = heads;
  p.qk_dim = p.v_dim = d;
  p.scale = 0.5;
  const Tensor keep({1, 6}, {1, 0, 1, 0, 0, 1});
  p.keep = &keep;
  const Tensor masked = attention(q, std::vector<int64_t>{5}, KvPages::contiguous(k, v, b1), p);
  Tensor ks({3, heads * d}), vs({3, heads * d});
  int64_t r = 0;
  for (int64_t j : {0, 2, 5}) {
    std::copy_n(k.row(j), heads * d, ks.row(r));
    std::copy_n(v.row(j), heads * d, vs.row(r++));
  }
  AttentionParams all = p;
  all.keep = nullptr;
  const Tensor sub = attention(q, std::vector<int64_t>{2}, KvPages::contiguous(ks, vs, b2), all);
  for (int64_t i = 0; i < masked.numel(); ++i) EXPECT_NEAR(masked.data[i], sub.data[i], 1e-6);
  const Tensor short_keep({1, 2}, {1, 1});
  p.keep = &short_keep;
  EXPECT_THROW(attention(q, std::vector<int64_t>{5}, KvPages::contiguous(k, v, b1), p), std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::executor
