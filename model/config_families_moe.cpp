// Readers for the MoE families of late 2025 / 2026: MiniMax-M2 (MiniMaxM2Config in
// MiniMaxAI's configuration_minimax_m2.py), Qwen3.5-MoE (transformers'
// Qwen3_5MoeTextConfig; the linear attention is Qwen3-Next's gated delta-net) and GLM-5
// (transformers' GlmMoeDsaConfig: DeepSeek-V3's MLA and MoE plus DeepSeek-V3.2's
// sparse-attention indexer). Defaults for omitted keys follow those classes.
#include "model/config_parse.h"

namespace dayzero::model::detail {

namespace {

// Shared experts given as one total width (Qwen's shared_expert_intermediate_size,
// MiniMax's shared_intermediate_size) are modelled as whole experts of the routed width.
void read_shared_width(Fields& f, ModelConfig& c, const std::string& key) {
  const int64_t width = f.opt_int(key, 0, 0, kMaxFfnWidth);
  if (width == 0) return;
  if (width % c.moe.expert_intermediate != 0)
    f.fail_value(key, std::to_string(width),
                 "is not a multiple of the routed experts' width " + std::to_string(c.moe.expert_intermediate));
  c.moe.num_shared_experts = width / c.moe.expert_intermediate;
}

DType read_state_dtype(Fields& f) {
  const std::string s = f.opt_string("mamba_ssm_dtype", "float32");
  const auto t = dtype_from_torch(s);
  if (!t) f.fail_value("mamba_ssm_dtype", "\"" + s + "\"", "unsupported dtype (float32, bfloat16, float16)");
  return *t;
}

}  // namespace

void read_minimax_m2(Fields& f, ModelConfig& c) {
  c.attention = AttentionKind::gqa;
  read_rope(f, c, 1e6, false);  // MiniMaxM2Config: rope_theta 1e6
  c.rotary_dim = f.opt_int("rotary_dim", c.head_dim, 2, c.head_dim);
  if (c.rotary_dim % 2 != 0) f.fail_value("rotary_dim", std::to_string(c.rotary_dim), "must be even");
  c.qk_norm = f.opt_bool("use_qk_norm", true);
  const std::string norm_type = f.opt_string("qk_norm_type", "per_layer");
  if (norm_type != "per_layer" && norm_type != "per_head")
    f.fail_value("qk_norm_type", "\"" + norm_type + "\"", "unknown q/k norm type (per_layer, per_head)");
  c.qk_norm_whole = c.qk_norm && norm_type == "per_layer";
  c.qkv_bias = c.o_bias = f.opt_bool("attention_bias", false);
  auto& m = c.moe;
  m.num_experts = f.req_int("num_local_experts", 1, kMaxExperts);
  m.experts_per_token = f.req_int("num_experts_per_tok", 1, kMaxExperts);
  m.expert_intermediate = f.req_int("intermediate_size", 1, kMaxFfnWidth);  // each expert's width
  read_shared_width(f, c, "shared_intermediate_size");
  m.scoring_func = f.opt_string("scoring_func", "sigmoid");
  if (m.scoring_func != "sigmoid" && m.scoring_func != "softmax")
    f.fail_value("scoring_func", "\"" + m.scoring_func + "\"", "unknown scoring function (sigmoid, softmax)");
  m.score_correction_bias = f.opt_bool("use_routing_bias", true);  // e_score_correction_bias
  m.topk_method = m.score_correction_bias ? "noaux_tc" : "greedy";
  m.norm_topk_prob = true;  // vLLM's MiniMaxM2MoE: FusedMoE(renormalize=True)
  c.intermediate_size = 0;
  // MTP modules (use_mtp, num_mtp_modules) are not in the published checkpoint's weight
  // map, so they are not counted: mtp_layers stays 0.
  read_layer_attention(f, c, false);
}

void read_qwen3_5_moe(Fields& f, ModelConfig& c) {
  c.attention = AttentionKind::gqa;
  c.qk_norm = true;
  c.qkv_bias = c.o_bias = f.opt_bool("attention_bias", false);
  c.attn_output_gate = f.opt_bool("attn_output_gate", true);
  read_rope(f, c, 1e7, false);  // Qwen3_5MoeTextConfig: rope_theta 1e7, partial_rotary_factor 0.25
  if (c.rotary_dim == 0 && !f.has("rope_parameters")) c.rotary_dim = c.head_dim / 4;
  auto& l = c.linear;
  l.key_heads = f.req_int("linear_num_key_heads", 1, kMaxHeads);
  l.value_heads = f.req_int("linear_num_value_heads", 1, kMaxHeads);
  l.key_head_dim = f.req_int("linear_key_head_dim", 1, kMaxHeadDim);
  l.value_head_dim = f.req_int("linear_value_head_dim", 1, kMaxHeadDim);
  l.conv_kernel = f.opt_int("linear_conv_kernel_dim", 4, 2, 64);
  l.state_dtype = read_state_dtype(f);
  if (l.value_heads % l.key_heads != 0)
    f.fail_value("linear_num_value_heads", std::to_string(l.value_heads),
                 "must be a multiple of linear_num_key_heads = " + std::to_string(l.key_heads));
  auto& m = c.moe;
  m.num_experts = f.req_int("num_experts", 1, kMaxExperts);
  m.experts_per_token = f.req_int("num_experts_per_tok", 1, kMaxExperts);
  m.expert_intermediate = f.req_int("moe_intermediate_size", 1, kMaxFfnWidth);
  m.layer_freq = f.opt_int("decoder_sparse_step", 1, 1, kMaxLayers);
  m.dense_layers = f.opt_ints("mlp_only_layers", 0, c.num_layers - 1);
  if (static_cast<int64_t>(m.dense_layers.size()) > c.num_layers)
    f.fail("mlp_only_layers", "has more entries than layers");
  m.norm_topk_prob = f.opt_bool("norm_topk_prob", true);
  read_shared_width(f, c, "shared_expert_intermediate_size");
  m.shared_expert_gate = m.num_shared_experts > 0;
  bool any_dense = false;
  for (int64_t i = 0; i < c.num_layers; ++i) any_dense = any_dense || !c.is_moe_layer(i);
  c.intermediate_size =
      any_dense ? f.req_int("intermediate_size", 1, kMaxFfnWidth) : f.opt_int("intermediate_size", 0, 0, kMaxFfnWidth);
  c.mtp_layers = f.opt_int("mtp_num_hidden_layers", 0, 0, kMaxLayers);
  if (c.mtp_layers > 0 && f.opt_bool("mtp_use_dedicated_embeddings", false))
    f.fail_value("mtp_use_dedicated_embeddings", "true", "MTP layers with their own embedding are not modelled");
  if (!f.has("layer_types")) {
    // Qwen3_5MoeTextConfig: a full-attention layer every full_attention_interval layers.
    const int64_t every = f.opt_int("full_attention_interval", 4, 1, kMaxLayers);
    c.layer_attention.assign(static_cast<size_t>(c.num_layers), LayerAttention::linear);
    for (int64_t i = every - 1; i < c.num_layers; i += every)
      c.layer_attention[static_cast<size_t>(i)] = LayerAttention::full;
  } else {
    read_layer_attention(f, c, false);
  }
}

// GlmMoeDsaConfig and DeepSeek-V3.2's config (DeepseekV32ForCausalLM): DeepSeek-V3's keys
// and the indexer's (index_n_heads, index_head_dim, index_topk), the same names in both.
void read_mla_dsa(Fields& f, ModelConfig& c) {
  read_deepseek(f, c);  // MLA, MoE, MTP: DeepSeek-V3's keys and defaults
  if (f.has("qk_head_dim")) {
    const int64_t qk = f.req_int("qk_head_dim", 1, kMaxHeadDim);
    if (qk != c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim)
      f.fail_value("qk_head_dim", std::to_string(qk),
                   "must equal qk_nope_head_dim + qk_rope_head_dim = " +
                       std::to_string(c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim));
  }
  auto& x = c.indexer;
  x.heads = f.req_int("index_n_heads", 1, kMaxHeads);
  x.head_dim = f.req_int("index_head_dim", 1, kMaxHeadDim);
  x.topk = f.req_int("index_topk", 1, kMaxPositions);
  if (c.mla.q_lora_rank == 0)
    f.fail("q_lora_rank", "the sparse-attention indexer projects its queries from q_lora_rank");
  if (x.head_dim < c.mla.qk_rope_head_dim)
    f.fail_value("index_head_dim", std::to_string(x.head_dim),
                 "is smaller than the rotary part qk_rope_head_dim = " + std::to_string(c.mla.qk_rope_head_dim));
}

}  // namespace dayzero::model::detail
