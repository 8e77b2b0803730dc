// Per-family readers for parse_config. Defaults for omitted keys follow each
// family's reference configuration class (transformers' LlamaConfig, Qwen2Config,
// Qwen3Config, Qwen3MoeConfig, MixtralConfig, GptOssConfig; deepseek-ai's
// configuration_deepseek.py for DeepSeek-V2/V3).
#include <algorithm>
#include <regex>

#include "model/config_parse.h"
#include "model/module_regex.h"
#include "model/weights.h"

namespace dayzero::model::detail {

namespace {
bool is_qwen(Family f) { return f == Family::qwen2 || f == Family::qwen3 || f == Family::qwen3_moe; }

}  // namespace

// rope_theta and rope_scaling, or transformers 5's `rope_parameters` (rope_theta and the
// scaling keys in one object). `theta_default`: the family config class's rope_theta.
void read_rope(Fields& f, ModelConfig& c, double theta_default, bool interleaved_default) {
  RopeConfig& r = c.rope;
  r.interleaved = f.opt_bool("rope_interleave", interleaved_default);
  if (const nlohmann::json* params = f.opt_object("rope_parameters"); params && !f.has("rope_theta")) {
    Fields pf(*params, f.file(), "rope_parameters.");
    r.theta = pf.opt_double("rope_theta", theta_default);
    if (r.theta <= 1.0) pf.fail_value("rope_theta", std::to_string(r.theta), "must be greater than 1");
    r.type = pf.opt_string("rope_type", "default");
    if (r.type != "default")
      pf.fail_value("rope_type", "\"" + r.type + "\"", "only default rope is read from rope_parameters");
    const double partial = pf.opt_double("partial_rotary_factor", 1.0);
    if (!(partial > 0 && partial <= 1))
      pf.fail_value("partial_rotary_factor", std::to_string(partial), "must be in (0, 1]");
    if (c.attention == AttentionKind::gqa) {
      const double dims = partial * static_cast<double>(c.head_dim);
      c.rotary_dim = static_cast<int64_t>(dims);
      if (static_cast<double>(c.rotary_dim) != dims || c.rotary_dim % 2 != 0 || c.rotary_dim == 0)
        pf.fail_value("partial_rotary_factor", std::to_string(partial),
                      "must give an even number of rotary dims of head_dim " + std::to_string(c.head_dim));
    }
    r.original_max_position_embeddings = c.max_position_embeddings;
    return;
  }
  r.theta = f.opt_double("rope_theta", theta_default);
  if (r.theta <= 1.0) f.fail_value("rope_theta", std::to_string(r.theta), "must be greater than 1");
  const nlohmann::json* s = f.opt_object("rope_scaling");
  if (!s) return;
  Fields sf(*s, f.file(), "rope_scaling.");
  r.type = sf.opt_string("rope_type", sf.opt_string("type", "default"));
  r.factor = sf.opt_double("factor", 1.0);
  if (r.factor <= 0) sf.fail_value("factor", std::to_string(r.factor), "must be positive");
  r.original_max_position_embeddings = sf.opt_int("original_max_position_embeddings", 0, 0, kMaxPositions);
  r.low_freq_factor = sf.opt_double("low_freq_factor", r.low_freq_factor);
  r.high_freq_factor = sf.opt_double("high_freq_factor", r.high_freq_factor);
  r.beta_fast = sf.opt_double("beta_fast", r.beta_fast);
  r.beta_slow = sf.opt_double("beta_slow", r.beta_slow);
  r.mscale = sf.opt_double("mscale", 0.0);
  r.mscale_all_dim = sf.opt_double("mscale_all_dim", 0.0);
  r.attention_factor = sf.opt_double("attention_factor", 0.0);
  r.truncate = sf.opt_bool("truncate", true);
  if (r.type == "llama3") {
    if (r.original_max_position_embeddings == 0)
      sf.fail("original_max_position_embeddings", "llama3 rope scaling needs it");
    if (r.high_freq_factor <= r.low_freq_factor)
      sf.fail_value("high_freq_factor", std::to_string(r.high_freq_factor), "must exceed low_freq_factor");
  }
  if (r.original_max_position_embeddings == 0) r.original_max_position_embeddings = c.max_position_embeddings;
}

void read_layer_attention(Fields& f, ModelConfig& c, bool sliding_by_default) {
  const auto window = f.maybe_int("sliding_window", 1, kMaxPositions);
  c.sliding_window = window.value_or(0);
  const auto types = f.opt_strings("layer_types");
  c.layer_attention.assign(static_cast<size_t>(c.num_layers), LayerAttention::full);
  if (!types.empty()) {
    if (static_cast<int64_t>(types.size()) != c.num_layers)
      f.fail("layer_types",
             "has " + std::to_string(types.size()) + " entries for " + std::to_string(c.num_layers) + " layers");
    const bool linear_ok = c.family == Family::qwen3_5_moe;  // the families with a linear-attention kernel
    for (size_t i = 0; i < types.size(); ++i) {
      if (types[i] == "sliding_attention") c.layer_attention[i] = LayerAttention::sliding;
      else if (types[i] == "linear_attention" && linear_ok) c.layer_attention[i] = LayerAttention::linear;
      else if (types[i] != "full_attention")
        f.fail_value("layer_types[" + std::to_string(i) + "]", "\"" + types[i] + "\"",
                     std::string("unknown layer type for ") + std::string(family_name(c.family)) +
                         (linear_ok ? " (full_attention, linear_attention)" : " (full_attention, sliding_attention)"));
    }
  } else if (is_qwen(c.family)) {
    // Qwen2/3: sliding only with use_sliding_window, on layers >= max_window_layers.
    const bool use = f.opt_bool("use_sliding_window", false);
    const int64_t from = f.opt_int("max_window_layers", c.num_layers, 0, kMaxLayers);
    for (int64_t i = 0; i < c.num_layers; ++i)
      if (use && i >= from) c.layer_attention[i] = LayerAttention::sliding;
  } else if (sliding_by_default && c.sliding_window > 0) {
    std::fill(c.layer_attention.begin(), c.layer_attention.end(), LayerAttention::sliding);
  }
  const bool any_sliding = std::count(c.layer_attention.begin(), c.layer_attention.end(), LayerAttention::sliding) > 0;
  if (any_sliding && c.sliding_window == 0)
    f.fail("sliding_window", "sliding-attention layers need a positive sliding_window");
  if (!any_sliding) c.sliding_window = 0;
}

void read_gqa_family(Fields& f, ModelConfig& c) {
  c.attention = AttentionKind::gqa;
  // rope_theta defaults: MixtralConfig 1e6; LlamaConfig, MistralConfig, Qwen2/3(-MoE)Config 1e4.
  read_rope(f, c, c.family == Family::mixtral ? 1e6 : 1e4, false);
  switch (c.family) {
    case Family::qwen2:  // Qwen2Attention: bias on q, k, v; none on o
      c.qkv_bias = true;
      break;
    case Family::qwen3:
    case Family::qwen3_moe:
      c.qk_norm = true;
      c.qkv_bias = c.o_bias = f.opt_bool("attention_bias", false);
      break;
    case Family::llama:  // Llama / Mistral / Mixtral: attention_bias covers q, k, v and o
    case Family::mistral:
    case Family::mixtral:
      c.qkv_bias = c.o_bias = f.opt_bool("attention_bias", false);
      c.mlp_bias = f.opt_bool("mlp_bias", false);
      break;
    case Family::deepseek_v2:  // not GQA families: read_deepseek / read_gpt_oss / config_families_moe.cpp
    case Family::deepseek_v3:
    case Family::gpt_oss:
    case Family::minimax_m2:
    case Family::qwen3_5_moe:
    case Family::glm_moe_dsa:
    case Family::deepseek_v32: break;
  }
  if (c.family == Family::mixtral) {
    c.moe.num_experts = f.req_int("num_local_experts", 1, kMaxExperts);
    c.moe.experts_per_token = f.opt_int("num_experts_per_tok", 2, 1, kMaxExperts);
    c.moe.expert_intermediate = f.req_int("intermediate_size", 1, kMaxFfnWidth);
    c.moe.norm_topk_prob = true;  // Mixtral renormalizes the top-k softmax weights
  } else if (c.family == Family::qwen3_moe) {
    c.moe.num_experts = f.req_int("num_experts", 1, kMaxExperts);
    c.moe.experts_per_token = f.req_int("num_experts_per_tok", 1, kMaxExperts);
    c.moe.expert_intermediate = f.req_int("moe_intermediate_size", 1, kMaxFfnWidth);
    c.moe.layer_freq = f.opt_int("decoder_sparse_step", 1, 1, kMaxLayers);
    // Layer indices, at most one per layer: is_moe_layer searches this list for every layer.
    c.moe.dense_layers = f.opt_ints("mlp_only_layers", 0, c.num_layers - 1);
    if (static_cast<int64_t>(c.moe.dense_layers.size()) > c.num_layers)
      f.fail("mlp_only_layers", "has " + std::to_string(c.moe.dense_layers.size()) + " entries for " +
                                    std::to_string(c.num_layers) + " layers");
    c.moe.norm_topk_prob = f.opt_bool("norm_topk_prob", false);
  }
  // Dense FFN width: needed by dense models and by the dense layers of MoE ones.
  bool any_dense = false;
  for (int64_t i = 0; i < c.num_layers; ++i) any_dense = any_dense || !c.is_moe_layer(i);
  if (any_dense) c.intermediate_size = f.req_int("intermediate_size", 1, kMaxFfnWidth);
  else c.intermediate_size = f.opt_int("intermediate_size", 0, 0, kMaxFfnWidth);
  read_layer_attention(f, c, c.family == Family::mistral || c.family == Family::mixtral);
}

void read_deepseek(Fields& f, ModelConfig& c) {
  // Every MLA family read here but DeepSeek-V2 keeps V3's defaults (GLM-5, DeepSeek-V3.2).
  const bool v3 = c.family != Family::deepseek_v2;
  c.attention = AttentionKind::mla;
  // DeepseekV3Config: rope_theta 1e4, rope_interleave true (pairs (2i, 2i+1), as DeepSeek's reference).
  read_rope(f, c, 1e4, true);
  c.mla.q_lora_rank = f.maybe_int("q_lora_rank", 1, kMaxHiddenSize).value_or(0);
  c.mla.kv_lora_rank = f.req_int("kv_lora_rank", 1, kMaxHiddenSize);
  c.mla.qk_nope_head_dim = f.req_int("qk_nope_head_dim", 1, kMaxHeadDim);
  c.mla.qk_rope_head_dim = f.req_int("qk_rope_head_dim", 1, kMaxHeadDim);
  c.mla.v_head_dim = f.req_int("v_head_dim", 1, kMaxHeadDim);
  c.head_dim = c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim;
  c.qkv_bias = c.o_bias = f.opt_bool("attention_bias", false);

  auto& m = c.moe;
  m.num_experts = f.maybe_int("n_routed_experts", 1, kMaxExperts).value_or(0);
  if (m.num_experts > 0) {
    m.experts_per_token = f.req_int("num_experts_per_tok", 1, kMaxExperts);
    m.expert_intermediate = f.req_int("moe_intermediate_size", 1, kMaxFfnWidth);
    m.num_shared_experts = f.maybe_int("n_shared_experts", 0, kMaxExperts).value_or(0);
    m.first_dense_layers = f.opt_int("first_k_dense_replace", v3 ? 3 : 0, 0, kMaxLayers);
    m.layer_freq = f.opt_int("moe_layer_freq", 1, 1, kMaxLayers);
    m.routed_scaling_factor = f.opt_double("routed_scaling_factor", v3 ? 2.5 : 1.0);
    m.n_group = f.maybe_int("n_group", 1, kMaxExperts).value_or(1);
    m.topk_group = f.maybe_int("topk_group", 1, kMaxExperts).value_or(1);
    m.topk_method = f.opt_string("topk_method", v3 ? "noaux_tc" : "greedy");
    m.scoring_func = f.opt_string("scoring_func", v3 ? "sigmoid" : "softmax");
    m.norm_topk_prob = f.opt_bool("norm_topk_prob", v3);
    m.score_correction_bias = m.topk_method == "noaux_tc";
  }
  c.mtp_layers = f.opt_int("num_nextn_predict_layers", v3 ? 1 : 0, 0, kMaxLayers);
  bool any_dense = false;
  for (int64_t i = 0; i < c.num_layers; ++i) any_dense = any_dense || !c.is_moe_layer(i);
  c.intermediate_size =
      any_dense ? f.req_int("intermediate_size", 1, kMaxFfnWidth) : f.opt_int("intermediate_size", 0, 0, kMaxFfnWidth);
  read_layer_attention(f, c, false);
}

void read_gpt_oss(Fields& f, ModelConfig& c) {
  c.attention = AttentionKind::gqa;
  read_rope(f, c, 150000.0, false);  // GptOssConfig: rope_theta 150000, half-rotation layout
  c.head_dim = f.opt_int("head_dim", 64, 1, kMaxHeadDim);
  c.qkv_bias = c.o_bias = f.opt_bool("attention_bias", true);
  c.attention_sinks = true;
  auto& m = c.moe;
  m.num_experts = f.req_int("num_local_experts", 1, kMaxExperts);
  // Both spellings appear in the published config; they must agree.
  const auto a = f.maybe_int("num_experts_per_tok", 1, kMaxExperts);
  const auto b = f.maybe_int("experts_per_token", 1, kMaxExperts);
  if (a && b && *a != *b)
    f.fail_value("experts_per_token", std::to_string(*b), "disagrees with num_experts_per_tok = " + std::to_string(*a));
  m.experts_per_token = a ? *a : b.value_or(4);
  m.expert_intermediate = f.req_int("intermediate_size", 1, kMaxFfnWidth);
  m.expert_bias = true;
  m.norm_topk_prob = true;
  c.intermediate_size = 0;
  if (!f.has("layer_types")) {
    // GptOssConfig default: sliding on even layers, full on odd ones.
    c.sliding_window = f.opt_int("sliding_window", 128, 1, kMaxPositions);
    c.layer_attention.resize(static_cast<size_t>(c.num_layers));
    for (int64_t i = 0; i < c.num_layers; ++i)
      c.layer_attention[i] = (i % 2 == 0) ? LayerAttention::sliding : LayerAttention::full;
  } else {
    read_layer_attention(f, c, false);
  }
}

namespace {
// compressed-tensors (neuralmagic's format, vLLM's CompressedTensorsWNA16): the
// `pack-quantized` weight-only INT4 scheme Kimi-K2.5 ships, one config group of
// symmetric INT4 weights with a scale per `group_size` inputs, applied to every
// Linear module not in `ignore`. Other schemes are refused by name.
void read_compressed_tensors(Fields& qf, ModelConfig& c) {
  const std::string format = qf.opt_string("format", "");
  if (format != "pack-quantized")
    qf.fail_value("format", "\"" + format + "\"", "only the pack-quantized compressed-tensors format is read");
  const nlohmann::json* groups = qf.opt_object("config_groups");
  if (!groups || groups->size() != 1) qf.fail("config_groups", "expected exactly one quantization group");
  Fields gf(groups->begin().value(), qf.file(), qf.field("config_groups.") + groups->begin().key() + ".");
  const auto targets = gf.opt_strings("targets");
  if (targets.size() != 1 || targets[0] != "Linear") gf.fail("targets", "only a group targeting [\"Linear\"] is read");
  if (gf.has("input_activations")) gf.fail("input_activations", "only weight-only schemes are read");
  const nlohmann::json* w = gf.opt_object("weights");
  if (!w) gf.fail("weights", "required field is missing");
  Fields wf(*w, qf.file(), gf.field("weights."));
  if (wf.req_int("num_bits", 1, 64) != 4) wf.fail("num_bits", "only 4-bit weights are read");
  if (wf.opt_string("type", "int") != "int") wf.fail("type", "only integer weights are read");
  if (wf.opt_string("strategy", "") != "group") wf.fail("strategy", "only the group strategy is read");
  if (!wf.opt_bool("symmetric", true)) wf.fail("symmetric", "asymmetric (zero-point) weights are not read");
  const int64_t group = wf.req_int("group_size", 1, kMaxFfnWidth);
  if (group % 8 != 0)  // eight 4-bit values per packed int32
    wf.fail_value("group_size", std::to_string(group), "must be a multiple of 8 (values per packed int32)");
  c.quant.method = QuantMethod::compressed_int4;
  c.quant.format = {StorageKind::int4_group, DType::u8, 0, 0, group};
  c.quant.group_field = wf.field("group_size");
  c.quant.ignore = qf.opt_strings("ignore");
  if (static_cast<int64_t>(c.quant.ignore.size()) > kMaxModulePatterns)
    qf.fail_value("ignore", std::to_string(c.quant.ignore.size()) + " entries",
                  "at most " + std::to_string(kMaxModulePatterns) + " are accepted");
  int64_t regexes = 0;
  for (const auto& p : c.quant.ignore) {
    if (p.rfind("re:", 0) != 0) continue;
    if (++regexes > kMaxModuleGlobs)
      qf.fail("ignore", "more than " + std::to_string(kMaxModuleGlobs) + " regular expressions");
    try {
      ModuleRegex(p.substr(3));
    } catch (const std::invalid_argument& e) {
      qf.fail("ignore", e.what());
    }
  }
}
}  // namespace

void read_quantization(Fields& f, ModelConfig& c) {
  const nlohmann::json* q = f.opt_object("quantization_config");
  if (!q) return;
  Fields qf(*q, f.file(), f.field("quantization_config."));
  const std::string method = qf.opt_string("quant_method", "");
  c.quant.modules_to_not_convert = qf.opt_strings("modules_to_not_convert");
  const auto& keep = c.quant.modules_to_not_convert;
  if (static_cast<int64_t>(keep.size()) > kMaxModulePatterns)
    qf.fail_value("modules_to_not_convert", std::to_string(keep.size()) + " patterns",
                  "at most " + std::to_string(kMaxModulePatterns) + " are accepted");
  int64_t globs = 0;
  for (const auto& p : keep) {
    if (p.empty()) qf.fail("modules_to_not_convert", "contains an empty pattern");
    if (is_glob_pattern(p) && ++globs > kMaxModuleGlobs)
      qf.fail_value("modules_to_not_convert", "\"" + p + "\"",
                    "more than " + std::to_string(kMaxModuleGlobs) + " glob patterns (each is tried on every weight)");
  }
  if (method == "fp8") {
    c.quant.method = QuantMethod::fp8;
    const std::string fmt = qf.opt_string("fmt", "e4m3");  // MiniMax-M2 spells it as torch does
    if (fmt != "e4m3" && fmt != "float8_e4m3fn") qf.fail("fmt", "only e4m3 FP8 weights are supported");
    const auto block = qf.opt_ints("weight_block_size", 1, kMaxFfnWidth);
    if (block.empty()) {
      c.quant.format = {StorageKind::fp8_tensor, DType::f8_e4m3};
    } else {
      if (block.size() != 2) qf.fail("weight_block_size", "expected [rows, cols]");
      c.quant.format = {StorageKind::fp8_block, DType::f8_e4m3, block[0], block[1]};
    }
  } else if (method == "mxfp4") {
    c.quant.method = QuantMethod::mxfp4;
    c.quant.format = {StorageKind::mxfp4, DType::u8};
  } else if (method == "compressed-tensors") {
    read_compressed_tensors(qf, c);
  } else {
    qf.fail("quant_method", method.empty()
                                ? "missing quantization method (supported: fp8, mxfp4, compressed-tensors)"
                                : "unsupported quantization method (supported: fp8, mxfp4, compressed-tensors)");
  }
}

void validate(const Fields& f, const ModelConfig& c) {
  if (c.num_kv_heads > c.num_heads || c.num_heads % c.num_kv_heads != 0)
    f.fail_value("num_key_value_heads", std::to_string(c.num_kv_heads),
                 "must divide num_attention_heads = " + std::to_string(c.num_heads));
  const auto& m = c.moe;
  if (m.num_experts > 0) {
    const int64_t layer_experts = (c.num_layers + c.mtp_layers) * m.num_experts;  // < 2^13 x 2^16
    if (layer_experts > kMaxLayerExperts)
      f.fail_value("num_hidden_layers", std::to_string(c.num_layers),
                   "with " + std::to_string(m.num_experts) + " experts per layer makes " +
                       std::to_string(layer_experts) + " layer experts; at most " + std::to_string(kMaxLayerExperts) +
                       " are accepted");
    if (m.experts_per_token > m.num_experts)
      f.fail_value("num_experts_per_tok", std::to_string(m.experts_per_token),
                   "exceeds the number of experts, " + std::to_string(m.num_experts));
    if (m.n_group < 1 || m.num_experts % m.n_group != 0)
      f.fail_value("n_group", std::to_string(m.n_group),
                   "must divide the number of routed experts, " + std::to_string(m.num_experts));
    if (m.topk_group > m.n_group)
      f.fail_value("topk_group", std::to_string(m.topk_group), "exceeds n_group = " + std::to_string(m.n_group));
    if (m.topk_group * (m.num_experts / m.n_group) < m.experts_per_token)
      f.fail_value("topk_group", std::to_string(m.topk_group),
                   "the selected groups hold fewer experts than num_experts_per_tok");
  }
  if (c.attention == AttentionKind::mla && c.num_heads <= 0)
    f.fail("num_attention_heads", "MLA needs at least one head");
}

}  // namespace dayzero::model::detail
