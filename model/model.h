#pragma once
// Model: everything DayZero knows about an architecture from its config.json —
// the validated config, the checkpoint's weights, the per-layer op inventory —
// and the exact counts derived from them (parameters, bytes, KV cache).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/ops.h"
#include "model/weights.h"

namespace dayzero::model {

// Storage of a converted projection matrix: bf16; fp8 with 128x128 block scales
// (DeepSeek-V3 recipe); int8 with an F32 scale per output channel (W8A8); int8_w8a16
// with a BF16 scale per output channel; int4 with one BF16 scale per 128 inputs
// (GPTQ/AWQ-style); nvfp4 with an F8_E4M3 scale per 16 inputs and an F32 scale per
// matrix. `checkpoint` has no one format (each weight keeps its own): bf16 here.
StorageFormat matrix_format(WeightPrecision p);

// The indexer's key cache: FP8 keys of index_head_dim plus one F32 scale per key
// (DeepSeek-V3.2's reference `act_quant` with block = index_head_dim; vLLM's
// DeepseekV32IndexerCache: 128 + 4 = 132 bytes per token per layer).
inline constexpr int64_t kIndexerKeyScaleBytes = 4;

struct Model {
  ModelConfig config;
  std::vector<Weight> weights;  // MTP weights included, flagged
  std::vector<Op> pre_ops;      // embedding lookup
  std::vector<Layer> layers;    // decoder layers, then MTP modules
  std::vector<Op> post_ops;     // final norm, LM head

  // Parameters (elements) of the main model; MTP modules are counted apart.
  int64_t params_total() const;
  int64_t params_active() const;     // per token: all but the unselected routed experts
  int64_t params_embedding() const;  // input embedding table
  int64_t params_head() const;       // output head (0 when tied to the embedding)
  int64_t params_mtp() const;        // MTP modules, their embedding and head copies included
  std::map<Part, int64_t> params_by_part(bool mtp = false) const;

  // Bytes of the main model's weights (mtp: of the MTP modules), scales included.
  int64_t weights_bytes(WeightPrecision p, bool mtp = false) const;
  int64_t weight_bytes(const Weight& w, WeightPrecision p) const;

  // KV cache per token of context over all main-model layers, uncapped (what a
  // short sequence pays), and for a whole sequence with sliding layers capped at
  // their window. `elem_bytes`: 2 for bf16, 1 for fp8.
  int64_t kv_bytes_per_token(int64_t elem_bytes) const;
  int64_t kv_cache_bytes(int64_t seq_len, int64_t elem_bytes) const;

  // Linear-attention layers' state per sequence, whatever its length: the recurrent
  // state (in the config's state dtype) and the conv window (`elem_bytes` each).
  int64_t linear_state_bytes_per_seq(int64_t elem_bytes) const;
  // Sparse-attention indexer keys per token of context over all main-model layers: FP8
  // keys with one F32 scale each, whatever the KV cache's dtype (kIndexerKeyScaleBytes).
  int64_t indexer_bytes_per_token() const;
  int64_t layers_of(LayerAttention kind) const;  // main-model layers of a kind

  const Weight* find_weight(const std::string& name) const;
  int64_t num_decoder_layers() const { return config.num_layers; }
};

// Build the weight list and op inventory of a parsed config; fills each op's
// params and bytes from the weights it reads.
Model build_model(ModelConfig config);
// load_config + build_model.
Model load_model(const std::filesystem::path& path);

}  // namespace dayzero::model
