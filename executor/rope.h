#pragma once
// Rotary position embedding: the inverse-frequency table of each scaling the
// configs use (transformers' modeling_rope_utils.py ROPE_INIT_FUNCTIONS: default,
// llama3, yarn) and its application in either layout.

#include <cstdint>
#include <span>
#include <vector>

#include "executor/tensor.h"
#include "model/config.h"

namespace dayzero::executor {

struct RopeTable {
  std::vector<double> inv_freq;   // rot_dim / 2 frequencies (radians per position)
  double attention_factor = 1.0;  // multiplies cos and sin (yarn mscale)
};

// `rot_dim`: rotated features per head (head_dim; MLA: qk_rope_head_dim).
RopeTable rope_default(const model::RopeConfig& r, int64_t rot_dim);
RopeTable rope_llama3(const model::RopeConfig& r, int64_t rot_dim);
RopeTable rope_yarn(const model::RopeConfig& r, int64_t rot_dim);
using RopeTableFn = RopeTable (*)(const model::RopeConfig&, int64_t);

// yarn_get_mscale (YaRN paper; DeepSeek-V3 reference): 0.1 * mscale * ln(scale) + 1, 1 for scale <= 1.
double yarn_mscale(double scale, double mscale);

enum class RopeLayout {
  half,         // neox / rotate_half: pairs (i, i + d/2) (Llama, Qwen, Mixtral, gpt-oss)
  interleaved,  // pairs (2i, 2i + 1) (DeepSeek rope_interleave; GPT-J)
};

// Rotates, in place, features [offset, offset + rot_dim) of each of `heads`
// heads of `stride` features in every row of x ([tokens, heads * stride]); row t
// is at position positions[t]. Pair i turns by positions[t] * inv_freq[i].
void apply_rope(Tensor& x, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t> positions,
                const RopeTable& table, RopeLayout layout);

}  // namespace dayzero::executor
