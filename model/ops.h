#pragma once
// The operator inventory: for every layer, the ops a forward pass runs, with
// their shapes, the weights each reads (by HF name) and their cost per token.
// The simulator costs these ops and the executor runs them: one list for both.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace dayzero::model {

enum class OpKind {
  embedding,    // row gather from the embedding table
  norm,         // RMSNorm over `n` features (per head when heads > 0)
  gemm,         // dense projection: [tokens, k] x [k, n]
  rope,         // rotary embedding of q and k
  attention,    // softmax(QK^T)V over the context
  activation,   // SwiGLU: silu(gate) * up over `n` features
  router,       // MoE gate logits [tokens, k] x [k, n = experts] and top-k selection
  expert_gemm,  // grouped GEMM over routed experts; each token visits `active_experts`
  moe_combine,  // weighted sum of the selected experts' outputs
  // Gated delta-net over one token: conv, the recurrent state update and read, the
  // gated norm (Qwen3.5's linear attention; `lin` holds its shape).
  linear_attention,
  // DeepSeek sparse attention's indexer: scores every cached token for each query and
  // keeps the top k (`index` holds its shape; cost per context token).
  indexer,
};
std::string_view op_kind_name(OpKind k);

// How tensor parallelism splits an op's weights and work: the one sharding truth.
// The simulator's per-rank bytes and FLOPs and the executor's shards both read it
// (set when the inventory is built, in ops.cpp); nothing else decides it. Under
// attention TP for attention, dense-MLP, shared-expert, embedding and head ops; under
// moe TP (each expert's width split) for expert GEMMs.
enum class TpSplit {
  replicated,  // every rank holds all of it: norms, router, MLA latent projections (q_a, kv_a), MTP eh_proj
  column,    // output features split (q, gate, up; MLA q_b, kv_b; attention's heads and sinks): no communication after
  sections,  // outputs split by head within each section of a fused projection (gated delta-net's [q | k | v])
  kv_heads,  // GQA k / v: output features split by KV head, one (replicated) head per rank once TP > KV heads
  row,       // input features split (o_proj, down_proj): partial sums, all-reduced after
  vocab,     // embedding rows and LM head outputs split by vocabulary
};
std::string_view tp_split_name(TpSplit s);

// Shape of an attention op.
struct AttentionShape {
  AttentionKind kind = AttentionKind::gqa;
  int64_t heads = 0;
  int64_t kv_heads = 0;     // GQA KV heads (MLA: 1 shared latent)
  int64_t qk_head_dim = 0;  // per-head dim of q and k (MLA: nope + rope)
  int64_t v_head_dim = 0;
  int64_t kv_lora_rank = 0;        // MLA latent width
  int64_t rope_dim = 0;            // MLA decoupled rope dim
  int64_t window = 0;              // sliding window in tokens; 0 = full context
  bool sinks = false;              // gpt-oss attention sinks
  int64_t kv_elems_per_token = 0;  // cached elements per token for this layer
  int64_t topk = 0;                // sparse attention: context tokens each query reads (0 = all)

  // FLOPs per query token per attended context token (QK^T and PV, 2 per MAC).
  // MLA `absorbed` is the decode form that attends over the latent directly.
  int64_t flops_per_ctx_token(bool absorbed = false) const;
};

// Shape of a gated delta-net op: the state per sequence does not grow with context.
struct LinearAttentionShape {
  int64_t key_heads = 0, value_heads = 0, key_head_dim = 0, value_head_dim = 0, conv_kernel = 0;
  int64_t state_elem_bytes = 4;  // the recurrent state's dtype (Qwen3.5: float32)
  int64_t state_elems_per_seq() const { return value_heads * key_head_dim * value_head_dim; }
  int64_t conv_dim() const { return 2 * key_heads * key_head_dim + value_heads * value_head_dim; }
  int64_t conv_state_elems_per_seq() const { return (conv_kernel - 1) * conv_dim(); }
  // FLOPs per token of the recurrent form (decode): per value head, decay the state,
  // read it with k, update it with the delta rule and read it with q: 7 dk x dv.
  int64_t recurrent_flops_per_token() const;
  // FLOPs per token of the chunked form (prefill, chunks of `chunk` tokens, as
  // flash-linear-attention's chunk_gated_delta_rule): q, k and the update against the
  // state (6 dk x dv per value head) plus attention inside the chunk (2 chunk (dk + dv)).
  int64_t chunked_flops_per_token(int64_t chunk) const;
};

// Shape of a sparse-attention indexer.
struct IndexerShape {
  int64_t heads = 0, head_dim = 0, topk = 0;
  // Per query token per context token: a dot product per head, ReLU and the weighted sum.
  int64_t flops_per_ctx_token() const { return 2 * heads * head_dim + 2 * heads; }
};

struct Op {
  std::string name;  // e.g. "q_proj", "experts.down_proj", "attention"
  OpKind kind = OpKind::gemm;
  Part part = Part::attention;  // the class of weight it reads (counts, quantization policy)
  TpSplit tp_split = TpSplit::replicated;
  int64_t n = 0;                     // output features per token (per expert for expert_gemm)
  int64_t k = 0;                     // input features per token
  int64_t heads = 0;                 // norm over heads (q_norm / k_norm), rope heads
  int64_t experts = 0;               // expert_gemm / router: routed experts in the layer
  int64_t active_experts = 0;        // expert_gemm: experts each token visits
  AttentionShape attn;               // attention only
  LinearAttentionShape lin;          // linear_attention only
  IndexerShape index;                // indexer only
  std::vector<std::string> weights;  // HF names of the weights it reads ("{e}" per expert)

  // Filled from the weight list when the Model is built:
  int64_t params = 0;         // all weights read (all experts for expert_gemm)
  int64_t active_params = 0;  // weights one token touches
  int64_t weight_bytes = 0;   // as the checkpoint stores them, scales included

  int64_t flops_per_token() const;                                   // context-independent part
  int64_t activation_bytes_per_token(int64_t elem_bytes = 2) const;  // read + written
};

struct Layer {
  int64_t index = 0;
  bool moe = false;
  bool mtp = false;  // a multi-token-prediction module
  LayerAttention attention = LayerAttention::full;
  std::vector<Op> ops;
};

// Ops of decoder layer `layer` (an MTP module for layer >= num_layers).
Layer layer_ops(const ModelConfig& c, int64_t layer);
// Model-level ops: the embedding lookup before layer 0, final norm and LM head after.
std::vector<Op> pre_ops(const ModelConfig& c);
std::vector<Op> post_ops(const ModelConfig& c);

}  // namespace dayzero::model
