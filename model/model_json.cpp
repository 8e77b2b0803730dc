#include "model/model_json.h"

#include <nlohmann/json.hpp>

namespace dayzero::model {

void to_json(nlohmann::json& j, const Op& op) {
  j = nlohmann::json{{"name", op.name},
                     {"kind", op_kind_name(op.kind)},
                     {"part", part_name(op.part)},
                     {"tp_split", tp_split_name(op.tp_split)},
                     {"n", op.n},
                     {"k", op.k},
                     {"params", op.params},
                     {"active_params", op.active_params},
                     {"weight_bytes", op.weight_bytes},
                     {"flops_per_token", op.flops_per_token()},
                     {"activation_bytes_per_token", op.activation_bytes_per_token()},
                     {"weights", op.weights}};
  if (op.heads > 0) j["heads"] = op.heads;
  if (op.kind == OpKind::expert_gemm || op.kind == OpKind::router) {
    j["experts"] = op.experts;
    j["active_experts"] = op.active_experts;
  }
  if (op.kind == OpKind::attention) {
    const auto& a = op.attn;
    j["attention"] = {{"kind", a.kind == AttentionKind::mla ? "mla" : "gqa"},
                      {"heads", a.heads},
                      {"kv_heads", a.kv_heads},
                      {"qk_head_dim", a.qk_head_dim},
                      {"v_head_dim", a.v_head_dim},
                      {"window", a.window},
                      {"sinks", a.sinks},
                      {"kv_elems_per_token", a.kv_elems_per_token},
                      {"flops_per_token_per_ctx_token", a.flops_per_ctx_token(false)}};
    if (a.kind == AttentionKind::mla) {
      j["attention"]["kv_lora_rank"] = a.kv_lora_rank;
      j["attention"]["rope_dim"] = a.rope_dim;
      j["attention"]["flops_per_token_per_ctx_token_absorbed"] = a.flops_per_ctx_token(true);
    }
  }
}

void to_json(nlohmann::json& j, const Layer& layer) {
  j = nlohmann::json{{"index", layer.index},
                     {"ffn", layer.moe ? "moe" : "dense"},
                     {"attention_span", layer.attention == LayerAttention::sliding  ? "sliding"
                                        : layer.attention == LayerAttention::linear ? "linear"
                                                                                    : "full"},
                     {"mtp", layer.mtp},
                     {"ops", layer.ops}};
}

namespace {
nlohmann::json bytes_by_precision(const Model& m, bool mtp) {
  nlohmann::json j;
  for (WeightPrecision p : kAllPrecisions) j[std::string(precision_name(p))] = m.weights_bytes(p, mtp);
  return j;
}
}  // namespace

void to_json(nlohmann::json& j, const Model& m) {
  const ModelConfig& c = m.config;
  j = nlohmann::json{{"source", c.source},
                     {"architecture", c.architecture},
                     {"family", family_name(c.family)},
                     {"display_family", c.display_family()},
                     {"model_type", c.model_type},
                     {"num_layers", c.num_layers},
                     {"mtp_layers", c.mtp_layers},
                     {"hidden_size", c.hidden_size},
                     {"num_heads", c.num_heads},
                     {"num_kv_heads", c.num_kv_heads},
                     {"head_dim", c.head_dim},
                     {"intermediate_size", c.intermediate_size},
                     {"vocab_size", c.vocab_size},
                     {"tie_word_embeddings", c.tie_word_embeddings},
                     {"attention", c.attention == AttentionKind::mla ? "mla" : "gqa"},
                     {"sliding_window", c.sliding_window}};
  if (c.attention == AttentionKind::mla)
    j["mla"] = {{"q_lora_rank", c.mla.q_lora_rank},
                {"kv_lora_rank", c.mla.kv_lora_rank},
                {"qk_nope_head_dim", c.mla.qk_nope_head_dim},
                {"qk_rope_head_dim", c.mla.qk_rope_head_dim},
                {"v_head_dim", c.mla.v_head_dim}};
  if (c.is_moe()) {
    int64_t moe_layers = 0;
    for (int64_t i = 0; i < c.num_layers; ++i) moe_layers += c.is_moe_layer(i) ? 1 : 0;
    j["moe"] = {{"num_experts", c.moe.num_experts},
                {"experts_per_token", c.moe.experts_per_token},
                {"expert_intermediate", c.moe.expert_intermediate},
                {"num_shared_experts", c.moe.num_shared_experts},
                {"moe_layers", moe_layers},
                {"dense_layers", c.num_layers - moe_layers},
                {"routed_scaling_factor", c.moe.routed_scaling_factor},
                {"n_group", c.moe.n_group},
                {"topk_group", c.moe.topk_group},
                {"scoring_func", c.moe.scoring_func},
                {"topk_method", c.moe.topk_method},
                {"norm_topk_prob", c.moe.norm_topk_prob}};
  }
  j["quantization"] = c.quant.method == QuantMethod::none ? std::string("none") : c.quant.format.describe();
  j["params_total"] = m.params_total();
  j["params_active"] = m.params_active();
  j["params_embedding"] = m.params_embedding();
  j["params_head"] = m.params_head();
  j["params_mtp"] = m.params_mtp();
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& [part, n] : m.params_by_part()) parts[std::string(part_name(part))] = n;
  j["params_by_part"] = parts;
  j["weights_bytes"] = bytes_by_precision(m, false);
  j["mtp_weights_bytes"] = bytes_by_precision(m, true);
  j["kv_bytes_per_token"] = {{"bf16", m.kv_bytes_per_token(2)}, {"fp8", m.kv_bytes_per_token(1)}};
  j["indexer_bytes_per_token"] = m.indexer_bytes_per_token();         // sparse attention's FP8 keys
  j["linear_state_bytes_per_seq"] = m.linear_state_bytes_per_seq(2);  // linear attention, conv window bf16
  j["layers_by_attention"] = {{"full", m.layers_of(LayerAttention::full)},
                              {"sliding", m.layers_of(LayerAttention::sliding)},
                              {"linear", m.layers_of(LayerAttention::linear)}};
  j["model_ops"] = {{"pre", m.pre_ops}, {"post", m.post_ops}};
  j["layers"] = m.layers;
}

}  // namespace dayzero::model
