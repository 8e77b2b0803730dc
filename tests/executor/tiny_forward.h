#pragma once
// Test-only single-rank forward of the GQA families (Llama, Qwen3, Mixtral,
// Qwen3-MoE, gpt-oss) and DeepSeek-V3 (MLA) built from the CPU kernels, with a KV cache, reading the weights
// zero-copy from model.safetensors. A check of the kernels against the reference
// goldens, not the executor's runner (issue 7 builds that).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/registry.h"
#include "model/model.h"
#include "model/safetensors.h"

namespace dayzero::executor::testing {

class TinyForward {
 public:
  explicit TinyForward(const std::filesystem::path& dir)
      : model_(model::load_model(dir)), file_(dir / "model.safetensors") {
    std::ifstream in(dir / "config.json");
    eps_ = nlohmann::json::parse(in).at("rms_norm_eps").get<double>();  // not (yet) in ModelConfig
    const auto& c = model_.config;
    const bool mla = c.attention == model::AttentionKind::mla;
    rope_ = cpu_kernel<RopeTableFn>(model::OpKind::rope, c.rope.type)(c.rope, mla ? c.mla.qk_rope_head_dim : c.head_dim);
    k_cache_.resize(static_cast<size_t>(c.num_layers));
    v_cache_.resize(static_cast<size_t>(c.num_layers));
  }

  // Runs `tokens` at positions start.. (the cache must hold exactly `start` tokens);
  // returns logits [tokens, vocab].
  Tensor step(const std::vector<int64_t>& tokens, int64_t start) {
    const auto& c = model_.config;
    std::vector<int64_t> pos;
    for (size_t i = 0; i < tokens.size(); ++i) pos.push_back(start + static_cast<int64_t>(i));
    Tensor x = embedding(w("model.embed_tokens.weight"), tokens);
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      Tensor h = x;
      rms_norm(h, vec(p + "input_layernorm.weight"), eps_);
      add(x, attention_block(h, p, l, pos));
      h = x;
      rms_norm(h, vec(p + "post_attention_layernorm.weight"), eps_);
      add(x, c.is_moe_layer(l) ? moe_block(h, p) : mlp(h, p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight", 0));
    }
    rms_norm(x, vec("model.norm.weight"), eps_);
    return gemm(x, c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  }

 private:
  StoredWeight w(const std::string& name) const { return find_weight(file_, name); }
  std::span<const float> vec(const std::string& name) {
    auto t = std::make_unique<Tensor>(dequantize(w(name)));
    held_.push_back(std::move(t));
    return held_.back()->data;
  }
  Tensor gemm(const Tensor& x, const std::string& name, int64_t index = 0, model::OpKind kind = model::OpKind::gemm) {
    const StoredWeight sw = w(name);
    const std::string variant = sw.kind == model::StorageKind::plain ? (sw.dtype == model::DType::f32 ? "f32" : "bf16")
                                                                     : "fp8_block";
    // A module's bias, when the checkpoint has one ("x.weight" -> "x.bias").
    std::span<const float> bias;
    const std::string stem = name.size() > 7 ? name.substr(0, name.size() - 7) : "";
    if (name.ends_with(".weight") && file_.find(stem + ".bias")) bias = vec(stem + ".bias");
    return cpu_kernel<GemmFn>(kind, variant)(x, sw, index, bias);
  }
  static void add(Tensor& x, const Tensor& y) {
    for (int64_t i = 0; i < x.numel(); ++i) x.data[i] += y.data[i];
  }
  static void append(Tensor& cache, const Tensor& rows) {
    if (cache.shape.empty()) cache.shape = {0, rows.cols()};
    cache.data.insert(cache.data.end(), rows.data.begin(), rows.data.end());
    cache.shape[0] += rows.rows();
  }

  // DeepSeek MLA: the cache holds the normalized latent (k_cache_) and the rotated rope key (v_cache_).
  Tensor mla_block(Tensor& h, const std::string& p, int64_t layer, const std::vector<int64_t>& pos) {
    const auto& c = model_.config;
    const auto& m = c.mla;
    Tensor q;
    if (m.q_lora_rank > 0) {
      Tensor qa = gemm(h, p + "self_attn.q_a_proj.weight");
      rms_norm(qa, vec(p + "self_attn.q_a_layernorm.weight"), eps_);
      q = gemm(qa, p + "self_attn.q_b_proj.weight");
    } else {
      q = gemm(h, p + "self_attn.q_proj.weight");
    }
    const Tensor ckv = gemm(h, p + "self_attn.kv_a_proj_with_mqa.weight");
    Tensor latent({ckv.rows(), m.kv_lora_rank}), k_rope({ckv.rows(), m.qk_rope_head_dim});
    for (int64_t t = 0; t < ckv.rows(); ++t) {
      std::copy(ckv.row(t), ckv.row(t) + m.kv_lora_rank, latent.row(t));
      std::copy(ckv.row(t) + m.kv_lora_rank, ckv.row(t) + ckv.cols(), k_rope.row(t));
    }
    rms_norm(latent, vec(p + "self_attn.kv_a_layernorm.weight"), eps_);
    const auto layout = c.rope.interleaved ? RopeLayout::interleaved : RopeLayout::half;
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    apply_rope(q, c.num_heads, qk, m.qk_nope_head_dim, pos, rope_, layout);
    apply_rope(k_rope, 1, m.qk_rope_head_dim, 0, pos, rope_, layout);
    append(k_cache_[layer], latent);
    append(v_cache_[layer], k_rope);
    MlaParams a{c.num_heads, m.qk_nope_head_dim, m.qk_rope_head_dim, m.kv_lora_rank, m.v_head_dim, mla_softmax_scale(c)};
    const Tensor o = cpu_kernel<MlaFn>(model::OpKind::attention, "mla")(q, pos, k_cache_[layer], v_cache_[layer],
                                                                         w(p + "self_attn.kv_b_proj.weight"), a);
    return gemm(o, p + "self_attn.o_proj.weight");
  }

  Tensor attention_block(Tensor& h, const std::string& p, int64_t layer, const std::vector<int64_t>& pos) {
    const auto& c = model_.config;
    if (c.attention == model::AttentionKind::mla) return mla_block(h, p, layer, pos);
    Tensor q = gemm(h, p + "self_attn.q_proj.weight"), k = gemm(h, p + "self_attn.k_proj.weight");
    Tensor v = gemm(h, p + "self_attn.v_proj.weight");
    if (c.qk_norm) {
      rms_norm(q, vec(p + "self_attn.q_norm.weight"), eps_);
      rms_norm(k, vec(p + "self_attn.k_norm.weight"), eps_);
    }
    apply_rope(q, c.num_heads, c.head_dim, 0, pos, rope_, RopeLayout::half);
    apply_rope(k, c.num_kv_heads, c.head_dim, 0, pos, rope_, RopeLayout::half);
    append(k_cache_[layer], k);
    append(v_cache_[layer], v);
    AttentionParams a;
    a.heads = c.num_heads;
    a.kv_heads = c.num_kv_heads;
    a.qk_dim = a.v_dim = c.head_dim;
    a.scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    a.window = c.layer_windows[layer] == model::LayerWindow::sliding ? c.sliding_window : 0;
    if (c.attention_sinks) a.sinks = vec(p + "self_attn.sinks");
    const std::string variant = attention_variant({model::AttentionKind::gqa, 0, 0, 0, 0, 0, 0, a.window, c.attention_sinks});
    const Tensor o = cpu_kernel<AttentionFn>(model::OpKind::attention, variant)(q, pos, k_cache_[layer], v_cache_[layer], a);
    return gemm(o, p + "self_attn.o_proj.weight");
  }

  // gpt-oss experts: fused, input-major [E, H, 2I] gate_up (interleaved) and [E, I, H] down, with biases.
  Tensor oss_expert(const Tensor& xe, const std::string& base, int64_t e) {
    const int64_t I2 = 2 * model_.config.moe.expert_intermediate, H = model_.config.hidden_size;
    StoredWeight gu = w(base + "experts.gate_up_proj"), down = w(base + "experts.down_proj");
    gu.input_major = down.input_major = true;
    const std::span<const float> gub = vec(base + "experts.gate_up_proj_bias").subspan(e * I2, I2);
    const std::span<const float> db = vec(base + "experts.down_proj_bias").subspan(e * H, H);
    Tensor gate, up;
    deinterleave_gate_up(linear_f32(xe, gu, e, gub), gate, up);
    const Tensor act = cpu_kernel<ActivationFn>(model::OpKind::activation, "swiglu_clamped")(gate, up, {});
    return cpu_kernel<GemmFn>(model::OpKind::expert_gemm, "f32")(act, down, e, db);
  }

  Tensor mlp(const Tensor& h, const std::string& gate, const std::string& up, const std::string& down, int64_t e,
             model::OpKind kind = model::OpKind::gemm) {
    const Tensor g = gemm(h, gate, e, kind), u = gemm(h, up, e, kind);
    return gemm(cpu_kernel<ActivationFn>(model::OpKind::activation, "swiglu")(g, u, {}), down, e, kind);
  }

  Tensor moe_block(const Tensor& h, const std::string& p) {
    const auto& c = model_.config;
    const bool mixtral = c.family == model::Family::mixtral, oss = c.family == model::Family::gpt_oss;
    const std::string base = p + (mixtral ? "block_sparse_moe." : "mlp.");
    RouterParams rp;
    rp.top_k = c.moe.experts_per_token;
    rp.normalize = c.moe.norm_topk_prob;
    rp.n_group = c.moe.n_group;
    rp.topk_group = c.moe.topk_group;
    rp.routed_scaling_factor = c.moe.routed_scaling_factor;
    if (c.moe.score_correction_bias) rp.correction_bias = vec(base + "gate.e_score_correction_bias");
    const Routing r =
        cpu_kernel<RouterFn>(model::OpKind::router, router_variant(c))(gemm(h, base + (oss ? "router.weight" : "gate.weight")), rp);
    Tensor out(h.shape);
    if (c.moe.num_shared_experts > 0) {
      const std::string s = base + "shared_experts.";
      out = mlp(h, s + "gate_proj.weight", s + "up_proj.weight", s + "down_proj.weight", 0);
    }
    for (int64_t e = 0; e < c.moe.num_experts; ++e) {  // experts in index order: a fixed summation order
      std::vector<int64_t> rows;
      std::vector<float> weights;
      for (int64_t i = 0; i < r.tokens * r.top_k; ++i)
        if (r.experts[i] == e) {
          rows.push_back(i / r.top_k);
          weights.push_back(r.weights[i]);
        }
      if (rows.empty()) continue;
      Tensor xe({static_cast<int64_t>(rows.size()), h.cols()});
      for (size_t i = 0; i < rows.size(); ++i) std::copy(h.row(rows[i]), h.row(rows[i]) + h.cols(), xe.row(static_cast<int64_t>(i)));
      const std::string ex = base + "experts." + std::to_string(e) + ".";
      const Tensor y = oss ? oss_expert(xe, base, e) : mixtral ? mlp(xe, ex + "w1.weight", ex + "w3.weight", ex + "w2.weight", 0, model::OpKind::expert_gemm)
                               : mlp(xe, ex + "gate_proj.weight", ex + "up_proj.weight", ex + "down_proj.weight", 0,
                                     model::OpKind::expert_gemm);
      cpu_kernel<CombineFn>(model::OpKind::moe_combine, "weighted_sum")(out, y, rows, weights);
    }
    return out;
  }

  model::Model model_;
  model::SafetensorsFile file_;
  double eps_ = 0;
  RopeTable rope_;
  std::vector<Tensor> k_cache_, v_cache_;
  std::vector<std::unique_ptr<Tensor>> held_;
};

}  // namespace dayzero::executor::testing
