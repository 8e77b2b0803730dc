#pragma once
// The weights one rank holds: the checkpoint's safetensors files (model.safetensors,
// or model.safetensors.index.json + shards) memory-mapped, and only the tensors the
// rank needs looked up (zero-copy views; shards holding none of them are never
// opened). Small float vectors (norm weights, biases, sinks) are dequantized once
// and kept.

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "executor/tensor.h"
#include "executor/weight_convert.h"
#include "executor/weights.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace dayzero::executor {

// Reads one byte of every page of `bytes`, so the pages are resident before the
// first step (as an engine loads its weights before serving); returns its size.
int64_t touch_pages(std::span<const std::byte> bytes);

class WeightStore {
 public:
  // Opens `dir` and finds every name in `needed` (logical HF names: FP8 scale and
  // MXFP4 block/scale tensors are found beside them). Throws std::runtime_error
  // naming the directory, file or tensor when any is missing or malformed. With
  // `config`, each name is looked up as that checkpoint names it (model::checkpoint_name:
  // a multimodal wrapper's prefixes) and kept under DayZero's name.
  WeightStore(const std::filesystem::path& dir, const std::set<std::string>& needed, int64_t fp8_block_rows,
              int64_t fp8_block_cols, const model::ModelConfig* config = nullptr);
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  bool has(const std::string& name) const { return weights_.count(name) > 0; }
  // A needed weight; throws naming it when it was not asked for.
  const StoredWeight& get(const std::string& name) const;
  // The weight dequantized to float32, kept for the store's life.
  std::span<const float> floats(const std::string& name);

  // Converts a needed weight to `p` (bf16 or fp8: weight_convert.h) once; later get()s
  // return the converted weight. A weight already stored so is left as it is.
  // Throws std::invalid_argument for another precision.
  void convert(const std::string& name, model::WeightPrecision p);
  int64_t converted_bytes() const;  // bytes owned by converted weights (data and scales)

  // The names of the needed tensors.
  std::vector<std::string> names() const;

  int64_t mapped_bytes() const;        // stored bytes of the needed tensors (views into the mapped files)
  int64_t float_bytes() const;         // bytes of the dequantized copies held by floats()
  int64_t float_source_bytes() const;  // stored bytes of the weights floats() copied (read once, then unused)
  int64_t files_opened() const { return static_cast<int64_t>(files_.size()); }

 private:
  std::filesystem::path dir_;
  std::map<std::string, std::unique_ptr<model::SafetensorsFile>> files_;  // by file name
  std::map<std::string, StoredWeight> weights_;
  std::map<std::string, std::unique_ptr<Tensor>> floats_;
  std::map<std::string, std::unique_ptr<OwnedWeight>> converted_;
};

}  // namespace dayzero::executor
