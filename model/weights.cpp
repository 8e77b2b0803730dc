#include "model/weights.h"

#include <fnmatch.h>
#include <stdexcept>
#include <utility>

#include "core/arith.h"
#include "core/error.h"
#include "model/module_regex.h"

namespace dayzero::model {

std::string_view part_name(Part p) {
  switch (p) {
    case Part::embedding: return "embedding";
    case Part::head: return "head";
    case Part::attention: return "attention";
    case Part::dense_mlp: return "dense_mlp";
    case Part::router: return "router";
    case Part::experts: return "experts";
    case Part::shared_experts: return "shared_experts";
    case Part::norm: return "norm";
    case Part::mtp_proj: return "mtp_proj";
  }
  return "?";
}

int64_t Weight::params() const {
  int64_t n = copies;
  for (int64_t d : shape) n = core::checked_mul(n, d);
  return n;
}

int64_t Weight::bytes(const StorageFormat& fmt) const {
  if (input_major && fmt.kind != StorageKind::plain) {  // quantize along the input dim
    std::vector<int64_t> s = shape;
    std::swap(s[s.size() - 1], s[s.size() - 2]);
    return core::checked_mul(storage_bytes(s, fmt), copies);
  }
  return core::checked_mul(storage_bytes(shape, fmt), copies);
}

namespace {

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out(1);
  for (char ch : s) {
    if (ch == '.') out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

// Builds the weight list of one model; `add` fills in storage from the policy.
class Builder {
 public:
  explicit Builder(const ModelConfig& c) : c_(c), keep_(c.quant.modules_to_not_convert) {}

  void add(std::string name, std::vector<int64_t> shape, Part part, int64_t layer, bool matrix, int64_t copies = 1,
           int64_t experts = 1) {
    Weight w;
    w.name = std::move(name);
    w.shape = std::move(shape);
    w.part = part;
    w.layer = layer;
    w.copies = copies;
    w.experts = experts;
    w.mtp = layer >= c_.num_layers;
    w.matrix = matrix;
    w.input_major = std::exchange(input_major, false);
    w.stored = storage_for(w);
    if (w.stored.kind == StorageKind::int4_group && w.shape.back() % w.stored.group != 0)
      throw core::InputError(c_.source, c_.quant.group_field, std::to_string(w.stored.group),
                             "does not divide the " + std::to_string(w.shape.back()) + " inputs of " + w.name);
    if (w.input_major && w.stored.kind != StorageKind::plain) {
      std::swap(w.shape[1], w.shape[2]);  // quantized blocks run along the input dim
      w.input_major = false;
    }
    w.params();  // throws on overflow
    out.push_back(std::move(w));
  }

  std::vector<Weight> out;
  bool input_major = false;  // the next weight is stored [.., in, out]

 private:
  StorageFormat storage_for(const Weight& w) const {
    const StorageFormat plain = StorageFormat::plain_of(c_.torch_dtype);
    if (c_.quant.method == QuantMethod::none || !w.matrix) return plain;
    if (c_.quant.method == QuantMethod::mxfp4 && w.part != Part::experts) return plain;
    if (keep_.matches(w.name) || ignored(w.name)) return plain;
    return c_.quant.format;
  }
  // compressed-tensors `ignore`: a module name, or `re:` + a pattern matched from the
  // start of the module name (the weight's name without ".weight").
  bool ignored(const std::string& weight_name) const {
    if (ignore_literals_.empty() && ignore_regexes_.empty()) return false;
    const std::string module = weight_name.substr(0, weight_name.rfind('.'));
    if (ignore_literals_.count(module)) return true;
    for (const auto& r : ignore_regexes_)
      if (r.matches(module)) return true;
    return false;
  }
  static std::vector<ModuleRegex> regexes_of(const std::vector<std::string>& ignore) {
    std::vector<ModuleRegex> out;
    for (const auto& p : ignore)
      if (p.rfind("re:", 0) == 0) out.emplace_back(p.substr(3));  // parse_config checked each
    return out;
  }
  static std::unordered_set<std::string> literals_of(const std::vector<std::string>& ignore) {
    std::unordered_set<std::string> out;
    for (const auto& p : ignore)
      if (p.rfind("re:", 0) != 0) out.insert(p);
    return out;
  }
  const ModelConfig& c_;
  const ModulePatterns keep_;  // modules_to_not_convert
  const std::unordered_set<std::string> ignore_literals_ = literals_of(c_.quant.ignore);
  const std::vector<ModuleRegex> ignore_regexes_ = regexes_of(c_.quant.ignore);
};

void add_linear(Builder& b, const std::string& name, int64_t out, int64_t in, Part part, int64_t layer, bool bias,
                int64_t copies = 1, int64_t experts = 1) {
  b.add(name + ".weight", {out, in}, part, layer, true, copies, experts);
  if (bias) b.add(name + ".bias", {out}, part, layer, false, copies, experts);
}

// Gated delta-net (Qwen3.5, as its checkpoints name it): q, k, v and the output gate z
// from one projection, the decay and beta inputs a and b from another, a depthwise
// conv over q, k and v, per-head decay parameters, a gated RMSNorm per value head.
void add_linear_attention(Builder& b, const ModelConfig& c, const std::string& p, int64_t L) {
  const auto& l = c.linear;
  const int64_t H = c.hidden_size;
  const Part A = Part::attention;
  add_linear(b, p + "linear_attn.in_proj_qkv", l.conv_dim(), H, A, L, false);
  add_linear(b, p + "linear_attn.in_proj_z", l.value_dim(), H, A, L, false);
  add_linear(b, p + "linear_attn.in_proj_b", l.value_heads, H, A, L, false);
  add_linear(b, p + "linear_attn.in_proj_a", l.value_heads, H, A, L, false);
  b.add(p + "linear_attn.conv1d.weight", {l.conv_dim(), 1, l.conv_kernel}, A, L, false);
  b.add(p + "linear_attn.dt_bias", {l.value_heads}, A, L, false);
  b.add(p + "linear_attn.A_log", {l.value_heads}, A, L, false);
  b.out.back().stored = StorageFormat::plain_of(DType::f32);  // F32 in Qwen3.5's checkpoint, as is the norm
  b.add(p + "linear_attn.norm.weight", {l.value_head_dim}, Part::norm, L, false);
  b.out.back().stored = StorageFormat::plain_of(DType::f32);
  add_linear(b, p + "linear_attn.out_proj", H, l.value_dim(), A, L, false);
}

// DeepSeek sparse attention's indexer (DeepSeek-V3.2's naming, which GLM-5 keeps): its
// queries from the MLA query latent, one key per token from the hidden state (with a
// LayerNorm), and a weight per indexer head.
void add_indexer(Builder& b, const ModelConfig& c, const std::string& p, int64_t L) {
  const auto& x = c.indexer;
  const int64_t H = c.hidden_size;
  const Part A = Part::attention;
  add_linear(b, p + "self_attn.indexer.wq_b", core::checked_mul(x.heads, x.head_dim), c.mla.q_lora_rank, A, L, false);
  add_linear(b, p + "self_attn.indexer.wk", x.head_dim, H, A, L, false);
  b.add(p + "self_attn.indexer.k_norm.weight", {x.head_dim}, Part::norm, L, false);
  b.add(p + "self_attn.indexer.k_norm.bias", {x.head_dim}, Part::norm, L, false);
  // weights_proj stays BF16 (DeepSeek-V3.2's reference creates it in the default dtype;
  // GLM-5-FP8 stores it so, though its modules_to_not_convert names "indexers_proj").
  b.add(p + "self_attn.indexer.weights_proj.weight", {x.heads, H}, A, L, false);
}

void add_attention(Builder& b, const ModelConfig& c, const std::string& p, int64_t L) {
  const int64_t H = c.hidden_size, nh = c.num_heads;
  const Part A = Part::attention;
  if (L < c.num_layers && c.layer_attention[static_cast<size_t>(L)] == LayerAttention::linear)
    return add_linear_attention(b, c, p, L);
  if (c.attention == AttentionKind::mla) {
    if (c.indexer.heads > 0) add_indexer(b, c, p, L);
    const auto& m = c.mla;
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    if (m.q_lora_rank > 0) {
      add_linear(b, p + "self_attn.q_a_proj", m.q_lora_rank, H, A, L, c.qkv_bias);
      b.add(p + "self_attn.q_a_layernorm.weight", {m.q_lora_rank}, Part::norm, L, false);
      add_linear(b, p + "self_attn.q_b_proj", core::checked_mul(nh, qk), m.q_lora_rank, A, L, false);
    } else {
      add_linear(b, p + "self_attn.q_proj", core::checked_mul(nh, qk), H, A, L, false);
    }
    add_linear(b, p + "self_attn.kv_a_proj_with_mqa", m.kv_lora_rank + m.qk_rope_head_dim, H, A, L, c.qkv_bias);
    b.add(p + "self_attn.kv_a_layernorm.weight", {m.kv_lora_rank}, Part::norm, L, false);
    add_linear(b, p + "self_attn.kv_b_proj", core::checked_mul(nh, m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank,
               A, L, false);
    add_linear(b, p + "self_attn.o_proj", H, core::checked_mul(nh, m.v_head_dim), A, L, c.o_bias);
    return;
  }
  const int64_t q = core::checked_mul(nh, c.head_dim), kv = core::checked_mul(c.num_kv_heads, c.head_dim);
  // With an output gate, q_proj emits each head's query and its gate (Qwen3.5).
  add_linear(b, p + "self_attn.q_proj", c.attn_output_gate ? core::checked_mul(2, q) : q, H, A, L, c.qkv_bias);
  add_linear(b, p + "self_attn.k_proj", kv, H, A, L, c.qkv_bias);
  add_linear(b, p + "self_attn.v_proj", kv, H, A, L, c.qkv_bias);
  add_linear(b, p + "self_attn.o_proj", H, q, A, L, c.o_bias);
  if (c.qk_norm) {  // per head, or over all heads at once (MiniMax-M2's per_layer)
    b.add(p + "self_attn.q_norm.weight", {c.qk_norm_whole ? q : c.head_dim}, Part::norm, L, false);
    b.add(p + "self_attn.k_norm.weight", {c.qk_norm_whole ? kv : c.head_dim}, Part::norm, L, false);
  }
  if (c.attention_sinks) b.add(p + "self_attn.sinks", {nh}, A, L, false);
}

void add_dense_mlp(Builder& b, const ModelConfig& c, const std::string& p, int64_t L) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  add_linear(b, p + "mlp.gate_proj", I, H, Part::dense_mlp, L, c.mlp_bias);
  add_linear(b, p + "mlp.up_proj", I, H, Part::dense_mlp, L, c.mlp_bias);
  add_linear(b, p + "mlp.down_proj", H, I, Part::dense_mlp, L, c.mlp_bias);
}

void add_moe(Builder& b, const ModelConfig& c, const std::string& p, int64_t L) {
  const int64_t H = c.hidden_size, E = c.moe.num_experts, I = c.moe.expert_intermediate;
  const Part X = Part::experts;
  switch (c.family) {
    case Family::mixtral:
      b.add(p + "block_sparse_moe.gate.weight", {E, H}, Part::router, L, false);
      add_linear(b, p + "block_sparse_moe.experts.{e}.w1", I, H, X, L, false, E, E);
      add_linear(b, p + "block_sparse_moe.experts.{e}.w2", H, I, X, L, false, E, E);
      add_linear(b, p + "block_sparse_moe.experts.{e}.w3", I, H, X, L, false, E, E);
      return;
    case Family::gpt_oss:
      // Fused experts, [E, out, in] per matrix; the MXFP4 checkpoint stores each as
      // `<name>_blocks` + `<name>_scales`.
      b.add(p + "mlp.router.weight", {E, H}, Part::router, L, false);
      b.add(p + "mlp.router.bias", {E}, Part::router, L, false);
      // Unquantized, transformers keeps them input-major ([E, in, out]); MXFP4 blocks
      // run along the input dim, so the quantized layout is [E, out, in].
      b.input_major = true;
      b.add(p + "mlp.experts.gate_up_proj", {E, H, core::checked_mul(2, I)}, X, L, true, 1, E);
      b.add(p + "mlp.experts.gate_up_proj_bias", {E, core::checked_mul(2, I)}, X, L, false, 1, E);
      b.input_major = true;
      b.add(p + "mlp.experts.down_proj", {E, I, H}, X, L, true, 1, E);
      b.add(p + "mlp.experts.down_proj_bias", {E, H}, X, L, false, 1, E);
      return;
    case Family::minimax_m2:
      b.add(p + "block_sparse_moe.gate.weight", {E, H}, Part::router, L, false);
      b.add(p + "block_sparse_moe.e_score_correction_bias", {E}, Part::router, L, false);
      b.out.back().stored = StorageFormat::plain_of(DType::f32);
      add_linear(b, p + "block_sparse_moe.experts.{e}.w1", I, H, X, L, false, E, E);
      add_linear(b, p + "block_sparse_moe.experts.{e}.w2", H, I, X, L, false, E, E);
      add_linear(b, p + "block_sparse_moe.experts.{e}.w3", I, H, X, L, false, E, E);
      return;
    case Family::qwen3_5_moe: {  // one shared expert of its own name, with a sigmoid gate
      b.add(p + "mlp.gate.weight", {E, H}, Part::router, L, false);
      if (L < c.num_layers) {  // the decoder layers store each layer's experts fused, [E, out, in]
        b.add(p + "mlp.experts.gate_up_proj", {E, core::checked_mul(2, I), H}, X, L, true, 1, E);
        b.add(p + "mlp.experts.down_proj", {E, H, I}, X, L, true, 1, E);
      } else {  // the MTP layer one by one
        add_linear(b, p + "mlp.experts.{e}.gate_proj", I, H, X, L, false, E, E);
        add_linear(b, p + "mlp.experts.{e}.up_proj", I, H, X, L, false, E, E);
        add_linear(b, p + "mlp.experts.{e}.down_proj", H, I, X, L, false, E, E);
      }
      if (c.moe.num_shared_experts == 0) return;
      const int64_t S = core::checked_mul(c.moe.num_shared_experts, I);
      add_linear(b, p + "mlp.shared_expert.gate_proj", S, H, Part::shared_experts, L, false);
      add_linear(b, p + "mlp.shared_expert.up_proj", S, H, Part::shared_experts, L, false);
      add_linear(b, p + "mlp.shared_expert.down_proj", H, S, Part::shared_experts, L, false);
      b.add(p + "mlp.shared_expert_gate.weight", {1, H}, Part::shared_experts, L, false);
      return;
    }
    case Family::qwen3_moe:  // Qwen3-MoE, DeepSeek and GLM-5 share HF's per-expert naming
    case Family::deepseek_v2:
    case Family::deepseek_v3:
    case Family::glm_moe_dsa:
    case Family::deepseek_v32: break;
    case Family::llama:  // dense families: never asked for MoE weights
    case Family::mistral:
    case Family::qwen2:
    case Family::qwen3: break;
  }
  b.add(p + "mlp.gate.weight", {E, H}, Part::router, L, false);
  if (c.moe.score_correction_bias) {
    b.add(p + "mlp.gate.e_score_correction_bias", {E}, Part::router, L, false);
    b.out.back().stored = StorageFormat::plain_of(DType::f32);  // kept in F32 by DeepSeek
  }
  add_linear(b, p + "mlp.experts.{e}.gate_proj", I, H, X, L, false, E, E);
  add_linear(b, p + "mlp.experts.{e}.up_proj", I, H, X, L, false, E, E);
  add_linear(b, p + "mlp.experts.{e}.down_proj", H, I, X, L, false, E, E);
  if (c.moe.num_shared_experts > 0) {
    const int64_t S = core::checked_mul(c.moe.num_shared_experts, I);
    add_linear(b, p + "mlp.shared_experts.gate_proj", S, H, Part::shared_experts, L, false);
    add_linear(b, p + "mlp.shared_experts.up_proj", S, H, Part::shared_experts, L, false);
    add_linear(b, p + "mlp.shared_experts.down_proj", H, S, Part::shared_experts, L, false);
  }
}

}  // namespace

namespace {

// Whether the components of `pattern` match a run of consecutive components of `name`
// (both split at dots), each with fnmatch.
bool matches_split(const std::vector<std::string>& n, const std::vector<std::string>& p) {
  if (p.size() > n.size()) return false;
  for (size_t start = 0; start + p.size() <= n.size(); ++start) {
    bool ok = true;
    for (size_t i = 0; ok && i < p.size(); ++i) ok = fnmatch(p[i].c_str(), n[start + i].c_str(), 0) == 0;
    if (ok) return true;
  }
  return false;
}

}  // namespace

bool matches_module_pattern(const std::string& name, const std::string& pattern) {
  return matches_split(split_dots(name), split_dots(pattern));
}

bool is_glob_pattern(const std::string& pattern) { return pattern.find_first_of("*?[\\") != std::string::npos; }

ModulePatterns::ModulePatterns(const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (is_glob_pattern(p)) globs_.push_back(split_dots(p));
    else literals_.insert(p);
  }
}

bool ModulePatterns::matches(const std::string& name) const {
  // A literal pattern matches when it equals a run of whole components: name[i, j) with
  // i at the start or after a dot, j at a dot or the end.
  for (size_t i = 0; !literals_.empty();) {
    for (size_t j = name.find('.', i);; j = name.find('.', j + 1)) {
      if (literals_.count(name.substr(i, j == std::string::npos ? std::string::npos : j - i))) return true;
      if (j == std::string::npos) break;
    }
    const size_t dot = name.find('.', i);
    if (dot == std::string::npos) break;
    i = dot + 1;
  }
  if (globs_.empty()) return false;
  const std::vector<std::string> components = split_dots(name);  // once for every glob
  for (const auto& g : globs_)
    if (matches_split(components, g)) return true;
  return false;
}

std::string layer_prefix(const ModelConfig& c, int64_t layer) {
  if (layer >= c.num_layers && c.family == Family::qwen3_5_moe)
    return "mtp.layers." + std::to_string(layer - c.num_layers) + ".";
  return "model.layers." + std::to_string(layer) + ".";
}

std::vector<Weight> model_weights(const ModelConfig& c) {
  Builder b(c);
  const int64_t H = c.hidden_size, V = c.vocab_size;
  try {
    b.add("model.embed_tokens.weight", {V, H}, Part::embedding, -1, false);
    for (int64_t L = 0; L < c.num_layers + c.mtp_layers; ++L) {
      const std::string p = layer_prefix(c, L);
      if (L == c.num_layers && c.family == Family::qwen3_5_moe) {  // Qwen3.5 MTP: shares embedding and head
        b.add("mtp.pre_fc_norm_embedding.weight", {H}, Part::norm, L, false);
        b.add("mtp.pre_fc_norm_hidden.weight", {H}, Part::norm, L, false);
        b.add("mtp.fc.weight", {H, core::checked_mul(2, H)}, Part::mtp_proj, L, true);
      } else if (L >= c.num_layers &&
                 c.family != Family::qwen3_5_moe) {  // DeepSeek-V3 MTP module: its own embed, projections and head
        b.add(p + "embed_tokens.weight", {V, H}, Part::embedding, L, false);
        b.add(p + "enorm.weight", {H}, Part::norm, L, false);
        b.add(p + "hnorm.weight", {H}, Part::norm, L, false);
        b.add(p + "eh_proj.weight", {H, core::checked_mul(2, H)}, Part::mtp_proj, L, true);
      }
      b.add(p + "input_layernorm.weight", {H}, Part::norm, L, false);
      add_attention(b, c, p, L);
      b.add(p + "post_attention_layernorm.weight", {H}, Part::norm, L, false);
      if (c.is_moe_layer(L)) add_moe(b, c, p, L);
      else add_dense_mlp(b, c, p, L);
      if (L >= c.num_layers && c.family == Family::qwen3_5_moe) {
        if (L == c.num_layers + c.mtp_layers - 1) b.add("mtp.norm.weight", {H}, Part::norm, L, false);
      } else if (L >= c.num_layers) {
        b.add(p + "shared_head.norm.weight", {H}, Part::norm, L, false);
        b.add(p + "shared_head.head.weight", {V, H}, Part::head, L, false);
      }
    }
    b.add("model.norm.weight", {H}, Part::norm, -1, false);
    if (!c.tie_word_embeddings) b.add("lm_head.weight", {V, H}, Part::head, -1, false);
  } catch (const std::overflow_error&) {
    const std::string last = b.out.empty() ? "model.embed_tokens.weight" : b.out.back().name;
    throw core::InputError(c.source, "sizes",
                           "hidden_size=" + std::to_string(H) + ", vocab_size=" + std::to_string(V) +
                               ", num_hidden_layers=" + std::to_string(c.num_layers),
                           "tensor sizes overflow 64 bits (after " + last + ")");
  }
  return b.out;
}

}  // namespace dayzero::model
