#pragma once
// What a checkpoint of a model must hold, and a check of a checkpoint directory
// against it that reads only the safetensors headers.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/dtype.h"
#include "model/model.h"

namespace dayzero::model {

// One tensor as it appears in the safetensors files.
struct TensorSpec {
  std::string name;
  DType dtype = DType::bf16;
  std::vector<int64_t> shape;
  bool scale = false;              // a quantization scale (FP8 scale_inv, MXFP4 scales)
  const Weight* weight = nullptr;  // the logical weight it stores (part of)
  int64_t bytes() const;
};

// Every tensor of the checkpoint in HF naming, per expert where the checkpoint
// names experts one by one: FP8 `weight_scale_inv`, MXFP4 `_blocks`/`_scales`,
// MTP layers (when the config has them), no lm_head when tied.
std::vector<TensorSpec> expected_tensors(const Model& m);

// The checkpoint's name of the weight DayZero calls `logical` (ModelConfig::naming:
// "model.layers.0.x" -> "language_model.model.layers.0.x" in Kimi-K2.5's wrapper).
std::string checkpoint_name(const ModelConfig& c, const std::string& logical);
// A tensor of a multimodal wrapper's other parts (its vision encoder, projector).
bool other_modality(const ModelConfig& c, const std::string& tensor);

struct TensorMismatch {
  std::string name;
  std::string expected;
  std::string found;
  std::string file;
};

struct CheckReport {
  int64_t shards = 0;
  int64_t tensors_expected = 0;
  int64_t tensors_found = 0;
  std::vector<std::string> missing;
  std::vector<std::string> unexpected;
  int64_t other_modality_tensors = 0;  // a wrapper's vision encoder etc.: present, not checked
  int64_t other_modality_bytes = 0;
  std::vector<TensorMismatch> misshaped;
  std::vector<TensorMismatch> wrong_dtype;
  std::vector<std::string> file_errors;                    // unreadable or corrupt shards, bad index
  std::map<std::string, int64_t> expected_bytes_by_dtype;  // safetensors dtype name -> bytes
  std::map<std::string, int64_t> found_bytes_by_dtype;
  bool ok() const;
};

// Checks `dir` (config.json + model.safetensors, or an index + shards) against `m`.
// Problems are collected, not thrown: a corrupt shard is one entry of file_errors,
// and its tensors count as missing.
CheckReport check_checkpoint(const Model& m, const std::filesystem::path& dir);

}  // namespace dayzero::model
