// serve/engine_settings.h: a user's overrides applied over an engine's defaults.
#include "serve/engine_settings.h"

#include <gtest/gtest.h>

namespace dayzero::serve {
namespace {

TEST(EngineSettings, SetFieldsReplaceTheDefaultsAndTheRestStay) {
  const EngineProfile d = default_profile(Engine::sglang);
  EngineSettings s;
  s.token_budget = 4096;
  s.max_running = 8;
  s.memory_fraction = 0.6;
  s.policy = PrefillPolicy::mixed;
  s.prefix_caching = false;
  s.recv_interval_steps = 10;
  s.cuda_graph_max_batch = 64;
  const EngineProfile p = apply(d, s);
  EXPECT_EQ(p.token_budget, 4096);
  EXPECT_EQ(p.memory.step_tokens, 4096);  // the engine profiles its activations with its largest step
  EXPECT_EQ(p.max_running, 8);
  EXPECT_EQ(p.memory.logit_rows, 8);  // at most the running sequences are sampled
  EXPECT_DOUBLE_EQ(p.memory.memory_fraction, 0.6);
  EXPECT_EQ(p.policy, PrefillPolicy::mixed);
  EXPECT_FALSE(p.prefix_caching);
  EXPECT_EQ(p.recv_interval_steps, 10);
  EXPECT_EQ(p.cuda_graph_max_batch, 64);
  EXPECT_EQ(p.chunked_prefill, d.chunked_prefill);  // not set: the default
  EXPECT_EQ(p.kv_block_tokens, d.kv_block_tokens);
  EXPECT_EQ(p.overlap_scheduling, d.overlap_scheduling);
  // Nothing set: the profile as it was.
  const EngineProfile same = apply(d, EngineSettings{});
  EXPECT_EQ(same.token_budget, d.token_budget);
  EXPECT_EQ(same.memory.step_tokens, d.memory.step_tokens);
  EXPECT_EQ(same.max_running, d.max_running);
  EXPECT_EQ(same.cuda_graph_max_batch, d.cuda_graph_max_batch);
}

}  // namespace
}  // namespace dayzero::serve
