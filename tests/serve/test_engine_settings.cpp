// serve/engine.h and serve/engine_settings.h: each engine's defaults as it ships them, the
// CUDA graph limit's rule, and a user's overrides applied over the defaults.
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
  s.adp_balance = true;
  s.adp_timeout_iters = 60;
  s.batch_wait_timeout_iters = 40;
  s.batch_wait_max_tokens_ratio = 0.8;
  s.separate_activation_quant = false;
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
  EXPECT_TRUE(p.adp_balance.on);
  EXPECT_EQ(p.adp_balance.timeout_iters, 60);
  EXPECT_EQ(p.adp_balance.batching_wait_iters, d.adp_balance.batching_wait_iters);  // not set: the default
  EXPECT_EQ(p.batch_waiting.timeout_iters, 40);
  EXPECT_DOUBLE_EQ(p.batch_waiting.max_tokens_ratio, 0.8);
  EXPECT_FALSE(p.separate_activation_quant);
  EXPECT_FALSE(engine_kernels(p).separate_activation_quant);
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

TEST(EngineProfiles, DefaultsAsTheEnginesShipThem) {
  const Deployment h200{143771.0 * 1024 * 1024, false, 8, 1, true};
  const EngineProfile v = default_profile(Engine::vllm, h200);
  EXPECT_EQ(v.token_budget, 8192);
  EXPECT_EQ(v.max_running, 1024);
  EXPECT_EQ(v.kv_block_tokens, 64);  // MLA on Hopper
  EXPECT_DOUBLE_EQ(v.memory.memory_fraction, 0.9);
  const EngineProfile s = default_profile(Engine::sglang, h200);
  EXPECT_EQ(s.policy, PrefillPolicy::prefill_first);
  // (143,771 - (512 + 1.5 x 8,192 + 2 x 512 + 1,024 x 8 / 8)) / 143,771 = 0.8967 -> 0.897
  EXPECT_DOUBLE_EQ(s.memory.memory_fraction, 0.897);
  EXPECT_TRUE(s.overlap_scheduling);
  EXPECT_TRUE(s.chunk_first_prompt_only);
  EXPECT_TRUE(s.future_tokens.on);
  EXPECT_FALSE(v.future_tokens.on);
  EXPECT_FALSE(default_profile(Engine::sglang, {h200.device_mem_bytes, false, 4, 2, true}).overlap_scheduling);  // pp 2
  EXPECT_FALSE(v.overlap_scheduling);
  const EngineProfile t = default_profile(Engine::trtllm, h200);
  EXPECT_TRUE(t.overlap_scheduling);
  EXPECT_TRUE(t.memory.share_of_free);
  EXPECT_FALSE(t.chunked_prefill);
  EXPECT_TRUE(t.reserve_whole_request);
  // CUDA graphs: vLLM's piecewise ones by tokens up to 512, SGLang's decode batches up to
  // 512 from TP 4 (256 below on an 80-160 GB GPU), TensorRT-LLM's up to 128.
  EXPECT_EQ(v.cuda_graph_max_batch, 512);
  EXPECT_TRUE(v.cuda_graph_counts_tokens);
  EXPECT_EQ(s.cuda_graph_max_batch, 512);
  EXPECT_FALSE(s.cuda_graph_counts_tokens);
  EXPECT_EQ(default_profile(Engine::sglang, {h200.device_mem_bytes, false, 1, 1, true}).cuda_graph_max_batch, 256);
  EXPECT_EQ(t.cuda_graph_max_batch, 128);
  // Block-FP8 activations quantized by kernels of their own: vLLM's and SGLang's linear
  // paths; not TensorRT-LLM's runs. The search takes them from the settings' engine.
  EXPECT_TRUE(v.separate_activation_quant);
  EXPECT_TRUE(s.separate_activation_quant);
  EXPECT_FALSE(t.separate_activation_quant);
  EngineSettings trt;
  trt.engine = Engine::trtllm;
  EXPECT_FALSE(engine_kernels(trt).separate_activation_quant);
  EXPECT_TRUE(engine_kernels(EngineSettings{}).separate_activation_quant);  // vLLM when none is named
  EXPECT_EQ(parse_engine("sglang"), Engine::sglang);
  EXPECT_FALSE(parse_engine("tgi").has_value());
}

// Which steps run past the CUDA graphs: decode-only steps of more tokens (vLLM's piecewise
// graphs: 513 decodes, not 512) or sequences (SGLang's and TensorRT-LLM's decode batches)
// than the limit; a step with a prompt chunk is never counted (the calibration's runs are
// full of them); a limit of 0 is graphs off.
TEST(EngineProfiles, StepsPastTheCudaGraphsRunEagerly) {
  EngineProfile v = default_profile(Engine::vllm);
  simulate::StepBatch prompt, decodes;
  prompt.prefills.push_back({1000, 0, true});
  decodes.decode_contexts.assign(512, 100);
  EXPECT_FALSE(runs_eagerly(v, prompt));
  EXPECT_FALSE(runs_eagerly(v, decodes));
  decodes.decode_contexts.push_back(100);
  EXPECT_TRUE(runs_eagerly(v, decodes));
  simulate::StepBatch mixed = decodes;
  mixed.prefills.push_back({16, 0, false});
  EXPECT_FALSE(runs_eagerly(v, mixed));
  decodes.decode_contexts.resize(256);
  decodes.decode_width = 3;  // speculative: 768 tokens a step for vLLM, 256 sequences for SGLang
  EXPECT_TRUE(runs_eagerly(v, decodes));
  EngineProfile s = default_profile(Engine::sglang);
  s.cuda_graph_max_batch = 256;
  EXPECT_FALSE(runs_eagerly(s, prompt));
  EXPECT_FALSE(runs_eagerly(s, decodes));
  decodes.decode_contexts.push_back(100);
  EXPECT_TRUE(runs_eagerly(s, decodes));
  s.cuda_graph_max_batch = 0;
  EXPECT_TRUE(runs_eagerly(s, decodes));
  EXPECT_FALSE(runs_eagerly(s, simulate::StepBatch{}));
}

}  // namespace
}  // namespace dayzero::serve
