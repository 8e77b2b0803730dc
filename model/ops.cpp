#include "model/ops.h"

namespace dayzero::model {

namespace {
// FLOPs per element of the element-wise ops (counting exp/rsqrt as one FLOP, the
// convention of the roofline literature, e.g. Kaplan et al. 2020 omit them
// entirely; they are memory-bound, so these only need the right magnitude).
constexpr int64_t kNormFlopsPerElem = 4;    // square, accumulate, scale, weight
constexpr int64_t kRopeFlopsPerElem = 3;    // two multiplies and an add per output
constexpr int64_t kSwigluFlopsPerElem = 5;  // sigmoid (exp, add, div), x*sig, *up
}  // namespace

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::embedding: return "embedding";
    case OpKind::norm: return "norm";
    case OpKind::gemm: return "gemm";
    case OpKind::rope: return "rope";
    case OpKind::attention: return "attention";
    case OpKind::activation: return "activation";
    case OpKind::router: return "router";
    case OpKind::expert_gemm: return "expert_gemm";
    case OpKind::moe_combine: return "moe_combine";
  }
  return "?";
}

std::string_view tp_split_name(TpSplit s) {
  switch (s) {
    case TpSplit::replicated: return "replicated";
    case TpSplit::column: return "column";
    case TpSplit::kv_heads: return "kv_heads";
    case TpSplit::row: return "row";
    case TpSplit::vocab: return "vocab";
  }
  return "?";
}

int64_t AttentionShape::flops_per_ctx_token(bool absorbed) const {
  if (kind == AttentionKind::mla && absorbed)  // scores over latent+rope, values are the latent
    return 2 * heads * (kv_lora_rank + rope_dim) + 2 * heads * kv_lora_rank;
  return 2 * heads * qk_head_dim + 2 * heads * v_head_dim;
}

int64_t Op::flops_per_token() const {
  switch (kind) {
    case OpKind::gemm: return 2 * n * k;
    case OpKind::router: return 2 * n * k;
    case OpKind::expert_gemm: return 2 * n * k * active_experts;
    case OpKind::norm: return kNormFlopsPerElem * n * (heads > 0 ? heads : 1);
    case OpKind::rope: return kRopeFlopsPerElem * n;
    case OpKind::activation: return kSwigluFlopsPerElem * n * (active_experts > 0 ? active_experts : 1);
    case OpKind::moe_combine: return 2 * n * active_experts;
    case OpKind::attention:  // context-dependent: see AttentionShape::flops_per_ctx_token
    case OpKind::embedding: return 0;
  }
  return 0;
}

int64_t Op::activation_bytes_per_token(int64_t elem_bytes) const {
  const int64_t per = active_experts > 0 ? active_experts : 1;
  switch (kind) {
    case OpKind::gemm:
    case OpKind::router: return (n + k) * elem_bytes;
    case OpKind::expert_gemm: return (n + k) * per * elem_bytes;
    case OpKind::norm: return 2 * n * (heads > 0 ? heads : 1) * elem_bytes;
    case OpKind::rope: return 2 * n * elem_bytes;
    case OpKind::activation: return 3 * n * per * elem_bytes;  // read gate and up, write
    case OpKind::moe_combine: return (per + 1) * n * elem_bytes;
    case OpKind::embedding: return n * elem_bytes;
    case OpKind::attention: {  // q in, output out; the KV cache is costed per context token
      return (attn.heads * attn.qk_head_dim + attn.heads * attn.v_head_dim) * elem_bytes;
    }
  }
  return 0;
}

namespace {

// What an op of each kind splits unless its builder says otherwise: projections by
// output features, the embedding by vocabulary, attention by heads; the rest
// (norms, router, element-wise ops) is replicated.
TpSplit default_split(OpKind k) {
  switch (k) {
    case OpKind::embedding: return TpSplit::vocab;
    case OpKind::gemm:
    case OpKind::expert_gemm:
    case OpKind::attention: return TpSplit::column;
    case OpKind::norm:
    case OpKind::rope:
    case OpKind::activation:
    case OpKind::router:
    case OpKind::moe_combine: return TpSplit::replicated;
  }
  return TpSplit::replicated;
}

struct OpsBuilder {
  explicit OpsBuilder(std::string p) : prefix(std::move(p)) {}
  std::string prefix;
  Part part = Part::attention;
  std::vector<Op> ops;

  Op& add(std::string name, OpKind kind, int64_t n, int64_t k, std::vector<std::string> weights) {
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.part = part;
    op.tp_split = default_split(kind);
    op.n = n;
    op.k = k;
    for (auto& w : weights) op.weights.push_back(prefix + w);
    ops.push_back(std::move(op));
    return ops.back();
  }
  // A projection with HF module name `module` (weight, and bias when present).
  Op& linear(const std::string& module, int64_t n, int64_t k, bool bias) {
    std::vector<std::string> w{module + ".weight"};
    if (bias) w.push_back(module + ".bias");
    const auto dot = module.rfind('.');
    return add(dot == std::string::npos ? module : module.substr(dot + 1), OpKind::gemm, n, k, w);
  }
  Op& norm(const std::string& module, int64_t n, int64_t heads = 0) {
    const auto dot = module.rfind('.');
    Op& op = add(module.substr(dot == std::string::npos ? 0 : dot + 1), OpKind::norm, n, n, {module + ".weight"});
    op.part = Part::norm;
    op.heads = heads;
    return op;
  }
};

void attention_ops(OpsBuilder& b, const ModelConfig& c, LayerWindow window) {
  const int64_t H = c.hidden_size, nh = c.num_heads;
  b.part = Part::attention;
  AttentionShape a;
  a.kind = c.attention;
  a.heads = nh;
  a.window = window == LayerWindow::sliding ? c.sliding_window : 0;
  a.sinks = c.attention_sinks;
  if (c.attention == AttentionKind::mla) {
    const auto& m = c.mla;
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    if (m.q_lora_rank > 0) {
      b.linear("self_attn.q_a_proj", m.q_lora_rank, H, c.qkv_bias).tp_split = TpSplit::replicated;
      b.norm("self_attn.q_a_layernorm", m.q_lora_rank);
      b.part = Part::attention;
      b.linear("self_attn.q_b_proj", nh * qk, m.q_lora_rank, false);
    } else {
      b.linear("self_attn.q_proj", nh * qk, H, false);
    }
    b.linear("self_attn.kv_a_proj_with_mqa", m.kv_lora_rank + m.qk_rope_head_dim, H, c.qkv_bias).tp_split =
        TpSplit::replicated;
    b.norm("self_attn.kv_a_layernorm", m.kv_lora_rank);
    b.part = Part::attention;
    b.linear("self_attn.kv_b_proj", nh * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, false);
    b.add("rope", OpKind::rope, (nh + 1) * m.qk_rope_head_dim, 0, {}).heads = nh + 1;
    a.kv_heads = 1;
    a.qk_head_dim = qk;
    a.v_head_dim = m.v_head_dim;
    a.kv_lora_rank = m.kv_lora_rank;
    a.rope_dim = m.qk_rope_head_dim;
    a.kv_elems_per_token = m.kv_lora_rank + m.qk_rope_head_dim;
    b.add("attention", OpKind::attention, nh * m.v_head_dim, nh * qk, {}).attn = a;
    b.linear("self_attn.o_proj", H, nh * m.v_head_dim, c.o_bias).tp_split = TpSplit::row;
    return;
  }
  const int64_t hd = c.head_dim, nkv = c.num_kv_heads;
  b.linear("self_attn.q_proj", nh * hd, H, c.qkv_bias);
  b.linear("self_attn.k_proj", nkv * hd, H, c.qkv_bias).tp_split = TpSplit::kv_heads;
  b.linear("self_attn.v_proj", nkv * hd, H, c.qkv_bias).tp_split = TpSplit::kv_heads;
  if (c.qk_norm) {
    b.norm("self_attn.q_norm", hd, nh);
    b.norm("self_attn.k_norm", hd, nkv);
    b.part = Part::attention;
  }
  b.add("rope", OpKind::rope, (nh + nkv) * hd, 0, {}).heads = nh + nkv;
  a.kv_heads = nkv;
  a.qk_head_dim = hd;
  a.v_head_dim = hd;
  a.kv_elems_per_token = 2 * nkv * hd;
  std::vector<std::string> w;
  if (c.attention_sinks) w.push_back("self_attn.sinks");
  b.add("attention", OpKind::attention, nh * hd, nh * hd, w).attn = a;
  b.linear("self_attn.o_proj", H, nh * hd, c.o_bias).tp_split = TpSplit::row;
}

void mlp_ops(OpsBuilder& b, const std::string& module, int64_t I, int64_t H, bool bias) {
  b.linear(module + ".gate_proj", I, H, bias);
  b.linear(module + ".up_proj", I, H, bias);
  b.add("act", OpKind::activation, I, I, {});
  b.linear(module + ".down_proj", H, I, bias).tp_split = TpSplit::row;
}

void moe_ops(OpsBuilder& b, const ModelConfig& c) {
  const int64_t H = c.hidden_size, E = c.moe.num_experts, I = c.moe.expert_intermediate;
  const int64_t k = c.moe.experts_per_token;
  auto expert = [&](std::string name, int64_t n, int64_t kk, std::vector<std::string> w) -> Op& {
    Op& op = b.add(std::move(name), OpKind::expert_gemm, n, kk, std::move(w));
    op.experts = E;
    op.active_experts = k;
    return op;
  };
  b.part = Part::router;
  const bool mixtral = c.family == Family::mixtral, oss = c.family == Family::gpt_oss;
  std::vector<std::string> rw;
  if (mixtral) rw = {"block_sparse_moe.gate.weight"};
  else if (oss) rw = {"mlp.router.weight", "mlp.router.bias"};
  else rw = {"mlp.gate.weight"};
  if (c.moe.score_correction_bias) rw.push_back("mlp.gate.e_score_correction_bias");
  b.add("router", OpKind::router, E, H, rw).experts = E;

  b.part = Part::experts;
  if (mixtral) {
    expert("experts.w1", I, H, {"block_sparse_moe.experts.{e}.w1.weight"});
    expert("experts.w3", I, H, {"block_sparse_moe.experts.{e}.w3.weight"});
  } else if (oss) {
    expert("experts.gate_up_proj", 2 * I, H, {"mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj_bias"});
  } else {
    expert("experts.gate_proj", I, H, {"mlp.experts.{e}.gate_proj.weight"});
    expert("experts.up_proj", I, H, {"mlp.experts.{e}.up_proj.weight"});
  }
  Op& act = b.add("experts.act", OpKind::activation, I, I, {});
  act.active_experts = k;
  Op& down = mixtral ? expert("experts.w2", H, I, {"block_sparse_moe.experts.{e}.w2.weight"})
             : oss   ? expert("experts.down_proj", H, I, {"mlp.experts.down_proj", "mlp.experts.down_proj_bias"})
                     : expert("experts.down_proj", H, I, {"mlp.experts.{e}.down_proj.weight"});
  down.tp_split = TpSplit::row;

  if (c.moe.num_shared_experts > 0) {
    b.part = Part::shared_experts;
    const int64_t S = c.moe.num_shared_experts * I;
    b.linear("mlp.shared_experts.gate_proj", S, H, false).name = "shared_experts.gate_proj";
    b.linear("mlp.shared_experts.up_proj", S, H, false).name = "shared_experts.up_proj";
    b.add("shared_experts.act", OpKind::activation, S, S, {});
    Op& down_shared = b.linear("mlp.shared_experts.down_proj", H, S, false);
    down_shared.name = "shared_experts.down_proj";
    down_shared.tp_split = TpSplit::row;
  }
  b.part = Part::experts;
  b.add("moe_combine", OpKind::moe_combine, H, H, {}).active_experts = k;
}

}  // namespace

Layer layer_ops(const ModelConfig& c, int64_t layer) {
  Layer l;
  l.index = layer;
  l.moe = c.is_moe_layer(layer);
  l.mtp = layer >= c.num_layers;
  l.window = layer < static_cast<int64_t>(c.layer_windows.size()) ? c.layer_windows[layer] : LayerWindow::full;
  OpsBuilder b("model.layers." + std::to_string(layer) + ".");
  const int64_t H = c.hidden_size;
  if (l.mtp) {  // DeepSeek-V3 MTP: embed the next token, normalize both streams, project 2H -> H
    b.part = Part::embedding;
    b.add("embed_tokens", OpKind::embedding, H, 0, {"embed_tokens.weight"});
    b.norm("enorm", H);
    b.norm("hnorm", H);
    b.part = Part::mtp_proj;
    b.linear("eh_proj", H, 2 * H, false).tp_split = TpSplit::replicated;
  }
  b.norm("input_layernorm", H);
  attention_ops(b, c, l.window);
  b.norm("post_attention_layernorm", H);
  if (l.moe) {
    moe_ops(b, c);
  } else {
    b.part = Part::dense_mlp;
    mlp_ops(b, "mlp", c.intermediate_size, H, c.mlp_bias);
  }
  if (l.mtp) {
    b.norm("shared_head.norm", H);
    b.part = Part::head;
    Op& head = b.linear("shared_head.head", c.vocab_size, H, false);
    head.name = "shared_head";
    head.tp_split = TpSplit::vocab;
  }
  l.ops = std::move(b.ops);
  return l;
}

std::vector<Op> pre_ops(const ModelConfig& c) {
  OpsBuilder b("model.");
  b.part = Part::embedding;
  b.add("embed_tokens", OpKind::embedding, c.hidden_size, 0, {"embed_tokens.weight"});
  return b.ops;
}

std::vector<Op> post_ops(const ModelConfig& c) {
  OpsBuilder b("");
  b.norm("model.norm", c.hidden_size);
  b.part = Part::head;
  // With tied embeddings the head reads the embedding matrix.
  b.add("lm_head", OpKind::gemm, c.vocab_size, c.hidden_size,
        {c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight"})
      .tp_split = TpSplit::vocab;
  return b.ops;
}

}  // namespace dayzero::model
