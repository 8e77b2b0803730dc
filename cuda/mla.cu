// MLA's absorbed form on the device (executor/kernels.h mla_absorbed_attention): each
// query taken into the latent space through kv_b's key half, attention over the
// cached latents (one KV head every head shares: attention.cu), and the result taken
// out through kv_b's value half. kv_b is float32 [heads * (nope + v), rank].
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 128;

// Block (t, h): q_abs[t, h] = [q_nope W_uk_h (rank values) | q_rope], W_uk_h = rows
// h (nope + v) .. + nope of kv_b; each thread one latent feature r, summing over the
// nope inputs in order (consecutive threads read consecutive r: coalesced).
__global__ void absorb_kernel(const float* q, int heads, int nope, int rope, const float* kv_b, int v, int rank,
                              float* q_abs) {
  const int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y);
  const float* qh = q + (t * heads + h) * (nope + rope);
  float* out = q_abs + (t * heads + h) * (rank + rope);
  const float* w = kv_b + static_cast<int64_t>(h) * (nope + v) * rank;
  for (int r = threadIdx.x; r < rank + rope; r += kThreads) {
    if (r >= rank) {
      out[r] = qh[nope + r - rank];
      continue;
    }
    // Unrolled: eight loads of W in flight a thread, the sum still in order of i (the
    // H200 run's decode spent ~420 us an MLA call, this loop's one load at a time
    // across 16K threads being ~130 GB/s of kv_b's 33 MB key half).
    float acc = 0.0f;
#pragma unroll 8
    for (int i = 0; i < nope; ++i) acc = fmaf(qh[i], w[static_cast<int64_t>(i) * rank + r], acc);
    out[r] = acc;
  }
}

// Block (t, h): o[t, h, j] = lat[t, h] . W_uv_h[j], W_uv_h = rows h (nope + v) + nope
// .. + v of kv_b; a warp per output j, its lanes over the rank (coalesced), summed in
// a fixed butterfly order.
__global__ void unabsorb_kernel(const float* lat, int heads, int rank, const float* kv_b, int nope, int v, float* o) {
  const int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y), lane = static_cast<int>(threadIdx.x) & 31;
  const float* lh = lat + (t * heads + h) * rank;
  for (int j = static_cast<int>(threadIdx.x) / 32; j < v; j += kThreads / 32) {
    const float* w = kv_b + (static_cast<int64_t>(h) * (nope + v) + nope + j) * rank;
    float acc = 0.0f;
#pragma unroll 8
    for (int r = lane; r < rank; r += 32) acc = fmaf(lh[r], w[r], acc);
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xFFFFFFFFu, acc, offset);
    if (lane == 0) o[(t * heads + h) * v + j] = acc;
  }
}

// Block (j, h): context row j's head h, [k_nope | v] of kv, into keys [k_nope |
// k_rope (row j's, every head's)] and values [v].
__global__ void expand_kv_kernel(const float* kv, const float* rope_keys, int heads, int nope, int rope, int v,
                                 float* keys, float* values) {
  const int64_t j = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y);
  const float* src = kv + (j * heads + h) * (nope + v);
  float* k = keys + (j * heads + h) * (nope + rope);
  float* o = values + (j * heads + h) * v;
  for (int i = threadIdx.x; i < nope; i += kThreads) k[i] = src[i];
  for (int i = threadIdx.x; i < rope; i += kThreads) k[nope + i] = rope_keys[j * rope + i];
  for (int i = threadIdx.x; i < v; i += kThreads) o[i] = src[nope + i];
}

void need(const DeviceBuffer& b, int64_t floats, const char* fn, const char* which) {
  if (floats < 0 || b.bytes() < static_cast<size_t>(floats) * sizeof(float))
    throw CudaError(std::string(fn) + ": " + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                    std::to_string(floats) + " floats");
}
void check_shape(const char* fn, int64_t heads, int64_t nope, int64_t rope, int64_t v, int64_t rank) {
  if (heads <= 0 || nope <= 0 || rope < 0 || v <= 0 || rank <= 0 || heads > 65535)
    throw CudaError(std::string(fn) + ": " + std::to_string(heads) + " heads, nope " + std::to_string(nope) +
                    ", rope " + std::to_string(rope) + ", v " + std::to_string(v) + ", rank " + std::to_string(rank));
}
}  // namespace

void mla_absorb_q_f32(const DeviceBuffer& q, int64_t queries, const DeviceMla& p, const DeviceBuffer& kv_b,
                      DeviceBuffer& q_abs) {
  check_shape("mla_absorb_q_f32", p.heads, p.nope_dim, p.rope_dim, p.v_dim, p.kv_lora_rank);
  need(q, queries * p.heads * (p.nope_dim + p.rope_dim), "mla_absorb_q_f32", "q");
  need(kv_b, p.heads * (p.nope_dim + p.v_dim) * p.kv_lora_rank, "mla_absorb_q_f32", "kv_b");
  need(q_abs, queries * p.heads * (p.kv_lora_rank + p.rope_dim), "mla_absorb_q_f32", "q_abs");
  if (queries == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  absorb_kernel<<<dim3(static_cast<unsigned>(queries), static_cast<unsigned>(p.heads)), kThreads>>>(
      static_cast<const float*>(q.data()), static_cast<int>(p.heads), static_cast<int>(p.nope_dim),
      static_cast<int>(p.rope_dim), static_cast<const float*>(kv_b.data()), static_cast<int>(p.v_dim),
      static_cast<int>(p.kv_lora_rank), static_cast<float*>(q_abs.data()));
  detail::check_launch("mla_absorb_q_f32");
}

void mla_unabsorb_f32(const DeviceBuffer& lat, int64_t queries, const DeviceMla& p, const DeviceBuffer& kv_b,
                      DeviceBuffer& out) {
  check_shape("mla_unabsorb_f32", p.heads, p.nope_dim, p.rope_dim, p.v_dim, p.kv_lora_rank);
  need(lat, queries * p.heads * p.kv_lora_rank, "mla_unabsorb_f32", "lat");
  need(kv_b, p.heads * (p.nope_dim + p.v_dim) * p.kv_lora_rank, "mla_unabsorb_f32", "kv_b");
  need(out, queries * p.heads * p.v_dim, "mla_unabsorb_f32", "out");
  if (queries == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  unabsorb_kernel<<<dim3(static_cast<unsigned>(queries), static_cast<unsigned>(p.heads)), kThreads>>>(
      static_cast<const float*>(lat.data()), static_cast<int>(p.heads), static_cast<int>(p.kv_lora_rank),
      static_cast<const float*>(kv_b.data()), static_cast<int>(p.nope_dim), static_cast<int>(p.v_dim),
      static_cast<float*>(out.data()));
  detail::check_launch("mla_unabsorb_f32");
}

void mla_expand_kv_f32(const DeviceBuffer& kv, const DeviceBuffer& rope_keys, int64_t context, const DeviceMla& p,
                       DeviceBuffer& keys, DeviceBuffer& values) {
  check_shape("mla_expand_kv_f32", p.heads, p.nope_dim, p.rope_dim, p.v_dim, p.kv_lora_rank);
  need(kv, context * p.heads * (p.nope_dim + p.v_dim), "mla_expand_kv_f32", "kv");
  need(rope_keys, context * p.rope_dim, "mla_expand_kv_f32", "rope_keys");
  need(keys, context * p.heads * (p.nope_dim + p.rope_dim), "mla_expand_kv_f32", "keys");
  need(values, context * p.heads * p.v_dim, "mla_expand_kv_f32", "values");
  if (context == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  expand_kv_kernel<<<dim3(static_cast<unsigned>(context), static_cast<unsigned>(p.heads)), kThreads>>>(
      static_cast<const float*>(kv.data()), static_cast<const float*>(rope_keys.data()), static_cast<int>(p.heads),
      static_cast<int>(p.nope_dim), static_cast<int>(p.rope_dim), static_cast<int>(p.v_dim),
      static_cast<float*>(keys.data()), static_cast<float*>(values.data()));
  detail::check_launch("mla_expand_kv_f32");
}

}  // namespace dayzero::cuda
