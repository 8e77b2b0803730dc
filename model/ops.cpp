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
    case OpKind::linear_attention: return "linear_attention";
    case OpKind::indexer: return "indexer";
  }
  return "?";
}

std::string_view tp_split_name(TpSplit s) {
  switch (s) {
    case TpSplit::replicated: return "replicated";
    case TpSplit::column: return "column";
    case TpSplit::sections: return "sections";
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

int64_t LinearAttentionShape::recurrent_flops_per_token() const {
  return 7 * value_heads * key_head_dim * value_head_dim;
}

int64_t LinearAttentionShape::chunked_flops_per_token(int64_t chunk) const {
  return value_heads * (6 * key_head_dim * value_head_dim + 2 * chunk * (key_head_dim + value_head_dim));
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
    case OpKind::linear_attention:  // conv taps, the recurrence, the gated RMSNorm
      return 2 * lin.conv_kernel * lin.conv_dim() + lin.recurrent_flops_per_token() +
             (kNormFlopsPerElem + kSwigluFlopsPerElem) * n;
    case OpKind::indexer:    // context-dependent: see IndexerShape::flops_per_ctx_token
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
    case OpKind::linear_attention: return (n + k) * elem_bytes;  // the state is costed per sequence
    case OpKind::indexer: return (index.heads * index.head_dim + index.heads) * elem_bytes;
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
    case OpKind::linear_attention:  // by value heads (and their key heads)
    case OpKind::attention: return TpSplit::column;
    case OpKind::indexer:  // every rank scores the whole context (vLLM, SGLang: replicated)
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

// Gated delta-net: projections split by heads, the recurrence per head, out_proj by rows.
void linear_attention_ops(OpsBuilder& b, const ModelConfig& c) {
  const auto& l = c.linear;
  const int64_t H = c.hidden_size;
  b.part = Part::attention;
  b.linear("linear_attn.in_proj_qkv", l.conv_dim(), H, false).tp_split = TpSplit::sections;
  b.linear("linear_attn.in_proj_z", l.value_dim(), H, false);
  b.linear("linear_attn.in_proj_b", l.value_heads, H, false);
  b.linear("linear_attn.in_proj_a", l.value_heads, H, false);
  Op& op = b.add("linear_attention", OpKind::linear_attention, l.value_dim(), l.conv_dim() + l.value_dim(),
                 {"linear_attn.conv1d.weight", "linear_attn.dt_bias", "linear_attn.A_log", "linear_attn.norm.weight"});
  op.heads = l.value_heads;
  op.lin = {l.key_heads, l.value_heads, l.key_head_dim, l.value_head_dim, l.conv_kernel, dtype_bits(l.state_dtype) / 8};
  b.linear("linear_attn.out_proj", H, l.value_dim(), false).tp_split = TpSplit::row;
}

// The sparse-attention indexer of an MLA layer: replicated projections and scoring.
void indexer_ops(OpsBuilder& b, const ModelConfig& c) {
  const auto& x = c.indexer;
  const int64_t H = c.hidden_size;
  b.part = Part::attention;
  b.linear("self_attn.indexer.wq_b", x.heads * x.head_dim, c.mla.q_lora_rank, false).tp_split = TpSplit::replicated;
  b.linear("self_attn.indexer.wk", x.head_dim, H, false).tp_split = TpSplit::replicated;
  Op& kn = b.add("indexer.k_norm", OpKind::norm, x.head_dim, x.head_dim,
                 {"self_attn.indexer.k_norm.weight", "self_attn.indexer.k_norm.bias"});
  kn.part = Part::norm;
  b.part = Part::attention;
  b.linear("self_attn.indexer.weights_proj", x.heads, H, false).tp_split = TpSplit::replicated;
  b.add("indexer", OpKind::indexer, x.topk, x.heads * x.head_dim, {}).index = {x.heads, x.head_dim, x.topk};
}

void attention_ops(OpsBuilder& b, const ModelConfig& c, LayerAttention window) {
  const int64_t H = c.hidden_size, nh = c.num_heads;
  if (window == LayerAttention::linear) return linear_attention_ops(b, c);
  b.part = Part::attention;
  AttentionShape a;
  a.kind = c.attention;
  a.heads = nh;
  a.window = window == LayerAttention::sliding ? c.sliding_window : 0;
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
    if (c.indexer.heads > 0) {
      indexer_ops(b, c);
      a.topk = c.indexer.topk;
    }
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
  b.linear("self_attn.q_proj", (c.attn_output_gate ? 2 : 1) * nh * hd, H, c.qkv_bias);
  b.linear("self_attn.k_proj", nkv * hd, H, c.qkv_bias).tp_split = TpSplit::kv_heads;
  b.linear("self_attn.v_proj", nkv * hd, H, c.qkv_bias).tp_split = TpSplit::kv_heads;
  if (c.qk_norm && c.qk_norm_whole) {  // MiniMax-M2: one norm over all heads (all-reduced under TP)
    b.norm("self_attn.q_norm", nh * hd);
    b.norm("self_attn.k_norm", nkv * hd);
    b.part = Part::attention;
  } else if (c.qk_norm) {
    b.norm("self_attn.q_norm", hd, nh);
    b.norm("self_attn.k_norm", hd, nkv);
    b.part = Part::attention;
  }
  const int64_t rot = c.rotary_dim > 0 ? c.rotary_dim : hd;
  b.add("rope", OpKind::rope, (nh + nkv) * rot, 0, {}).heads = nh + nkv;
  a.kv_heads = nkv;
  a.qk_head_dim = hd;
  a.v_head_dim = hd;
  a.kv_elems_per_token = 2 * nkv * hd;
  std::vector<std::string> w;
  if (c.attention_sinks) w.push_back("self_attn.sinks");
  b.add("attention", OpKind::attention, nh * hd, nh * hd, w).attn = a;
  if (c.attn_output_gate)
    b.add("attn_output_gate", OpKind::activation, nh * hd, nh * hd, {}).tp_split = TpSplit::column;
  b.linear("self_attn.o_proj", H, nh * hd, c.o_bias).tp_split = TpSplit::row;
}

void mlp_ops(OpsBuilder& b, const std::string& module, int64_t I, int64_t H, bool bias) {
  b.linear(module + ".gate_proj", I, H, bias);
  b.linear(module + ".up_proj", I, H, bias);
  b.add("act", OpKind::activation, I, I, {});
  b.linear(module + ".down_proj", H, I, bias).tp_split = TpSplit::row;
}

void moe_ops(OpsBuilder& b, const ModelConfig& c, bool mtp) {
  const bool fused = c.family == Family::qwen3_5_moe && !mtp;  // Qwen3.5 decoder layers: [E, out, in] tensors
  const int64_t H = c.hidden_size, E = c.moe.num_experts, I = c.moe.expert_intermediate;
  const int64_t k = c.moe.experts_per_token;
  auto expert = [&](std::string name, int64_t n, int64_t kk, std::vector<std::string> w) -> Op& {
    Op& op = b.add(std::move(name), OpKind::expert_gemm, n, kk, std::move(w));
    op.experts = E;
    op.active_experts = k;
    return op;
  };
  b.part = Part::router;
  const bool oss = c.family == Family::gpt_oss, minimax = c.family == Family::minimax_m2;
  const bool mixtral = c.family == Family::mixtral || minimax;  // block_sparse_moe naming
  std::vector<std::string> rw;
  if (mixtral) rw = {"block_sparse_moe.gate.weight"};
  else if (oss) rw = {"mlp.router.weight", "mlp.router.bias"};
  else rw = {"mlp.gate.weight"};
  if (c.moe.score_correction_bias)
    rw.push_back(minimax ? "block_sparse_moe.e_score_correction_bias" : "mlp.gate.e_score_correction_bias");
  b.add("router", OpKind::router, E, H, rw).experts = E;

  b.part = Part::experts;
  if (mixtral) {
    expert("experts.w1", I, H, {"block_sparse_moe.experts.{e}.w1.weight"});
    expert("experts.w3", I, H, {"block_sparse_moe.experts.{e}.w3.weight"});
  } else if (oss) {
    expert("experts.gate_up_proj", 2 * I, H, {"mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj_bias"});
  } else if (fused) {
    expert("experts.gate_up_proj", 2 * I, H, {"mlp.experts.gate_up_proj"});
  } else {
    expert("experts.gate_proj", I, H, {"mlp.experts.{e}.gate_proj.weight"});
    expert("experts.up_proj", I, H, {"mlp.experts.{e}.up_proj.weight"});
  }
  Op& act = b.add("experts.act", OpKind::activation, I, I, {});
  act.active_experts = k;
  Op& down = mixtral ? expert("experts.w2", H, I, {"block_sparse_moe.experts.{e}.w2.weight"})
             : oss   ? expert("experts.down_proj", H, I, {"mlp.experts.down_proj", "mlp.experts.down_proj_bias"})
             : fused ? expert("experts.down_proj", H, I, {"mlp.experts.down_proj"})
                     : expert("experts.down_proj", H, I, {"mlp.experts.{e}.down_proj.weight"});
  down.tp_split = TpSplit::row;

  if (c.moe.num_shared_experts > 0) {
    b.part = Part::shared_experts;
    const int64_t S = c.moe.num_shared_experts * I;
    const std::string m = c.moe.shared_expert_gate ? "mlp.shared_expert." : "mlp.shared_experts.";  // Qwen: singular
    b.linear(m + "gate_proj", S, H, false).name = "shared_experts.gate_proj";
    b.linear(m + "up_proj", S, H, false).name = "shared_experts.up_proj";
    b.add("shared_experts.act", OpKind::activation, S, S, {});
    Op& down_shared = b.linear(m + "down_proj", H, S, false);
    down_shared.name = "shared_experts.down_proj";
    down_shared.tp_split = TpSplit::row;
    if (c.moe.shared_expert_gate)  // sigmoid(x W) scales the shared expert's output
      b.linear("mlp.shared_expert_gate", 1, H, false).tp_split = TpSplit::replicated;
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
  l.attention =
      layer < static_cast<int64_t>(c.layer_attention.size()) ? c.layer_attention[layer] : LayerAttention::full;
  OpsBuilder b(layer_prefix(c, layer));
  const int64_t H = c.hidden_size;
  const bool qwen_mtp = l.mtp && c.family == Family::qwen3_5_moe;
  if (qwen_mtp) {  // Qwen3.5 MTP: the model's own embedding, two norms, fc 2H -> H
    OpsBuilder m("");
    m.ops = pre_ops(c);
    m.norm("mtp.pre_fc_norm_embedding", H);
    m.norm("mtp.pre_fc_norm_hidden", H);
    m.part = Part::mtp_proj;
    m.linear("mtp.fc", H, 2 * H, false).tp_split = TpSplit::replicated;
    b.ops = std::move(m.ops);
  } else if (l.mtp) {  // DeepSeek-V3 MTP: embed the next token, normalize both streams, project 2H -> H
    b.part = Part::embedding;
    b.add("embed_tokens", OpKind::embedding, H, 0, {"embed_tokens.weight"});
    b.norm("enorm", H);
    b.norm("hnorm", H);
    b.part = Part::mtp_proj;
    b.linear("eh_proj", H, 2 * H, false).tp_split = TpSplit::replicated;
  }
  b.norm("input_layernorm", H);
  attention_ops(b, c, l.attention);
  b.norm("post_attention_layernorm", H);
  if (l.moe) {
    moe_ops(b, c, l.mtp);
  } else {
    b.part = Part::dense_mlp;
    mlp_ops(b, "mlp", c.intermediate_size, H, c.mlp_bias);
  }
  if (qwen_mtp) {  // its own final norm, then the model's head
    for (Op& op : post_ops(c)) {
      if (op.kind == OpKind::norm) op.weights = {"mtp.norm.weight"};
      b.ops.push_back(std::move(op));
    }
  } else if (l.mtp) {
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
