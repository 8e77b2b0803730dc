#pragma once
// ModelConfig: a Hugging Face config.json read into one normalized, validated
// description of the architecture. Family-specific keys (MLA dims, expert counts,
// layer types) are mapped onto common fields; keys a config omits take the
// defaults of the family's reference implementation.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/dtype.h"

namespace dayzero::model {

enum class Family { llama, mistral, qwen2, qwen3, qwen3_moe, mixtral, deepseek_v2, deepseek_v3, gpt_oss };

std::string_view family_name(Family f);
// The `architectures` values DayZero reads, as one comma-separated line (for errors).
std::string supported_architectures();

// Upper bounds on a config's counts and sizes, checked when it is read, so that every
// loop over layers, heads or experts is bounded and sizes stay far inside 64 bits before
// the overflow-checked products (model_weights) are even reached. Each is a generous
// multiple of the largest published model, so no real config comes near one.
inline constexpr int64_t kMaxLayers = 4096;         // 32x Llama-3.1-405B's 126 decoder layers
inline constexpr int64_t kMaxHiddenSize = 1 << 20;  // 64x Llama-3.1-405B's hidden_size 16384 (also MLA ranks)
inline constexpr int64_t kMaxFfnWidth = 1 << 22;    // 78x Llama-3.1-405B's intermediate_size 53248
inline constexpr int64_t kMaxHeads = 1 << 14;       // 128x the 128 heads of Llama-3.1-405B and DeepSeek-V3
inline constexpr int64_t kMaxHeadDim = 1 << 14;     // 64x the largest published head_dim, 256 (Gemma)
inline constexpr int64_t kMaxVocab = 1 << 24;       // 64x Gemma 3's vocab_size 262144
inline constexpr int64_t kMaxExperts = 1 << 16;     // 64x the 1024 of DayZero-3T-MoE (Kimi-K2 has 384)
// Routed experts over all layers (MTP included): `dayzero check` lists each expert's
// tensors by name. 4x DayZero-3T-MoE's 61 x 1024 = 62,464 (DeepSeek-V3: 62 x 256).
inline constexpr int64_t kMaxLayerExperts = 1 << 18;
inline constexpr int64_t kMaxPositions = 1 << 30;  // 100x Llama 4 Scout's 10M-token context
// quantization_config.modules_to_not_convert: 230x the longest published list we ship,
// Qwen3-235B-A22B-FP8's 283 (three modules per layer); a list naming every expert
// projection of DeepSeek-V3 (61 layers x 256 experts x 3) would still fit.
inline constexpr int64_t kMaxModulePatterns = 1 << 16;
// Of those, glob patterns (model.layers.*.self_attn), each tried against every weight
// name: 16x the 4 of gpt-oss, the only published lists we know with globs.
inline constexpr int64_t kMaxModuleGlobs = 64;

enum class AttentionKind { gqa, mla };     // MHA is GQA with kv_heads == heads
enum class LayerWindow { full, sliding };  // per-layer attention span

// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).
struct MlaDims {
  int64_t q_lora_rank = 0;  // 0: queries projected directly from hidden (V2-Lite)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct MoeConfig {
  int64_t num_experts = 0;  // routed experts per MoE layer; 0 = dense model
  int64_t experts_per_token = 0;
  int64_t expert_intermediate = 0;     // FFN width of one routed expert
  int64_t num_shared_experts = 0;      // DeepSeek: shared experts of width expert_intermediate
  int64_t first_dense_layers = 0;      // DeepSeek first_k_dense_replace
  int64_t layer_freq = 1;              // DeepSeek moe_layer_freq / Qwen decoder_sparse_step
  std::vector<int64_t> dense_layers;   // Qwen3-MoE mlp_only_layers
  bool expert_bias = false;            // gpt-oss: biases on expert GEMMs and router
  bool score_correction_bias = false;  // DeepSeek-V3 noaux_tc: router e_score_correction_bias
  double routed_scaling_factor = 1.0;
  int64_t n_group = 1;     // group-limited routing: expert groups
  int64_t topk_group = 1;  // groups a token may route to
  std::string scoring_func = "softmax";
  std::string topk_method = "greedy";
  bool norm_topk_prob = false;
};

// Rotary position embedding: config.json `rope_theta` and `rope_scaling`. Defaults
// follow transformers' modeling_rope_utils.py (ROPE_INIT_FUNCTIONS) for the keys a
// config omits.
struct RopeConfig {
  std::string type = "default";  // rope_scaling.rope_type (legacy key: type): default, llama3, yarn, ...
  double theta = 10000.0;        // rope_theta (family default when absent)
  double factor = 1.0;           // context extension factor
  int64_t original_max_position_embeddings = 0;  // 0: max_position_embeddings
  double low_freq_factor = 1.0;                  // llama3 (Llama 3.1 release value)
  double high_freq_factor = 4.0;                 // llama3 (Llama 3.1 release value)
  double beta_fast = 32.0;                       // yarn (YaRN paper default)
  double beta_slow = 1.0;                        // yarn (YaRN paper default)
  double mscale = 0.0;                           // yarn, DeepSeek; 0 = absent
  double mscale_all_dim = 0.0;                   // yarn, DeepSeek; 0 = absent
  double attention_factor = 0.0;                 // yarn: explicit cos/sin scale; 0 = derived from factor
  bool truncate = true;                          // yarn: round the correction range to whole dims
  bool interleaved = false;                      // rotate pairs (2i, 2i+1) (DeepSeek rope_interleave), else halves
};

enum class QuantMethod { none, fp8, mxfp4 };

struct QuantConfig {
  QuantMethod method = QuantMethod::none;
  // Storage of the converted weights (fp8_block / fp8_tensor / mxfp4).
  StorageFormat format;
  // HF module patterns kept unquantized (`modules_to_not_convert`), as given.
  std::vector<std::string> modules_to_not_convert;
};

struct ModelConfig {
  std::string source;        // file it was read from (for messages)
  std::string architecture;  // e.g. "DeepseekV3ForCausalLM"
  std::string model_type;    // e.g. "kimi_k2"
  Family family = Family::llama;

  int64_t hidden_size = 0;
  int64_t num_layers = 0;  // decoder layers, MTP modules excluded
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;           // GQA head dim (MLA: qk_nope + qk_rope)
  int64_t intermediate_size = 0;  // dense FFN width
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;
  double rms_norm_eps = 1e-6;  // RMSNorm epsilon (family default when absent)

  AttentionKind attention = AttentionKind::gqa;
  MlaDims mla;
  bool qkv_bias = false;                   // biases on q/k/v projections
  bool o_bias = false;                     // bias on the output projection
  bool mlp_bias = false;                   // biases on dense MLP projections
  bool qk_norm = false;                    // Qwen3: per-head RMSNorm on q and k
  bool attention_sinks = false;            // gpt-oss: one learned sink logit per head
  int64_t sliding_window = 0;              // tokens; 0 = none
  std::vector<LayerWindow> layer_windows;  // one per decoder layer

  RopeConfig rope;

  MoeConfig moe;
  int64_t mtp_layers = 0;  // DeepSeek-V3 num_nextn_predict_layers

  DType torch_dtype = DType::bf16;
  QuantConfig quant;

  bool is_moe() const { return moe.num_experts > 0; }
  bool is_moe_layer(int64_t layer) const;  // layer in [0, num_layers + mtp_layers)
  std::string display_family() const;      // "Kimi-K2 (DeepSeek-V3 architecture)"
};

// Parse config.json text. `source` names the file in error messages.
// Throws core::InputError on malformed, incomplete, inconsistent or unsupported input.
ModelConfig parse_config(std::string_view json_text, const std::string& source);

// Read a config.json file, or the config.json inside a model directory.
ModelConfig load_config(const std::filesystem::path& path);

}  // namespace dayzero::model
