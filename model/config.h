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

enum class Family {
  llama,
  mistral,
  qwen2,
  qwen3,
  qwen3_moe,
  mixtral,
  deepseek_v2,
  deepseek_v3,
  gpt_oss,
  minimax_m2,    // MiniMax-M2 / M2.5: GQA with whole-layer q/k norms, 256 sigmoid-routed experts
  qwen3_5_moe,   // Qwen3.5-MoE: gated delta-net linear attention, a gated full-attention layer every few
  glm_moe_dsa,   // GLM-5: MLA with DeepSeek sparse attention (a top-k token indexer)
  deepseek_v32,  // DeepSeek-V3.2: DeepSeek-V3 with the same sparse-attention indexer
};

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

enum class AttentionKind { gqa, mla };  // MHA is GQA with kv_heads == heads
// What a decoder layer's token mixer is: softmax attention over the whole context or
// a sliding window of it (both cache K/V per token), or linear attention (a gated
// delta-net: a fixed recurrent state per sequence, whatever the context).
enum class LayerAttention { full, sliding, linear };

// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2).
struct MlaDims {
  int64_t q_lora_rank = 0;  // 0: queries projected directly from hidden (V2-Lite)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

// Gated delta-net linear attention (Qwen3-Next, Qwen3.5): `key_heads` query/key heads
// of `key_head_dim`, `value_heads` value heads of `value_head_dim` (each value head
// reads key head h * key_heads / value_heads), a causal depthwise conv of
// `conv_kernel` taps over q, k and v. Its state per sequence: one key_head_dim x
// value_head_dim matrix per value head (in `state_dtype`) and the conv's last
// conv_kernel - 1 inputs.
struct LinearAttentionDims {
  int64_t key_heads = 0;
  int64_t value_heads = 0;
  int64_t key_head_dim = 0;
  int64_t value_head_dim = 0;
  int64_t conv_kernel = 0;
  DType state_dtype = DType::f32;  // config mamba_ssm_dtype

  int64_t key_dim() const { return key_heads * key_head_dim; }
  int64_t value_dim() const { return value_heads * value_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // q, k, v go through the conv
  int64_t state_elems() const { return value_heads * key_head_dim * value_head_dim; }
  int64_t conv_state_elems() const { return (conv_kernel - 1) * conv_dim(); }
};

// DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): a lightweight indexer of `heads`
// heads of `head_dim` scores every cached token for each query and the attention
// reads only the `topk` best. The indexer caches one key of head_dim per token.
struct SparseIndexer {
  int64_t heads = 0;  // 0: no indexer (dense attention)
  int64_t head_dim = 0;
  int64_t topk = 0;
};

struct MoeConfig {
  int64_t num_experts = 0;  // routed experts per MoE layer; 0 = dense model
  int64_t experts_per_token = 0;
  int64_t expert_intermediate = 0;     // FFN width of one routed expert
  int64_t num_shared_experts = 0;      // DeepSeek: shared experts of width expert_intermediate
  bool shared_expert_gate = false;     // Qwen3.5: a sigmoid gate [1, hidden] on the shared expert's output
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

// fp8: block or tensor FP8 (quant_method fp8); mxfp4: gpt-oss experts;
// compressed_int4: compressed-tensors pack-quantized INT4 (Kimi-K2.5's experts).
enum class QuantMethod { none, fp8, mxfp4, compressed_int4 };

struct QuantConfig {
  QuantMethod method = QuantMethod::none;
  // Storage of the converted weights (fp8_block / fp8_tensor / mxfp4).
  StorageFormat format;
  // HF module patterns kept unquantized (`modules_to_not_convert`), as given.
  std::vector<std::string> modules_to_not_convert;
  // compressed-tensors `ignore`: module names, or `re:` regular expressions (the
  // subset model/module_regex.h reads) matched against the whole module name.
  std::vector<std::string> ignore;
  std::string group_field;  // compressed-tensors: where group_size was read (for errors)
};

struct ModelConfig {
  std::string source;        // file it was read from (for messages)
  std::string architecture;  // e.g. "DeepseekV3ForCausalLM"
  std::string model_type;    // e.g. "kimi_k2"
  Family family = Family::llama;
  // How the checkpoint names the text model's tensors (model::checkpoint_name): DayZero's
  // weight names are the text model's own ("model.layers.0...", "lm_head.weight"); a
  // multimodal wrapper stores them under its own prefixes, and tensors under
  // `other_prefixes` (the vision encoder, its projector) are not the text model's.
  struct CheckpointNaming {
    std::string text = "model.";  // replaces the leading "model."
    std::string head;             // goes before "lm_head."
    std::vector<std::string> other_prefixes;
  } naming;

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
  bool qkv_bias = false;                        // biases on q/k/v projections
  bool o_bias = false;                          // bias on the output projection
  bool mlp_bias = false;                        // biases on dense MLP projections
  bool qk_norm = false;                         // Qwen3: per-head RMSNorm on q and k
  bool qk_norm_whole = false;                   // MiniMax-M2: the q / k norms span all heads (per_layer)
  bool attn_output_gate = false;                // Qwen3.5: q_proj also emits a sigmoid gate on the output
  int64_t rotary_dim = 0;                       // GQA: dims of each head that get RoPE (0: all of head_dim)
  bool attention_sinks = false;                 // gpt-oss: one learned sink logit per head
  int64_t sliding_window = 0;                   // tokens; 0 = none
  std::vector<LayerAttention> layer_attention;  // one per decoder layer

  RopeConfig rope;

  LinearAttentionDims linear;  // LayerAttention::linear layers
  SparseIndexer indexer;       // MLA layers with DeepSeek sparse attention

  MoeConfig moe;
  int64_t mtp_layers = 0;  // DeepSeek-V3 num_nextn_predict_layers, Qwen3.5 mtp_num_hidden_layers

  DType torch_dtype = DType::bf16;
  QuantConfig quant;

  bool is_moe() const { return moe.num_experts > 0; }
  bool attention_is_mla_family() const {
    return family == Family::deepseek_v2 || family == Family::deepseek_v3 || family == Family::glm_moe_dsa ||
           family == Family::deepseek_v32;
  }
  bool has_linear_layers() const;
  bool is_moe_layer(int64_t layer) const;  // layer in [0, num_layers + mtp_layers)
  std::string display_family() const;      // "Kimi-K2 (DeepSeek-V3 architecture)"
};

// Parse config.json text. `source` names the file in error messages.
// Throws core::InputError on malformed, incomplete, inconsistent or unsupported input.
ModelConfig parse_config(std::string_view json_text, const std::string& source);

// Read a config.json file, or the config.json inside a model directory.
ModelConfig load_config(const std::filesystem::path& path);

}  // namespace dayzero::model
