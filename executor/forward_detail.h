#pragma once
// Helpers shared by the forward's source files (forward*.cpp); not an interface.

#include <algorithm>
#include <cstdint>
#include <string>

#include "executor/tensor.h"
#include "model/model.h"

namespace dayzero::executor::detail {

// A per-expert weight name pattern ("...experts.{e}.w1") with expert e substituted.
inline std::string substitute(const std::string& pattern, int64_t e) {
  const auto at = pattern.find("{e}");
  return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(e) + pattern.substr(at + 3);
}
inline bool per_expert(const std::string& pattern) { return pattern.find("{e}") != std::string::npos; }
// An expert_gemm op as one expert's call (the inventory's op covers top-k experts per token).
inline model::Op one_expert(const model::Op& op) {
  model::Op o = op;
  o.weight_bytes = op.experts > 0 ? op.weight_bytes / op.experts : op.weight_bytes;
  o.experts = o.active_experts = 1;
  return o;
}

// The MLA latents' RMSNorms (q_a_layernorm, kv_a_layernorm) use 1e-6 whatever the config's
// rms_norm_eps: the RMSNorm default in DeepSeek-V3's reference and in transformers'
// DeepseekV3Attention / GlmMoeDsaAttention (GLM-5's rms_norm_eps is 1e-5).
inline constexpr double kMlaLatentNormEps = 1e-6;

// Qwen3.5's q_proj output holds, per head, its query then its output gate (head_dim
// each): q becomes the queries [T, heads * head_dim], gate the gates (same shape).
inline void split_query_gate(Tensor& q, Tensor& gate, int64_t head_dim,
                             Tensor (*columns_of)(const Tensor&, int64_t, int64_t)) {
  const int64_t T = q.rows(), heads = q.cols() / (2 * head_dim);
  Tensor per_head = q;  // a copy shares a device's values: each head's [query | gate] a row
  per_head.shape = {T * heads, 2 * head_dim};
  gate = columns_of(per_head, head_dim, head_dim);
  q = columns_of(per_head, 0, head_dim);
  gate.shape = q.shape = {T, heads * head_dim};
}

}  // namespace dayzero::executor::detail
