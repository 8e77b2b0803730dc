#include "model/config.h"

#include <algorithm>

#include "core/input_file.h"
#include "model/config_parse.h"

namespace dayzero::model {

namespace {

struct ArchEntry {
  const char* architecture;
  Family family;
};
// `architectures` values read by DayZero. Kimi-K2 ships as DeepseekV3ForCausalLM.
constexpr ArchEntry kArchitectures[] = {
    {"LlamaForCausalLM", Family::llama},
    {"MistralForCausalLM", Family::mistral},
    {"Qwen2ForCausalLM", Family::qwen2},
    {"Qwen3ForCausalLM", Family::qwen3},
    {"Qwen3MoeForCausalLM", Family::qwen3_moe},
    {"MixtralForCausalLM", Family::mixtral},
    {"DeepseekV2ForCausalLM", Family::deepseek_v2},
    {"DeepseekV3ForCausalLM", Family::deepseek_v3},
    {"GptOssForCausalLM", Family::gpt_oss},
    {"MiniMaxM2ForCausalLM", Family::minimax_m2},
    {"Qwen3_5MoeForConditionalGeneration", Family::qwen3_5_moe},
    {"Qwen3_5MoeForCausalLM", Family::qwen3_5_moe},
    {"GlmMoeDsaForCausalLM", Family::glm_moe_dsa},
    {"DeepseekV32ForCausalLM", Family::deepseek_v32},
};

struct TextTypeEntry {
  const char* model_type;
  Family family;
};
// Multimodal wrappers nest the language model in `text_config`; its model_type
// says which family it is (vision towers are not modelled).
constexpr TextTypeEntry kTextModelTypes[] = {
    {"llama", Family::llama},
    {"mistral", Family::mistral},
    {"qwen2", Family::qwen2},
    {"qwen3", Family::qwen3},
    {"qwen3_vl_text", Family::qwen3},
    {"qwen3_moe", Family::qwen3_moe},
    {"qwen3_vl_moe_text", Family::qwen3_moe},
    {"mixtral", Family::mixtral},
    {"deepseek_v3", Family::deepseek_v3},
    {"kimi_k2", Family::deepseek_v3},  // Kimi-K2.5's text_config: DeepSeek-V3's architecture
    {"qwen3_5_moe_text", Family::qwen3_5_moe},
};

std::optional<Family> family_of_architecture(const std::string& a) {
  for (const auto& e : kArchitectures)
    if (a == e.architecture) return e.family;
  return std::nullopt;
}

}  // namespace

std::string_view family_name(Family f) {
  switch (f) {
    case Family::llama: return "llama";
    case Family::mistral: return "mistral";
    case Family::qwen2: return "qwen2";
    case Family::qwen3: return "qwen3";
    case Family::qwen3_moe: return "qwen3_moe";
    case Family::mixtral: return "mixtral";
    case Family::deepseek_v2: return "deepseek_v2";
    case Family::deepseek_v3: return "deepseek_v3";
    case Family::gpt_oss: return "gpt_oss";
    case Family::minimax_m2: return "minimax_m2";
    case Family::qwen3_5_moe: return "qwen3_5_moe";
    case Family::glm_moe_dsa: return "glm_moe_dsa";
    case Family::deepseek_v32: return "deepseek_v32";
  }
  return "?";
}

// The published wrappers' tensor names (their checkpoints' index files; transformers'
// conversion mappings, e.g. Qwen3-VL / Qwen3.5's "^model.language_model" -> "model"):
// Qwen's vision-language wrappers keep `model.language_model.` and a bare `lm_head`;
// Kimi-K2.5 (like Llama 4) nests a whole causal LM under `language_model.`.
namespace {
ModelConfig::CheckpointNaming wrapper_naming(const std::string& architecture) {
  if (architecture.rfind("Qwen3", 0) == 0 && architecture.ends_with("ForConditionalGeneration"))
    return {"model.language_model.", "", {"model.visual."}};
  if (architecture == "KimiK25ForConditionalGeneration")
    return {"language_model.model.", "language_model.", {"vision_tower.", "mm_projector."}};
  return {};
}
}  // namespace

std::string supported_architectures() {
  std::string s;
  for (const auto& e : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(e.architecture);
  return s + " (and multimodal wrappers whose text_config is one of these)";
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  if (moe.num_experts == 0) return false;
  if (std::find(moe.dense_layers.begin(), moe.dense_layers.end(), layer) != moe.dense_layers.end()) return false;
  if (attention_is_mla_family()) return layer >= moe.first_dense_layers && layer % moe.layer_freq == 0;
  return (layer + 1) % moe.layer_freq == 0;  // Qwen decoder_sparse_step (1 for all others)
}

bool ModelConfig::has_linear_layers() const {
  return std::find(layer_attention.begin(), layer_attention.end(), LayerAttention::linear) != layer_attention.end();
}

std::string ModelConfig::display_family() const {
  if (model_type == "kimi_k2") return "Kimi-K2 (DeepSeek-V3 architecture)";
  switch (family) {
    case Family::llama: return "Llama";
    case Family::mistral: return "Mistral";
    case Family::qwen2: return "Qwen2";
    case Family::qwen3: return "Qwen3";
    case Family::qwen3_moe: return "Qwen3-MoE";
    case Family::mixtral: return "Mixtral";
    case Family::deepseek_v2: return "DeepSeek-V2";
    case Family::deepseek_v3: return "DeepSeek-V3";
    case Family::gpt_oss: return "gpt-oss";
    case Family::minimax_m2: return "MiniMax-M2";
    case Family::qwen3_5_moe: return "Qwen3.5-MoE (hybrid linear attention)";
    case Family::glm_moe_dsa: return "GLM-5 (MLA with DeepSeek sparse attention)";
    case Family::deepseek_v32: return "DeepSeek-V3.2 (MLA with DeepSeek sparse attention)";
  }
  return "?";
}

namespace {

// The fields every family has (at the top of config.json, or in text_config).
void read_common(core::Fields& f, core::Fields& top, ModelConfig& c) {
  c.hidden_size = f.req_int("hidden_size", 1, kMaxHiddenSize);
  c.num_layers = f.req_int("num_hidden_layers", 1, kMaxLayers);
  c.num_heads = f.req_int("num_attention_heads", 1, kMaxHeads);
  c.vocab_size = f.req_int("vocab_size", 1, kMaxVocab);
  c.num_kv_heads = f.opt_int("num_key_value_heads", c.num_heads, 1, kMaxHeads);
  c.max_position_embeddings = f.opt_int("max_position_embeddings", 0, 0, kMaxPositions);
  c.tie_word_embeddings = f.opt_bool("tie_word_embeddings", top.opt_bool("tie_word_embeddings", false));
  // transformers' config defaults: 1e-5 for Mixtral, Mistral and gpt-oss, 1e-6 for the others.
  const bool eps5 = c.family == Family::mixtral || c.family == Family::mistral || c.family == Family::gpt_oss;
  c.rms_norm_eps = f.opt_double("rms_norm_eps", eps5 ? 1e-5 : 1e-6);
  if (!(c.rms_norm_eps > 0 && c.rms_norm_eps < 1)) f.fail("rms_norm_eps", "must be in (0, 1)");
  if (f.has("head_dim")) {
    c.head_dim = f.req_int("head_dim", 1, kMaxHeadDim);
  } else {
    if (c.attention_is_mla_family() == false && c.hidden_size % c.num_heads != 0)
      f.fail_value("num_attention_heads", std::to_string(c.num_heads),
                   "hidden_size " + std::to_string(c.hidden_size) +
                       " is not divisible by the number of heads and no head_dim is given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  const std::string dtype =
      f.opt_string("torch_dtype", top.opt_string("torch_dtype", f.opt_string("dtype", "bfloat16")));
  if (auto t = dtype_from_torch(dtype)) c.torch_dtype = *t;
  else f.fail_value("torch_dtype", "\"" + dtype + "\"", "unsupported dtype (bfloat16, float16, float32)");
}

// The family's own keys (MLA dims, expert counts, layer types, ...).
void read_family(core::Fields& f, ModelConfig& c) {
  switch (c.family) {
    case Family::deepseek_v2:
    case Family::deepseek_v3: detail::read_deepseek(f, c); break;
    case Family::gpt_oss: detail::read_gpt_oss(f, c); break;
    case Family::minimax_m2: detail::read_minimax_m2(f, c); break;
    case Family::qwen3_5_moe: detail::read_qwen3_5_moe(f, c); break;
    case Family::glm_moe_dsa:
    case Family::deepseek_v32: detail::read_mla_dsa(f, c); break;
    case Family::llama:
    case Family::mistral:
    case Family::qwen2:
    case Family::qwen3:
    case Family::qwen3_moe:
    case Family::mixtral: detail::read_gqa_family(f, c); break;
  }
}

}  // namespace

ModelConfig parse_config(std::string_view json_text, const std::string& source) {
  const nlohmann::json root = core::parse_json_text(json_text, source);
  if (!root.is_object()) throw core::InputError(source, "", core::show(root), "expected a JSON object");

  core::Fields top(root, source);
  ModelConfig c;
  c.source = source;

  const auto archs = top.opt_strings("architectures");
  if (archs.empty())
    top.fail("architectures", "required field is missing or empty; supported: " + supported_architectures());
  c.architecture = archs.front();
  c.model_type = top.opt_string("model_type", "");

  // Language model fields live at the top, or in text_config for multimodal wrappers.
  const nlohmann::json* text = top.opt_object("text_config");
  std::optional<Family> family = family_of_architecture(c.architecture);
  std::string text_type;
  if (text) {
    core::Fields tf(*text, source, "text_config.");
    text_type = tf.opt_string("model_type", "");
    if (!family) {
      for (const auto& e : kTextModelTypes)
        if (text_type == e.model_type) family = e.family;
    }
  }
  if (!family)
    top.fail_value("architectures", "\"" + c.architecture + "\"",
                   "unsupported architecture; supported: " + supported_architectures());
  c.family = *family;

  core::Fields f = text ? core::Fields(*text, source, "text_config.") : top;
  if (text && !text_type.empty()) c.model_type = text_type;
  if (text) c.naming = wrapper_naming(c.architecture);

  read_common(f, top, c);
  read_family(f, c);
  // quantization_config sits at the top level, also for wrapped text models.
  detail::read_quantization(text && !top.has("quantization_config") ? f : top, c);
  detail::validate(f, c);
  return c;
}

ModelConfig load_config(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(path, ec)) file = path / "config.json";
  if (!std::filesystem::exists(file, ec))
    throw core::InputError(
        file.string(), "", "",
        std::filesystem::is_directory(path, ec) ? "model directory has no config.json" : "no such file");
  return parse_config(core::read_input_file(file), file.string());
}

}  // namespace dayzero::model
