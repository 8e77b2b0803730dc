#pragma once
// Synthetic checkpoints: random weights at a model's real shapes, dtypes and HF
// names, so plans can run and tests have models before real weights exist.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "model/config.h"

namespace dayzero::model {

// huggingface_hub's default max_shard_size, "5GB" in decimal units.
inline constexpr int64_t kDefaultMaxShardBytes = 5'000'000'000;

struct SynthOptions {
  int64_t layers = 0;     // keep only the first N decoder layers (0 = all)
  bool drop_mtp = false;  // leave the multi-token-prediction layers out (config and weights)
  uint64_t seed = 0;
  int64_t max_shard_bytes = kDefaultMaxShardBytes;
};

struct SynthResult {
  int64_t tensors = 0;
  int64_t bytes = 0;                         // tensor bytes, headers excluded
  std::vector<std::filesystem::path> files;  // shards (and the index when sharded)
};

// Writes config.json (the source config, with num_hidden_layers and per-layer
// lists cut to `layers`; with drop_mtp, num_nextn_predict_layers / mtp_num_hidden_layers
// set to 0) and the safetensors shards into `out_dir`. Values are a
// deterministic function of (seed, tensor name, element index): uniform weights of
// std 0.02, norms near 1, valid FP8 / MXFP4 codes with sensible scales.
SynthResult write_synthetic_checkpoint(const std::filesystem::path& config_path, const std::filesystem::path& out_dir,
                                       const SynthOptions& opts);

}  // namespace dayzero::model
