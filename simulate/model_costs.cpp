#include "simulate/model_costs.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "simulate/precisions.h"

namespace dayzero::simulate {

namespace {

// The conv window of a linear-attention layer is kept in the activations' dtype
// (vLLM's and SGLang's conv state: BF16 for BF16 models).
constexpr int64_t kStateConvBytes = 2;

using model::Op;
using model::OpKind;
using model::Part;

// Kernels the engines launch for a sparse-attention indexer's scoring beyond its GEMMs
// and key norm (separate ops): the rotary, the two RoPE write-backs, the two Hadamard
// rotations and the two FP8 quantisations of query and key, the key-cache write, the
// head-gate scale, the FP8 MQA logits and the top-k (SGLang's
// python/sglang/srt/layers/attention/nsa/nsa_indexer.py, the decode path).
constexpr int64_t kIndexerLaunches = 11;

// Kernels launched per op: one, or the indexer's.
int64_t launches(const Op& op) { return op.kind == OpKind::indexer ? kIndexerLaunches : 1; }

// An element-wise op's traffic, by what splits it: a rank runs the RoPE, per-head
// norms and activations of its own heads and MLP columns, an expert activation for the
// (token, expert) pairs routed to it, and every hidden-state norm and combine whole.
void add_elementwise(LayerClassCosts& lc, const Op& op) {
  const int64_t elems = op.activation_bytes_per_token(1);
  switch (op.kind) {
    case OpKind::norm:
      (op.heads > 0 ? lc.elementwise_tp_elems_per_token : lc.elementwise_elems_per_token) += elems;
      break;
    case OpKind::rope: lc.elementwise_tp_elems_per_token += elems; break;
    case OpKind::activation:
      if (op.active_experts > 0) lc.elementwise_expert_elems += elems / op.active_experts;
      else lc.elementwise_tp_elems_per_token += elems;
      break;
    case OpKind::moe_combine: lc.elementwise_elems_per_token += elems; break;
    default: break;
  }
}

// The cost class of an op's weights, from its kind, the part it belongs to and
// how TP splits it (model::Op::tp_split, the one sharding truth).
WeightClass class_of(const Op& op) {
  switch (op.kind) {
    case OpKind::router: return WeightClass::router;
    case OpKind::expert_gemm: return WeightClass::expert;
    case OpKind::norm: return WeightClass::norms;
    case OpKind::embedding:
    case OpKind::gemm:
    case OpKind::rope:
    case OpKind::attention:
    case OpKind::activation:
    case OpKind::linear_attention:
    case OpKind::indexer:
    case OpKind::moe_combine: break;
  }
  if (op.part == Part::dense_mlp) return WeightClass::dense_mlp;
  if (op.part == Part::shared_experts) return WeightClass::shared_experts;
  switch (op.tp_split) {
    case model::TpSplit::replicated: return WeightClass::attn_replicated;
    case model::TpSplit::kv_heads: return WeightClass::attn_kv;
    case model::TpSplit::column:
    case model::TpSplit::sections:
    case model::TpSplit::row:
    case model::TpSplit::vocab: break;
  }
  return WeightClass::attn_sharded;
}

BytesByPrecision op_bytes(const model::Model& m, const Op& op, const std::map<std::string, const model::Weight*>& w) {
  BytesByPrecision b{};
  for (const auto& name : op.weights) {
    const model::Weight* weight = w.at(name);
    for (size_t p = 0; p < kPrecisions; ++p) b[p] += m.weight_bytes(*weight, model::kAllPrecisions[p]);
  }
  return b;
}

bool is_gemm(const Op& op) { return op.kind == OpKind::gemm || op.kind == OpKind::expert_gemm; }

// Each GEMM's input, counted once: a GEMM reads the input of the one before it when
// that one is a GEMM of the same part and width with nothing between (q / k / v,
// gate / up, the linear attention's in_proj_*), as the engines fuse them into one GEMM.
// An expert's first GEMM reads the token's hidden state; its later ones read a
// (token, expert) pair's activation.
void add_gemm_inputs(LayerClassCosts& lc, const std::vector<Op>& ops, size_t i) {
  const Op& op = ops[i];
  if (i > 0 && is_gemm(ops[i - 1]) && ops[i - 1].part == op.part && ops[i - 1].k == op.k) return;
  GemmInputs& in = lc.gemm_inputs[static_cast<size_t>(class_of(op))];
  const bool later_expert_gemm = op.kind == OpKind::expert_gemm && in.count > 0;
  ++in.count;
  if (later_expert_gemm) in.expert_elems += op.k;
  else if (op.tp_split == model::TpSplit::row) in.tp_elems_per_token += op.k;
  else in.elems_per_token += op.k;
}

int64_t layer_window(const model::Layer& layer) {
  int64_t window = 0;
  for (const auto& op : layer.ops)
    if (op.kind == OpKind::attention) window = op.attn.window;
  return window;
}

// One layer's costs. An MTP layer's embedding and head are the model's own (the
// engines share them with the draft: SGLang's EAGLE worker, vLLM's MTP proposer), so
// they are left out here and costed with the stage's ends.
LayerClassCosts layer_class(const model::Model& m, const model::Layer& layer,
                            const std::map<std::string, const model::Weight*>& by_name) {
  LayerClassCosts lc;
  lc.moe = layer.moe;
  lc.window = layer_window(layer);
  lc.linear = layer.attention == model::LayerAttention::linear;
  for (size_t i = 0; i < layer.ops.size(); ++i) {
    const Op& op = layer.ops[i];
    if (layer.mtp && (op.part == Part::embedding || op.part == Part::head)) continue;
    lc.kernels += launches(op);
    if (is_gemm(op)) add_gemm_inputs(lc, layer.ops, i);
    if (op.kind == OpKind::attention) {
      lc.attn_ctx_flops = op.attn.flops_per_ctx_token(false);
      lc.attn_ctx_flops_absorbed = op.attn.flops_per_ctx_token(true);
      lc.kv_elems_per_token = op.attn.kv_elems_per_token;
      lc.attn_topk = op.attn.topk;
    }
    if (op.kind == OpKind::indexer) {
      lc.index_ctx_flops = op.index.flops_per_ctx_token();
      lc.index_bytes_per_token = op.index.head_dim + model::kIndexerKeyScaleBytes;
    }
    if (op.kind == OpKind::linear_attention) {
      lc.recurrent_state_bytes = op.lin.state_elems_per_seq() * op.lin.state_elem_bytes;
      lc.state_bytes_per_seq = lc.recurrent_state_bytes + op.lin.conv_state_elems_per_seq() * kStateConvBytes;
    }
    add_elementwise(lc, op);
    if (op.weights.empty() && op.kind != OpKind::attention) continue;
    const auto cls = static_cast<size_t>(class_of(op));
    const auto b = op_bytes(m, op, by_name);
    const int64_t div = op.kind == OpKind::expert_gemm ? op.experts : 1;
    for (size_t p = 0; p < kPrecisions; ++p) lc.bytes[cls][p] += b[p] / div;
    if (op.kind == OpKind::gemm || op.kind == OpKind::expert_gemm)
      lc.largest_matrix_elems[cls] = std::max(lc.largest_matrix_elems[cls], op.n * op.k);
    // MLA's absorbed decode multiplies by kv_b's halves W_UK and W_UV in 16 bits: the
    // engines keep them as BF16 copies beside a quantized kv_b (vLLM's MLA
    // process_weights_after_loading: "we just store fp16/bf16 copies"; SGLang's w_kc /
    // w_vc after block_quant_dequant) and as views of a 16-bit one (no copy).
    // Memory only: a decode step reads the copies in place of kv_b.
    if (op.name == "kv_b_proj") {
      const int64_t bf16 = b[static_cast<size_t>(model::WeightPrecision::bf16)];
      for (size_t p = 0; p < kPrecisions; ++p)
        if (b[p] < bf16) lc.mla_absorbed_copy_bytes[p] += bf16;
    }
    if (op.kind != OpKind::norm)  // norms are costed with the element-wise ops
      lc.flops_per_token[cls] += op.kind == OpKind::expert_gemm ? 2 * op.n * op.k : op.flops_per_token();
  }
  return lc;
}

}  // namespace

ModelCosts model_costs(const model::Model& m) {
  const auto& c = m.config;
  ModelCosts mc;
  mc.mla = c.attention == model::AttentionKind::mla;
  mc.kv_heads = c.num_kv_heads;
  mc.hidden = c.hidden_size;
  mc.vocab = c.vocab_size;
  mc.tied = c.tie_word_embeddings;
  mc.experts = c.moe.num_experts;
  mc.top_k = c.moe.experts_per_token;
  mc.expert_intermediate = c.moe.expert_intermediate;
  mc.max_ffn_width = std::max(c.intermediate_size, c.moe.experts_per_token * c.moe.expert_intermediate +
                                                       c.moe.num_shared_experts * c.moe.expert_intermediate);
  std::map<std::string, const model::Weight*> by_name;
  for (const auto& w : m.weights) by_name[w.name] = &w;

  std::map<std::tuple<bool, int64_t, bool>, int> index;  // (moe, window, linear) -> class
  for (const auto& layer : m.layers) {
    if (layer.mtp) {  // not loaded for plain decoding: the first is the draft of speculative decoding
      if (mc.mtp_class < 0) {
        mc.mtp_class = static_cast<int>(mc.classes.size());
        mc.classes.push_back(layer_class(m, layer, by_name));
      }
      continue;
    }
    const auto key = std::make_tuple(layer.moe, layer_window(layer), layer.attention == model::LayerAttention::linear);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, static_cast<int>(mc.classes.size())).first;
      mc.classes.push_back(layer_class(m, layer, by_name));
    }
    ++mc.classes[static_cast<size_t>(it->second)].count;
    mc.class_of_layer.push_back(it->second);
  }
  for (const auto& op : m.pre_ops) mc.embedding_bytes = op_bytes(m, op, by_name);
  for (const auto& op : m.post_ops) {
    if (op.kind == OpKind::norm) mc.final_norm_bytes = op_bytes(m, op, by_name);
    if (op.part == Part::head) {
      mc.head_bytes = op_bytes(m, op, by_name);
      mc.head_flops_per_token = op.flops_per_token();
    }
  }
  for (size_t p = 0; p < kPrecisions; ++p) mc.gemm_dtype[p] = gemm_dtype(model::kAllPrecisions[p], c);
  mc.block_fp8_activations[static_cast<size_t>(model::WeightPrecision::fp8)] = true;
  mc.block_fp8_activations[static_cast<size_t>(model::WeightPrecision::checkpoint)] =
      c.quant.method == model::QuantMethod::fp8 && c.quant.format.kind == model::StorageKind::fp8_block;
  return mc;
}

}  // namespace dayzero::simulate
