#pragma once
// The weights a checkpoint of a given architecture holds, in Hugging Face naming,
// as logical tensors with their storage format. Per-expert tensors appear once
// with `{e}` in the name and `copies` = number of experts, so a 1000-expert model
// stays a short list. Parameter counts and bytes are computed from this list.

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "model/config.h"
#include "model/dtype.h"

namespace dayzero::model {

// What a weight belongs to; used for counts, sharding and quantization policy.
enum class Part { embedding, head, attention, dense_mlp, router, experts, shared_experts, norm, mtp_proj };
std::string_view part_name(Part p);

struct Weight {
  std::string name;            // HF name; "{e}" stands for the expert index
  std::vector<int64_t> shape;  // logical shape (PyTorch nn.Linear layout [out, in])
  Part part = Part::norm;
  int64_t layer = -1;        // decoder layer index, -1 for model-level tensors
  int64_t copies = 1;        // tensors that share this name pattern ({e} = 0..copies-1)
  int64_t experts = 1;       // routed experts this weight spans (copies or a fused leading dim)
  bool mtp = false;          // belongs to a multi-token-prediction module
  bool matrix = false;       // a projection matrix: weight-only quantization converts it
  bool input_major = false;  // stored [.., in, out] (gpt-oss unquantized fused experts)
  StorageFormat stored;      // how the checkpoint stores it (scales included)

  int64_t params() const;                         // elements over all copies
  int64_t bytes(const StorageFormat& fmt) const;  // all copies, scales included
  int64_t stored_bytes() const { return bytes(stored); }
};

// All weights of the model, MTP modules included (flagged), in checkpoint order:
// embeddings, decoder layers, MTP layers, final norm, head.
// Throws core::InputError if a size overflows 64 bits.
std::vector<Weight> model_weights(const ModelConfig& c);

// The name prefix of decoder layer `layer` ("model.layers.3."); MTP modules follow the
// decoder layers (DeepSeek's numbering) or sit under "mtp.layers.i." (Qwen3.5).
std::string layer_prefix(const ModelConfig& c, int64_t layer);

// True if `name` is covered by one of HF's `modules_to_not_convert` patterns
// (a module path, `*` matching one path component, matched at dot boundaries).
bool matches_module_pattern(const std::string& name, const std::string& pattern);

// Whether a pattern has a glob character: `*`, `?`, `[` or a backslash.
bool is_glob_pattern(const std::string& pattern);

// A `modules_to_not_convert` list prepared for matching every weight name of a model.
// Literal patterns (no glob character) sit in a hash set, looked up once per run of
// consecutive components of the name (k(k+1)/2 lookups for k components, whatever the
// list's length); only glob patterns are tried one by one, and
// parse_config bounds how many there are (kMaxModuleGlobs).
class ModulePatterns {
 public:
  explicit ModulePatterns(const std::vector<std::string>& patterns);
  bool matches(const std::string& name) const;  // as matches_module_pattern with any pattern

 private:
  std::unordered_set<std::string> literals_;
  std::vector<std::vector<std::string>> globs_;  // split at dots once, not per weight
};

}  // namespace dayzero::model
