#pragma once
// The CUDA backend's kernels, on buffers of a DevicePool (cuda/device.h). Each
// follows the CPU kernel of the same op (executor/kernels.h) in what it computes;
// results agree within the summation order's rounding (tests/cuda).

#include <cstdint>

#include "cuda/device.h"

namespace dayzero::cuda {

// RMSNorm of `groups` groups of `n` floats each (one per row, or per head):
// x * rsqrt(mean(x^2) + eps) * w, in place. The sum of squares is taken in double
// in a fixed tree order per group (one block per group), so the result is the same
// run to run. Throws CudaError when the launch fails.
void rms_norm_f32(DeviceBuffer& x, const DeviceBuffer& w, int64_t groups, int64_t n, double eps);

// Gated activations over `n` floats (executor/kernels.h swiglu, swiglu_clamped):
// out = silu(gate) * up; gpt-oss's clamped form: gate <= limit, up in [-limit, limit],
// (up + 1) * gate * sigmoid(alpha * gate).
void swiglu_f32(const DeviceBuffer& gate, const DeviceBuffer& up, DeviceBuffer& out, int64_t n);
void swiglu_clamped_f32(const DeviceBuffer& gate, const DeviceBuffer& up, DeviceBuffer& out, int64_t n, double alpha,
                        double limit);
// x += y over `n` floats (the residual adds).
void add_f32(DeviceBuffer& x, const DeviceBuffer& y, int64_t n);
// out[i] = the sum over `count` consecutive blocks of `n` floats of their element i,
// added in block order, each add rounded alone: the communicators' sum over ranks in
// rank order (executor/communicator.h), bit for bit the host's.
void sum_blocks_f32(const DeviceBuffer& blocks, int64_t n, int64_t count, DeviceBuffer& out);
// out [rows, count] = columns [first, first + count) of x [rows, cols] (a strided copy).
void columns_f32(const DeviceBuffer& x, int64_t rows, int64_t cols, int64_t first, int64_t count, DeviceBuffer& out);
// Rows `tokens[t]` of a float32 [vocab, hidden] table into out [tokens, hidden]; the
// token ids live on the device (int64). A token outside [0, vocab) gives a zero row
// (-1: another TP rank's token; the host checks ids before the launch, as the CPU
// kernel throws on the others).
void embedding_f32(const DeviceBuffer& table, int64_t vocab, int64_t hidden, const DeviceBuffer& tokens,
                   int64_t n_tokens, DeviceBuffer& out);
// The same from a BF16 table (2 bytes a value, as checkpoints store it), each value
// made float32 exactly.
void embedding_bf16(const DeviceBuffer& table, int64_t vocab, int64_t hidden, const DeviceBuffer& tokens,
                    int64_t n_tokens, DeviceBuffer& out);
// Rotary embedding in place (executor/rope.h apply_rope): features [offset, offset +
// 2 x half) of each of `heads` heads of `stride` floats in every row of x [rows, heads x
// stride]; row t at position positions[t] (int64 on the device). The angle is taken in
// double from the table's frequencies (rope_table_on_device, once per model), the
// rotation in float without fused multiply-adds, as the CPU kernel computes it.
struct DeviceRopeTable {
  DeviceBuffer inv_freq;  // doubles
  int64_t half = 0;       // rotated pairs per head
  double attention_factor = 1.0;
};
// The table's `half` frequencies (radians per position; executor/rope.h RopeTable:
// the backend glue passes its inv_freq and attention_factor). `interleaved`: pairs
// (2i, 2i + 1) (RopeLayout::interleaved), else (i, i + half).
DeviceRopeTable rope_table_on_device(DevicePool& pool, const double* inv_freq, int64_t half, double attention_factor);
void rope_f32(DeviceBuffer& x, int64_t rows, int64_t heads, int64_t stride, int64_t offset,
              const DeviceBuffer& positions, const DeviceRopeTable& table, bool interleaved);

// y [m, n] = x [m, k] W^T with W [n, k] (row-major, executor/kernels.h linear_f32's
// layout), float32 with float32 accumulation in a fixed order (k ascending): the
// backend's own reference GEMM, the one cuBLAS is measured against.
void gemm_f32_reference(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& y, int64_t m, int64_t n, int64_t k);

// LayerNorm of `rows` rows of n (executor/kernels.h layer_norm: biased variance):
// (x - mean) / sqrt(var + eps) * w + b in place, sums in double in a fixed order.
void layer_norm_f32(DeviceBuffer& x, const DeviceBuffer& w, const DeviceBuffer& b, int64_t rows, int64_t n, double eps);
// x [rows, cols] row t scaled by rsqrt(mean_sq[t] + eps) * w (executor/kernels.h
// rms_norm_given_mean: the mean square over all TP ranks' heads, summed by the caller).
void rms_norm_given_mean_f32(DeviceBuffer& x, const DeviceBuffer& w, const DeviceBuffer& mean_sq, int64_t rows,
                             int64_t cols, double eps);
// out[t] = float(sum over row t of x[t, i]^2, in double, a fixed tree order) for x [rows, cols].
void row_sum_squares_f32(const DeviceBuffer& x, int64_t rows, int64_t cols, DeviceBuffer& out);
// y[i] = x[i] / (1 + exp(-gate[i / gate_every])) over n floats: Qwen3.5's attention
// output gate (gate_every 1) and its shared expert's gate (one per row of gate_every).
void sigmoid_gate_f32(const DeviceBuffer& gate, const DeviceBuffer& x, DeviceBuffer& y, int64_t n,
                      int64_t gate_every = 1);

// Causal attention of one sequence (executor/kernels.h attention), its keys and
// values contiguous on the device: q [queries, heads x qk_dim], k [context, kv_heads x
// qk_dim], v [context, kv_heads x v_dim], out [queries, heads x v_dim]; query t at
// positions[t] (int64, < context: the caller checks) sees keys j <= positions[t], and
// positions[t] - j < window when window > 0; query head h reads KV head h / (heads /
// kv_heads). `sinks` (heads floats, gpt-oss) join the softmax's denominator; null for
// none. `keep` ([queries, context] floats, sparse attention's top-k): a query reads only
// the keys whose entry is nonzero; null for all. Tiled with an online softmax in float32
// (attention.cu: 64 (query, head) rows against 64 keys a tile, a long context split across
// blocks when the rows are few, the splits combined in a fixed order: the same result run
// to run on one GPU). No bound on the context but the device's memory.
struct DeviceAttention {
  int64_t heads = 0, kv_heads = 0, qk_dim = 0, v_dim = 0;
  double scale = 0.0;
  int64_t window = 0;
};
void attention_f32(const DeviceBuffer& q, const DeviceBuffer& positions, int64_t queries, const DeviceBuffer& k,
                   const DeviceBuffer& v, int64_t context, const DeviceBuffer* sinks, const DeviceBuffer* keep,
                   const DeviceAttention& p, DeviceBuffer& out);

// MLA's absorbed form (executor/kernels.h mla_absorbed_attention, mla.cu), kv_b float32
// [heads * (nope + v), rank] on the device. mla_absorb_q_f32: q [queries, heads x (nope
// + rope)] into q_abs [queries, heads x (rank + rope)] = [q_nope W_uk_h | q_rope], for
// attention_f32 with one KV head of keys [latent | rope key] and values the latent;
// mla_unabsorb_f32: that attention's [queries, heads x rank] into out [queries, heads x
// v] through W_uv_h. Float32 sums in a fixed order. Throw CudaError on a bad shape or
// a buffer too small.
struct DeviceMla {
  int64_t heads = 0, nope_dim = 0, rope_dim = 0, v_dim = 0, kv_lora_rank = 0;
};
void mla_absorb_q_f32(const DeviceBuffer& q, int64_t queries, const DeviceMla& p, const DeviceBuffer& kv_b,
                      DeviceBuffer& q_abs);
void mla_unabsorb_f32(const DeviceBuffer& lat, int64_t queries, const DeviceMla& p, const DeviceBuffer& kv_b,
                      DeviceBuffer& out);
// MLA's expanded form: the context's latents through kv_b (kv [context, heads x (nope
// + v)]) and its rope keys ([context, rope], shared by every head) into per-head keys
// [context, heads x (nope + rope)] = [k_nope | k_rope] and values [context, heads x v],
// for attention_f32 with as many KV heads as heads. Copies only.
void mla_expand_kv_f32(const DeviceBuffer& kv, const DeviceBuffer& rope_keys, int64_t context, const DeviceMla& p,
                       DeviceBuffer& keys, DeviceBuffer& values);

// DeepSeek sparse attention's indexer (executor/kernels.h dsa_topk): q [queries, heads x
// head_dim], w [queries, heads], one sequence's indexer keys contiguous [context,
// head_dim]; query t at positions[t] keeps its top-k tokens j <= positions[t] (all of
// them when fewer; ties to the lower index): keep [queries, context], 1 kept, 0 not.
// Scores in double, rounded as the CPU rounds them, so the same tokens are kept.
struct DeviceIndexer {
  int64_t heads = 0, head_dim = 0, topk = 0;
};
void dsa_topk_f32(const DeviceBuffer& q, const DeviceBuffer& w, const DeviceBuffer& positions, int64_t queries,
                  const DeviceBuffer& keys, int64_t context, const DeviceIndexer& p, DeviceBuffer& keep);

// Gated delta-net (executor/kernels.h gated_delta_net) over T tokens of one sequence,
// in its recurrent form at every T (the CPU's chunked prefill is the same rule in exact
// arithmetic): qkv [T, 2 Hk dk + Hv dv], z [T, Hv dv], b and a [T, Hv]; the conv
// weight [conv_dim, K], dt_bias and A_log [Hv], norm [dv]. The state (conv: the last
// K - 1 inputs [K - 1, conv_dim]; recurrent [Hv, dk, dv]) is read and updated; out
// [T, Hv dv].
struct DeviceDeltaNet {
  int key_heads = 0, value_heads = 0, key_head_dim = 0, value_head_dim = 0, conv_kernel = 0;
  double l2_eps = 1e-6, norm_eps = 1e-6;
};
struct DeltaNetInputs {
  const DeviceBuffer &qkv, &z, &b, &a, &conv, &dt_bias, &a_log, &norm;
};
struct DeltaNetState {
  DeviceBuffer &conv, &recurrent;
};
void gated_delta_net_f32(const DeltaNetInputs& in, DeltaNetState& state, const DeviceDeltaNet& p, int64_t T,
                         DeviceBuffer& out);

// The KV cache's rows (cuda/kv_store.h), `dtype` 0 float32, 1 BF16, 2 FP8 E4M3 (rounded
// as executor/quantize.cpp rounds): rows [first, first + n) of `src` ([.., width] floats)
// into `pool`'s rows `slots` (n int64), and `pool`'s rows `slots` back as floats into
// `out` at out[i * stride + offset + e] (a row's place in a wider row).
void kv_scatter(const DeviceBuffer& src, int64_t first, int64_t width, const DeviceBuffer& slots, int64_t n, int dtype,
                DeviceBuffer& pool, int64_t pool_rows);
void kv_gather(const DeviceBuffer& pool, int64_t pool_rows, int64_t width, int dtype, const DeviceBuffer& slots,
               int64_t n, DeviceBuffer& out, int64_t stride, int64_t offset);

// MoE routing of `tokens` rows of router logits [tokens, experts] (executor/kernels.h
// route_softmax_topk, route_topk_softmax, route_sigmoid_group_topk; ties to the lower
// index): out_experts (int64) and out_weights (float) [tokens, top_k], best first.
enum class RouteRule { softmax_topk, topk_softmax, sigmoid_group_topk };
struct DeviceRouter {
  RouteRule rule = RouteRule::softmax_topk;
  int top_k = 0;
  bool normalize = false;
  int n_group = 1, topk_group = 1;  // sigmoid_group_topk
  double routed_scaling_factor = 1.0;
};
// `bias`: sigmoid_group_topk's e_score_correction_bias (experts floats), or null.
void route_f32(const DeviceBuffer& logits, int64_t tokens, int64_t experts, const DeviceRouter& p,
               const DeviceBuffer* bias, DeviceBuffer& out_experts, DeviceBuffer& out_weights);
// out [.., cols] rows[i] += weights[i] * y[i] for pairs i in order (executor/kernels.h
// moe_combine; rows int64, checked by the caller).
void moe_combine_f32(DeviceBuffer& out, const DeviceBuffer& y, const DeviceBuffer& rows, const DeviceBuffer& weights,
                     int64_t pairs, int64_t cols);
// y [rows, cols] += bias (cols floats) on every row: a GEMM's bias.
void add_bias_f32(DeviceBuffer& y, const DeviceBuffer& bias, int64_t rows, int64_t cols);

}  // namespace dayzero::cuda
