#pragma once
// The CPU backend's kernels: float32 compute, deterministic (fixed loop and
// reduction order, single-threaded Eigen per piece). Shapes are [tokens, features]
// unless said otherwise. Threads (executor/threads.h, kernel_threads()): linear
// splits its output features in fixed blocks of 64 (each block dequantized by the
// thread that multiplies it), attention and MLA the (query row, head) pairs; each
// output element is computed by one thread, in the same order whatever the split,
// so results are bit-identical for any thread count and run to run. Each op kind
// has one function signature shared by its variants; the registry
// (executor/registry.h) tables them by (op kind, variant).

#include <cstdint>
#include <span>
#include <vector>

#include "executor/kv_cache.h"
#include "executor/rope.h"
#include "executor/tensor.h"
#include "executor/weights.h"

namespace dayzero::executor {

// ---- embedding: rows of `table` ([vocab, hidden]) for each token; a token of -1 (not
// in this rank's slice of a vocabulary split over TP ranks) gives a row of zeros.
Tensor embedding(const StoredWeight& table, std::span<const int64_t> tokens);

// ---- norm: RMSNorm over groups of weight.size() features (one group per row, or
// per head for q_norm / k_norm): x * rsqrt(mean(x^2) + eps) * weight.
void rms_norm(Tensor& x, std::span<const float> weight, double eps);
// One norm over a whole layer's heads (MiniMax-M2's q_norm / k_norm), of which x holds
// this rank's: row t scaled by rsqrt(mean_sq[t] + eps) * weight (x's columns), mean_sq
// being the mean square over all heads (summed over the TP ranks by the caller).
void rms_norm_given_mean(Tensor& x, std::span<const float> weight, double eps, std::span<const float> mean_sq);
// Each row's sum of squares of a matrix x, summed in double and rounded to float32 (the
// first half of MiniMax-M2's RMSNorm across heads, all-reduced over TP before the second).
std::vector<float> row_sum_squares(const Tensor& x);
// Zero-centred weights (Qwen3.5's Qwen3_5MoeRMSNorm): x * rsqrt(mean(x^2) + eps) * (1 + weight).
void rms_norm_zero_centered(Tensor& x, std::span<const float> weight, double eps);

// ---- gemm / expert_gemm: y = x W^T (+ bias) with W = matrix `index` of `w`
// ([out, in]; [in, out] when w.input_major). `bias` has `out` values or is empty.
Tensor linear_f32(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias);
// Any other storage: dequantized to float32 first, then the same product.
Tensor linear_dequant(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias);

// ---- activation: gated MLP on separate gate and up ([tokens, n] each).
struct ActivationParams {
  // gpt-oss GptOssExperts constants: alpha 1.702, limit = config swiglu_limit (7.0).
  double alpha = 1.702;
  double limit = 7.0;
};
Tensor swiglu(const Tensor& gate, const Tensor& up, const ActivationParams& p);  // silu(gate) * up
// gpt-oss: gate clamped to <= limit, up to [-limit, limit]; (up + 1) * gate * sigmoid(alpha * gate).
Tensor swiglu_clamped(const Tensor& gate, const Tensor& up, const ActivationParams& p);
// gpt-oss's fused gate_up ([tokens, 2n]) is interleaved: gate = [..., 0::2], up = [..., 1::2].
// Qwen3.5's attention output gate: x / (1 + exp(-gate)), element by element; a gate of
// one column scales each row of x (its shared expert's gate, sigmoid(h w) [tokens, 1]).
Tensor sigmoid_gate(const Tensor& gate, const Tensor& x, const ActivationParams& p);
// x += y, element by element (the residual adds between a layer's blocks; the same
// shape, else std::invalid_argument).
void add_in_place(Tensor& x, const Tensor& y);
// Columns [first, first + count) of every row of x, as a tensor of their own (MLA's
// latent and rope key out of kv_a's output, a fused [gate | up] split); a range past
// x's columns is std::invalid_argument.
Tensor columns(const Tensor& x, int64_t first, int64_t count);
// Rows [first, first + count) of a matrix x, as a tensor of their own; and matrices of
// one width stacked row after row, in order: a batch's sequences taken apart for the
// per-sequence kernels (attention, the indexer, the gated delta-net) and put back
// together. Ranges outside x, and parts of other widths, are std::invalid_argument.
Tensor rows(const Tensor& x, int64_t first, int64_t count);
Tensor stack_rows(std::span<const Tensor> parts);
// Rows indices[i] of a matrix x, in that order, as [indices, cols] (a MoE layer's
// tokens sorted by expert, and the experts' outputs back); an index outside x is
// std::invalid_argument.
Tensor gather_rows(const Tensor& x, std::span<const int64_t> indices);
// A tensor of zeros (an accumulator a kernel adds into, as the MoE combine does).
Tensor zeros(std::vector<int64_t> shape);
// gpt-oss's fused gate_up interleaves its features (gate 2j, up 2j + 1): viewed as
// [rows x features / 2, 2] they are that view's two columns, taken by `columns_of` (a
// backend's Backend::columns: where gate_up lies).
void deinterleave_gate_up(const Tensor& gate_up, Tensor& gate, Tensor& up,
                          Tensor (*columns_of)(const Tensor&, int64_t, int64_t) = &columns);

// ---- attention: causal softmax(q k^T * scale) v over one sequence's paged KV
// cache holding positions 0..C-1 (rows: keys kv_heads * qk_dim, values
// kv_heads * v_dim floats).
// Query row t sits at q_positions[t] and sees cache entries j <= q_positions[t]
// (and q_positions[t] - j < window when window > 0). Prefill passes many
// queries, decode one. Query head h reads KV head h / (heads / kv_heads).
struct AttentionParams {
  int64_t heads = 0, kv_heads = 0, qk_dim = 0, v_dim = 0;
  double scale = 0.0;
  int64_t window = 0;            // sliding window in tokens; 0 = full
  std::span<const float> sinks;  // gpt-oss: one logit per head joining the softmax denominator; empty = none
  // Sparse attention (DeepSeek sparse attention's top-k): [queries, cache tokens], nonzero
  // where query t may read token j (besides the causal rule), a tensor where the indexer
  // left it (a device backend's reads it there); null = every token.
  const Tensor* keep = nullptr;
};
Tensor attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& kv, const AttentionParams& p);

// MLA (DeepSeek-V2/V3): q [T, heads * (nope + rope)] with its rope part rotated;
// the paged cache holds the normalized latent (keys, kv_lora_rank wide) and the
// rotated shared rope key (values, rope wide); kv_b ([heads * (nope + v), kv_lora_rank]) expands the latent
// into per-head k_nope and v. Keys are [k_nope_h, k_rope].
struct MlaParams {
  int64_t heads = 0, nope_dim = 0, rope_dim = 0, kv_lora_rank = 0, v_dim = 0;
  double scale = 0.0;            // see mla_softmax_scale
  const Tensor* keep = nullptr;  // as AttentionParams::keep
};
Tensor mla_attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& cache,
                     const StoredWeight& kv_b, const MlaParams& p);
// mla_attention picks between two exact forms by cost: expanding the context's
// latents into per-head keys and values (cheaper for prefill, many queries), or the
// absorbed form that attends over the latent itself (cheaper for decode).
bool mla_absorbed(int64_t queries, int64_t context, int64_t nope, int64_t rope, int64_t rank, int64_t v);
Tensor mla_absorbed_attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& cache,
                              const StoredWeight& kv_b, const MlaParams& p);
// (nope + rope)^-0.5, times yarn_mscale(factor, mscale_all_dim)^2 under rope
// scaling with mscale_all_dim set (DeepSeek-V3 reference attention).
double mla_softmax_scale(const model::ModelConfig& c);

// ---- linear_attention: gated delta-net (Qwen3.5; transformers' Qwen3Next /
// Qwen3.5 GatedDeltaNet) over one sequence's rows, carrying its state. Inputs are
// the projections: qkv [T, conv_dim] = [q (key_heads x dk), k (key_heads x dk),
// v (value_heads x dv)], z [T, value_heads x dv], b and a [T, value_heads].
// 1. qkv through a causal depthwise conv of conv_kernel taps, then SiLU; the state
//    keeps the last conv_kernel - 1 inputs.
// 2. Per value head h (key head h / (value_heads / key_heads)): q and k L2-normalized
//    (eps l2_eps), q times dk^-1/2; g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b).
// 3. The gated delta rule on the state S_h [dk, dv]: S = e^g S; S += k (beta (v - S^T k))^T;
//    o = S^T q; token by token (chunk 0: decode) or in chunks of `chunk` tokens (prefill).
// 4. Per value head: rms_norm(o, norm_eps) * norm * silu(z). Output [T, value_heads x dv].
struct LinearAttentionParams {
  int64_t key_heads = 0, value_heads = 0, key_head_dim = 0, value_head_dim = 0, conv_kernel = 0;
  int64_t chunk = 0;     // 0: recurrent, token by token; else chunked (the reference's prefill: 64)
  double l2_eps = 1e-6;  // flash-linear-attention's l2norm
  double norm_eps = 1e-6;
  int64_t conv_dim() const { return 2 * key_heads * key_head_dim + value_heads * value_head_dim; }
};
struct LinearAttentionWeights {
  std::span<const float> conv;            // [conv_dim, conv_kernel]
  std::span<const float> dt_bias, a_log;  // [value_heads]
  std::span<const float> norm;            // [dv]
};
// One sequence's state, as tensors so that a device backend keeps it where its kernel
// runs between steps (the forward makes it with Backend::cache_zeros); updated in place.
struct LinearState {
  Tensor conv;       // [(conv_kernel - 1), conv_dim], oldest input first
  Tensor recurrent;  // [value_heads, dk x dv]
};
// A fresh state of p's shape, made by `zeros` (the host's; a backend's cache_zeros).
LinearState zero_linear_state(const LinearAttentionParams& p, Tensor (*zeros)(std::vector<int64_t>) = &executor::zeros);
Tensor gated_delta_net(const Tensor& qkv, const Tensor& z, const Tensor& b, const Tensor& a,
                       const LinearAttentionWeights& w, LinearState& state, const LinearAttentionParams& p);

// ---- norm "layer_norm": (x - mean) / sqrt(var + eps) * weight + bias over each row
// (the indexer's k_norm, torch.nn.LayerNorm: biased variance).
void layer_norm(Tensor& x, std::span<const float> weight, std::span<const float> bias, double eps);

// ---- indexer: DeepSeek sparse attention's top-k (DeepSeek-V3.2, GLM-5; transformers'
// GlmMoeDsaIndexer). q [T, heads x head_dim] (rope applied), w [T, heads] (weights_proj),
// one sequence's cached indexer keys (the pages' keys, head_dim wide). Query t at
// position p scores each token j <= p: I = sum_h w_h heads^-1/2 relu(q_h . k_j head_dim^-1/2),
// and keeps its `topk` best (all of them when p + 1 <= topk; ties to the lower index).
// Returns the keep mask [T, C] (1 kept, 0 not) for the attention.
struct IndexerParams {
  int64_t heads = 0, head_dim = 0, topk = 0;
};
Tensor dsa_topk(const Tensor& q, const Tensor& w, std::span<const int64_t> q_positions, const KvPages& keys,
                const IndexerParams& p);

// ---- router: top-k experts per token from router logits [tokens, experts].
struct RouterParams {
  int64_t top_k = 0;
  bool normalize = false;               // renormalize the selected weights to sum 1
  int64_t n_group = 1, topk_group = 1;  // DeepSeek group-limited selection
  double routed_scaling_factor = 1.0;
  std::span<const float> correction_bias;  // DeepSeek e_score_correction_bias (selection only)
};
struct Routing {
  int64_t tokens = 0, top_k = 0;
  std::vector<int64_t> experts;  // [tokens * top_k], best first
  std::vector<float> weights;    // [tokens * top_k]
};
// Softmax over all experts, top-k, optional renormalization (Mixtral, Qwen3-MoE).
Routing route_softmax_topk(const Tensor& logits, const RouterParams& p);
// gpt-oss: top-k of the logits, softmax over the selected k.
Routing route_topk_softmax(const Tensor& logits, const RouterParams& p);
// DeepSeek-V3 noaux_tc: sigmoid scores; selection on scores + bias, limited to the
// topk_group groups with the largest sum of their top-2; weights from the
// unbiased scores, normalized if asked, times routed_scaling_factor.
Routing route_sigmoid_group_topk(const Tensor& logits, const RouterParams& p);
// Ties everywhere go to the lower index.

// ---- moe_combine: out[rows[i]] += weights[i] * expert_out[i].
void moe_combine(Tensor& out, const Tensor& expert_out, std::span<const int64_t> rows, std::span<const float> weights);

}  // namespace dayzero::executor
