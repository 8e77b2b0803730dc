#pragma once
// The serving engine a plan is run with and the user's overrides of its settings:
// the vocabulary the serving simulation (serve/engine.h, which holds each engine's
// sourced defaults), scenarios (their "engine" object) and `serve`'s flags share.
//
// As JSON, one object; every field is optional:
//   {"name": "sglang",                vllm, sglang or trtllm
//    "token_budget": 16384,           vLLM --max-num-batched-tokens, SGLang
//                                     --chunked-prefill-size, TensorRT-LLM max_num_tokens
//    "max_running": 128,              --max-num-seqs, --max-running-requests, max_batch_size
//    "memory_fraction": 0.85,         --gpu-memory-utilization, --mem-fraction-static,
//                                     kv_cache_config.free_gpu_memory_fraction
//    "policy": "prefill_first",       or "mixed"
//    "chunked_prefill": true, "prefix_caching": false, "overlap_scheduling": true,
//    "two_batch_overlap": true,       SGLang --enable-two-batch-overlap, vLLM --enable-dbo
//    "separate_activation_quant": false,  block-FP8 GEMMs' activations quantized by kernels
//                                     of their own (serve/engine.h; vLLM and SGLang: true)
//    "recv_interval_steps": 10,       SGLang --scheduler-recv-interval
//    "kv_block_tokens": 64,           the paged cache's block (page) size
//    "cuda_graph_max_batch": 512,     the largest step run as a captured CUDA graph:
//                                     sequences (SGLang --cuda-graph-max-bs, TensorRT-LLM
//                                     cuda_graph_config.max_batch_size) or tokens (vLLM
//                                     --max-cudagraph-capture-size); 0: graphs off
//    "adp_balance": true,             TensorRT-LLM's attention_dp_config: enable_balance,
//    "adp_timeout_iters": 60,         timeout_iters and batching_wait_iters (a plan with
//    "adp_batching_wait_iters": 0,    attention DP; serve/engine.h, AttentionDpBalance)
//    "batch_wait_timeout_iters": 40,  TensorRT-LLM's batch_wait_timeout_iters and
//    "batch_wait_max_tokens_ratio": 0.8}  batch_wait_max_tokens_ratio (in [0, 1]; a plan
//                                     without attention DP; serve/engine.h, BatchWaiting)
// Unknown fields, wrong types and values out of bounds are core::InputError naming
// the file, the field and the value.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace dayzero::plan {

enum class Engine { vllm, sglang, trtllm };
inline constexpr Engine kAllEngines[] = {Engine::vllm, Engine::sglang, Engine::trtllm};
std::string_view engine_name(Engine e);  // "vllm", "sglang", "trtllm"
std::optional<Engine> parse_engine(std::string_view s);

// How a step mixes new prompts with running decodes.
enum class PrefillPolicy {
  // Chunked prefill inside decode steps: running sequences first (one token each),
  // then prompt chunks fill the rest of the token budget (vLLM V1, TensorRT-LLM).
  mixed,
  // A step of prompt chunks alone whenever new requests can be admitted; decode
  // steps otherwise (SGLang without --enable-mixed-chunk).
  prefill_first,
};
inline constexpr PrefillPolicy kAllPrefillPolicies[] = {PrefillPolicy::mixed, PrefillPolicy::prefill_first};
std::string_view prefill_policy_name(PrefillPolicy p);
std::optional<PrefillPolicy> parse_prefill_policy(std::string_view s);

struct EngineSettings {
  std::optional<Engine> engine;
  std::optional<int64_t> token_budget, max_running, recv_interval_steps, kv_block_tokens, cuda_graph_max_batch;
  std::optional<double> memory_fraction;
  std::optional<PrefillPolicy> policy;
  std::optional<bool> chunked_prefill, prefix_caching, overlap_scheduling, two_batch_overlap;
  std::optional<bool> separate_activation_quant;
  std::optional<bool> adp_balance;
  std::optional<int64_t> adp_timeout_iters, adp_batching_wait_iters;
  std::optional<int64_t> batch_wait_timeout_iters;
  std::optional<double> batch_wait_max_tokens_ratio;

  // Fields set in `over` replace this one's.
  void merge(const EngineSettings& over);
  bool empty() const;
};

// Bounds of the counts, so that a typo cannot ask for steps no engine runs.
inline constexpr int64_t kMaxTokenBudget = int64_t{1} << 24;
inline constexpr int64_t kMaxRunning = int64_t{1} << 20;
inline constexpr int64_t kMaxRecvInterval = 1000;
inline constexpr int64_t kMaxKvBlockTokens = 4096;
inline constexpr int64_t kMaxAdpIters = 100000;  // attention-DP balancing's and batch waiting's waits, in steps

// `path` prefixes field names in messages ("engine." inside a scenario).
EngineSettings engine_settings_from_json(const nlohmann::json& j, const std::string& file,
                                         const std::string& path = "");
EngineSettings load_engine_settings(const std::filesystem::path& file);
nlohmann::json engine_settings_to_json(const EngineSettings& s);

}  // namespace dayzero::plan
