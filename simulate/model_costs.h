#pragma once
// What the simulator needs of a model, computed once per model so that costing a
// plan is arithmetic: per layer class (dense/MoE x full/sliding/linear attention), the
// bytes of each weight class at each precision and the FLOPs per token.

#include <array>
#include <cstdint>
#include <iterator>
#include <vector>

#include "model/model.h"
#include "topology/device.h"

namespace dayzero::simulate {

// How a class of weights is split over ranks.
enum class WeightClass {
  attn_sharded,     // split over attention TP (q/o, MLA q_b/kv_b, sinks)
  attn_kv,          // GQA k/v projections: split over TP down to one KV head per rank
  attn_replicated,  // MLA q_a/kv_a projections: a full copy on every rank
  norms,            // RMSNorm weights: replicated; costed as element-wise ops
  dense_mlp,        // split over attention TP
  shared_experts,   // split over attention TP
  router,           // replicated
  expert,           // ONE routed expert (all its matrices); split over moe TP
  count
};
inline constexpr size_t kWeightClasses = static_cast<size_t>(WeightClass::count);
inline constexpr size_t kPrecisions = std::size(model::kAllPrecisions);  // indexed by model::WeightPrecision
using BytesByPrecision = std::array<int64_t, kPrecisions>;

// GEMM inputs of a layer's weight class (LayerClassCosts::gemm_inputs): how many, and
// their elements by how a layout splits them.
struct GemmInputs {
  int64_t count = 0;
  int64_t elems_per_token = 0;     // held whole on every rank (the input of a column- or head-split GEMM)
  int64_t tp_elems_per_token = 0;  // split by attention TP (the input of a row-split GEMM: o_proj, down_proj)
  int64_t expert_elems = 0;        // per (token, expert) pair, split by MoE TP (an expert's down_proj)
  bool operator==(const GemmInputs&) const = default;
};

struct LayerClassCosts {
  bool moe = false;
  int64_t window = 0;  // sliding window, 0 = full
  int64_t count = 0;   // decoder layers of this class in the whole model
  std::array<BytesByPrecision, kWeightClasses> bytes{};
  // MLA: the BF16 copies of a quantized kv_b's halves (W_UK, W_UV) the engines keep for
  // the absorbed decode, split over attention TP as kv_b is; held, not read beside kv_b.
  BytesByPrecision mla_absorbed_copy_bytes{};
  std::array<int64_t, kWeightClasses> flops_per_token{};  // expert: one expert
  // The largest one matrix of each class (out x in elements, whole, before TP; one
  // expert's for expert): what an executor that widens a quantized matrix for its
  // GEMM holds of it at once (simulate/memory.cpp, the CUDA executor's staging).
  std::array<int64_t, kWeightClasses> largest_matrix_elems{};
  int64_t attn_ctx_flops = 0;           // per query token per context token (all heads)
  int64_t attn_ctx_flops_absorbed = 0;  // MLA decode form
  int64_t kv_elems_per_token = 0;       // cached elements per token (all KV heads)
  bool linear = false;                  // gated delta-net layers: a state per sequence, no KV cache
  int64_t state_bytes_per_seq = 0;      // linear: recurrent state (its own dtype) + conv window (bf16)
  int64_t recurrent_state_bytes = 0;    // linear: the part a decode step reads and writes
  int64_t attn_topk = 0;                // sparse attention: context tokens each query reads (0 = all)
  int64_t index_bytes_per_token = 0;    // sparse attention: indexer keys cached per token (FP8 + scale)
  int64_t index_ctx_flops = 0;          // sparse attention: indexer FLOPs per query per context token
  // Elements read + written by the element-wise ops, by how a layout splits them:
  int64_t elementwise_elems_per_token = 0;     // on every rank: norms of the hidden state, the MoE combine
  int64_t elementwise_tp_elems_per_token = 0;  // split by attention TP: RoPE, per-head norms, MLP activations
  int64_t elementwise_expert_elems = 0;        // per (token, expert) pair, split by MoE TP: expert activations
  int64_t kernels = 0;                         // ops launched per layer
  // The distinct inputs of its GEMMs, per weight class: what an engine that quantizes
  // a GEMM's activations in a kernel of its own quantizes, once per input (GEMMs that
  // read one input, as q / k / v or gate / up do, share it).
  std::array<GemmInputs, kWeightClasses> gemm_inputs{};
};

struct ModelCosts {
  std::vector<LayerClassCosts> classes;
  std::vector<int> class_of_layer;  // decoder layer -> index into classes
  // The first multi-token-prediction layer's class (count 0: no decoder layer is of
  // it), the draft of MTP speculative decoding; -1 when the model has none.
  int mtp_class = -1;
  BytesByPrecision embedding_bytes{};
  BytesByPrecision head_bytes{};  // LM head (embedding table again when tied)
  BytesByPrecision final_norm_bytes{};
  int64_t head_flops_per_token = 0;
  bool tied = false;
  bool mla = false;
  int64_t kv_heads = 0;
  int64_t hidden = 0;
  int64_t vocab = 0;
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t expert_intermediate = 0;
  int64_t max_ffn_width = 0;  // widest FFN activation per token (dense, or k experts)
  // Compute dtype of a part's GEMMs at a precision (simulate::gemm_dtype,
  // precisions.h): fp8, int8 and fp4 for W8A8 FP8, W8A8 INT8 and W4A4 NVFP4, else
  // BF16 (weight-only INT8 / INT4 and MXFP4 weights are dequantized for BF16 math).
  std::array<topology::ComputeDtype, kPrecisions> gemm_dtype{};
  // Whether a GEMM at each precision multiplies FP8 weights with 128 x 128 block scales by
  // activations quantized per token and 128 columns at run time (DeepSeek-V3's format:
  // the `fp8` precision, and `checkpoint` for such a checkpoint).
  std::array<bool, kPrecisions> block_fp8_activations{};
};

ModelCosts model_costs(const model::Model& m);

}  // namespace dayzero::simulate
