// Runner::serve: continuous batching gives every request what it gets alone, and
// the paged KV cache's blocks are reused, never grown past the pool.
#include <gtest/gtest.h>

#include <algorithm>

#include "executor/kv_cache.h"
#include "executor/runner.h"
#include "golden.h"

namespace dayzero::executor {
namespace {

using testing::tiny_dir;

plan::Plan plan_for(const model::Model& m) {
  plan::Plan p;
  p.model = m.config.source;
  p.dtypes.kv_cache = plan::KvDtype::fp32;  // the goldens' full precision
  p.kv_block_tokens = 4;
  return p;
}

// Reproducible requests: prompts of 1..23 tokens, 1..6 output tokens.
std::vector<ServeRequest> requests_for(const model::Model& m, int n) {
  std::vector<ServeRequest> out;
  uint64_t s = 12345;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>(s >> 33);
  };
  for (int i = 0; i < n; ++i) {
    ServeRequest r;
    const int64_t len = 1 + next() % 23;
    for (int64_t t = 0; t < len; ++t) r.prompt.push_back(next() % m.config.vocab_size);
    r.output_tokens = 1 + next() % 6;
    out.push_back(std::move(r));
  }
  return out;
}

TEST(KvCache, ReleasedBlocksAndIdsAreReused) {
  KvCache kv(2, 4, 3, 3);
  const int a = kv.add_sequence(), b = kv.add_sequence();
  kv.extend(a, 9);  // 3 blocks
  kv.extend(b, 2);  // 1 block
  EXPECT_EQ(kv.allocated_blocks(), 4);
  kv.release(a);
  EXPECT_EQ(kv.used_blocks(), 1);
  EXPECT_EQ(kv.sequences(), 1);
  const int c = kv.add_sequence();
  EXPECT_EQ(c, a);  // the id comes back
  kv.extend(c, 12);
  EXPECT_EQ(kv.allocated_blocks(), 4);  // from the free list, not new
  EXPECT_EQ(kv.length(c), 12);
  EXPECT_THROW(kv.release(7), std::out_of_range);
  kv.preallocate(6);  // two more blocks, free
  EXPECT_EQ(kv.allocated_blocks(), 6);
  EXPECT_EQ(kv.used_blocks(), 4);
  kv.release(b);
  EXPECT_THROW(kv.release(b), std::out_of_range);
  EXPECT_THROW(kv.extend(b, 1), std::out_of_range);
}

// Qwen3.5's layout: only the attending layers hold pools; the others' pages are an error.
TEST(KvCache, OnlyCachedLayersHoldPools) {
  KvCache kv(std::vector<bool>{false, false, false, true}, 4, 3, 2);
  const int a = kv.add_sequence();
  kv.extend(a, 9);                                 // 3 blocks of 4 rows
  EXPECT_EQ(kv.bytes(), 1 * 3 * 4 * (3 + 2) * 4);  // one layer's pools
  EXPECT_EQ(kv.pages(3, a).tokens, 9);
  EXPECT_THROW(kv.pages(0, a), std::out_of_range);
  const std::vector<float> row(3 * 9, 1.0f);
  EXPECT_THROW(kv.write(1, a, 0, row.data(), row.data(), 9), std::out_of_range);
  kv.write(3, a, 0, row.data(), row.data(), 9);
  EXPECT_EQ(kv.pages(3, a).k_row(8)[2], 1.0f);
}

// 16 requests through a pool of 48 tokens (12 blocks of 4) and 7 rows per step:
// requests queue for KV room, prompts are chunked and mixed with decode rows.
// Each gets exactly the greedy tokens it gets run alone.
TEST(RunnerServe, ContinuousBatchingEqualsEachRequestAlone) {
  for (const char* family :
       {"llama", "deepseek_v3", "gpt_oss", "qwen3_moe", "qwen3_5_moe", "glm_moe_dsa", "minimax_m2", "kimi_k2_5"}) {
    const std::string dir = tiny_dir(family);
    const model::Model m = model::load_model(dir);
    const auto reqs = requests_for(m, 16);
    SelfCommunicator comm;
    Runner server(m, plan_for(m), comm, dir);
    ServeOptions o;
    o.kv_tokens = 48;
    o.token_budget = 7;
    o.max_running = 5;
    const ServeResult res = server.serve(reqs, o);
    ASSERT_EQ(res.tokens.size(), reqs.size());
    int64_t most_allocated = 0, most_running = 0;
    bool queued = false;
    for (const auto& smp : res.samples) {
      EXPECT_LE(smp.rows, 7);
      most_allocated = std::max(most_allocated, smp.kv_blocks_allocated);
      most_running = std::max(most_running, smp.running);
      queued = queued || (smp.waiting > 0 && smp.running > 0);
    }
    EXPECT_EQ(most_allocated, 12) << family;  // the whole pool from the start
    EXPECT_LE(most_running, 5) << family;
    EXPECT_TRUE(queued) << family;
    EXPECT_EQ(res.samples.back().kv_blocks_used, 0) << family;
    EXPECT_EQ(res.samples.back().finished, 16) << family;
    for (size_t i = 0; i < reqs.size(); ++i) {
      plan::Plan own;  // alone: the default KV blocks and prefill chunks
      own.model = m.config.source;
      own.dtypes.kv_cache = plan::KvDtype::fp32;  // as the server's
      Runner alone(m, own, comm, dir);
      const RunResult one = alone.run(reqs[i].prompt, reqs[i].output_tokens - 1);
      EXPECT_EQ(res.tokens[i], one.sequences.at(0).tokens) << family << " request " << i;
    }
  }
}

TEST(RunnerServe, RefusesWhatItCannotServe) {
  const std::string dir = tiny_dir("llama");
  const model::Model m = model::load_model(dir);
  SelfCommunicator comm;
  auto error_of = [&](const std::vector<ServeRequest>& reqs, const ServeOptions& o) -> std::string {
    try {
      Runner r(m, plan_for(m), comm, dir);
      r.serve(reqs, o);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({}, {}).find("no requests"), std::string::npos);
  EXPECT_NE(error_of({{{1, 2}, 0}}, {}).find("output tokens must be in [1, "), std::string::npos);
  EXPECT_NE(error_of({{{1, 999}, 1}}, {}).find("outside the vocabulary"), std::string::npos);
  EXPECT_NE(error_of({{std::vector<int64_t>(600, 1), 1}}, {}).find("max_position_embeddings 512"), std::string::npos);
  ServeOptions tiny;
  tiny.kv_tokens = 8;
  EXPECT_NE(error_of({{std::vector<int64_t>(20, 1), 1}}, tiny).find("needs 5 KV blocks"), std::string::npos);
}

}  // namespace
}  // namespace dayzero::executor
