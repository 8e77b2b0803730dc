#pragma once
// A user's overrides of an engine profile's settings: what `serve`'s flags and an
// engine settings file (`serve --engine-settings FILE`) set on top of the engine's
// defaults (serve/engine.h names where each default comes from). A setting left
// unset keeps the engine's default.
//
// The file is one JSON object; every field is optional:
//   {"token_budget": 16384,          vLLM --max-num-batched-tokens, SGLang
//                                    --chunked-prefill-size, TensorRT-LLM max_num_tokens
//    "max_running": 128,             --max-num-seqs, --max-running-requests, max_batch_size
//    "memory_fraction": 0.85,        --gpu-memory-utilization, --mem-fraction-static,
//                                    kv_cache_config.free_gpu_memory_fraction
//    "policy": "prefill_first",      or "mixed" (serve/engine.h, PrefillPolicy)
//    "chunked_prefill": true, "prefix_caching": false, "overlap_scheduling": true,
//    "recv_interval_steps": 10,      SGLang --scheduler-recv-interval
//    "kv_block_tokens": 64}          the paged cache's block (page) size
// Unknown fields, wrong types and values out of bounds are core::InputError naming
// the file, the field and the value.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "serve/engine.h"

namespace dayzero::serve {

struct EngineSettings {
  std::optional<int64_t> token_budget, max_running, recv_interval_steps, kv_block_tokens;
  std::optional<double> memory_fraction;
  std::optional<PrefillPolicy> policy;
  std::optional<bool> chunked_prefill, prefix_caching, overlap_scheduling;

  // Fields set in `over` replace this one's.
  void merge(const EngineSettings& over);
  bool empty() const;
};

// Bounds of the counts, so that a typo cannot ask for steps no engine runs.
inline constexpr int64_t kMaxTokenBudget = int64_t{1} << 24;
inline constexpr int64_t kMaxRunning = int64_t{1} << 20;
inline constexpr int64_t kMaxRecvInterval = 1000;
inline constexpr int64_t kMaxKvBlockTokens = 4096;

std::optional<PrefillPolicy> parse_prefill_policy(std::string_view s);

EngineSettings engine_settings_from_json(const nlohmann::json& j, const std::string& file);
EngineSettings load_engine_settings(const std::filesystem::path& file);
nlohmann::json engine_settings_to_json(const EngineSettings& s);

// The profile with the set fields replaced. The largest step the engine profiles its
// activations with follows the token budget, and the logits it samples at most the
// running sequences, as the engines size them.
EngineProfile apply(EngineProfile p, const EngineSettings& s);

}  // namespace dayzero::serve
