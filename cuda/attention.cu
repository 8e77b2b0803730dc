// The CUDA backend's attention: causal GQA over one sequence's keys and values
// (sliding window, sinks), as executor/kernels.h attention computes it.
#include <cuda_runtime.h>

#include <limits>
#include <string>

#include "cuda/check.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 128;      // one block per (query, head); a power of two for the tree sums
constexpr int kWeightTile = 1024;  // softmax weights (doubles) computed once per key, a tile at a time
constexpr int kOutsPerThread = 4;  // output features a thread sums over a tile: v_dim up to 512 in one pass

// Block-wide reduction of one double per thread in a fixed tree order: the same
// result run to run. `op` 0: sum, 1: max.
__device__ double block_reduce(double* scratch, double v, int op) {
  scratch[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const double o = scratch[threadIdx.x + stride];
      scratch[threadIdx.x] = op == 0 ? scratch[threadIdx.x] + o : fmax(scratch[threadIdx.x], o);
    }
    __syncthreads();
  }
  const double out = scratch[0];
  __syncthreads();
  return out;
}

// Block (t, h): scores of query t's head h against keys [first, pos] into shared
// memory (dot products in double, stored as float as the CPU does), their max, the
// softmax denominator (a sink adds exp(sink - max)), then each output feature d as
// the sum over keys in ascending order of w_j v_j[d], in double, w_j = exp(s_j - max)
// / denom computed once per key into a tile of shared memory (the first GPU run spent
// 2 ms a decode call recomputing it for each of MLA's 512 features).
__global__ void attention_kernel(const float* q, const int64_t* positions, const float* k, const float* v,
                                 const float* sinks, const float* keep, int64_t context, float* out, int heads,
                                 int group, int qk_dim, int v_dim, double scale, int64_t window) {
  extern __shared__ double shared[];  // kThreads doubles of scratch, a tile of weights, then the scores (floats)
  double* scratch = shared;
  double* weight = shared + kThreads;
  float* score = reinterpret_cast<float*>(shared + kThreads + kWeightTile);
  const int64_t t = blockIdx.x;
  const int h = static_cast<int>(blockIdx.y), kvh = h / group, kv_heads = heads / group;
  const int64_t pos = positions[t];
  const int64_t first = window > 0 ? max(int64_t{0}, pos - window + 1) : 0;
  const float* qh = q + (t * heads + h) * qk_dim;
  double local_max = -INFINITY;
  for (int64_t j = first + threadIdx.x; j <= pos; j += kThreads) {
    if (keep && keep[t * context + j] == 0.0f) {  // not selected: weight 0
      score[j - first] = -INFINITY;
      continue;
    }
    const float* kj = k + (j * kv_heads + kvh) * qk_dim;
    double dot = 0.0;
    for (int d = 0; d < qk_dim; ++d) dot += static_cast<double>(qh[d]) * kj[d];
    const float s = static_cast<float>(dot * scale);
    score[j - first] = s;
    local_max = fmax(local_max, static_cast<double>(s));
  }
  double max_s = block_reduce(scratch, local_max, 1);
  if (sinks) max_s = fmax(max_s, static_cast<double>(sinks[h]));
  double part = 0.0;
  for (int64_t j = first + threadIdx.x; j <= pos; j += kThreads)
    part += exp(static_cast<double>(score[j - first]) - max_s);
  double denom = block_reduce(scratch, part, 0);
  if (sinks) denom += exp(static_cast<double>(sinks[h]) - max_s);
  float* oh = out + (t * heads + h) * v_dim;
  for (int d0 = 0; d0 < v_dim; d0 += kThreads * kOutsPerThread) {  // block-uniform bounds: the syncs below
    double acc[kOutsPerThread] = {};
    for (int64_t j0 = first; j0 <= pos; j0 += kWeightTile) {
      const int64_t n = min(static_cast<int64_t>(kWeightTile), pos - j0 + 1);
      __syncthreads();  // the last tile's weights are read
      for (int64_t i = threadIdx.x; i < n; i += kThreads)
        weight[i] = exp(static_cast<double>(score[j0 + i - first]) - max_s) / denom;
      __syncthreads();
      for (int64_t i = 0; i < n; ++i) {
        const double w = weight[i];
        const float* vj = v + ((j0 + i) * kv_heads + kvh) * v_dim;
#pragma unroll
        for (int u = 0; u < kOutsPerThread; ++u) {
          const int d = d0 + u * kThreads + static_cast<int>(threadIdx.x);
          if (d < v_dim) acc[u] += w * vj[d];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kOutsPerThread; ++u) {
      const int d = d0 + u * kThreads + static_cast<int>(threadIdx.x);
      if (d < v_dim) oh[d] = static_cast<float>(acc[u]);
    }
  }
}

void need(const DeviceBuffer& b, int64_t elems, size_t elem_bytes, const char* which) {
  if (elems < 0 || b.bytes() < static_cast<size_t>(elems) * elem_bytes)
    throw CudaError(std::string("attention_f32: ") + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                    std::to_string(elems) + " elements of " + std::to_string(elem_bytes));
}
}  // namespace

void attention_f32(const DeviceBuffer& q, const DeviceBuffer& positions, int64_t queries, const DeviceBuffer& k,
                   const DeviceBuffer& v, int64_t context, const DeviceBuffer* sinks, const DeviceBuffer* keep,
                   const DeviceAttention& p, DeviceBuffer& out) {
  if (p.heads <= 0 || p.kv_heads <= 0 || p.heads % p.kv_heads != 0 || p.qk_dim <= 0 || p.v_dim <= 0)
    throw CudaError("attention_f32: " + std::to_string(p.heads) + " heads / " + std::to_string(p.kv_heads) +
                    " kv heads of qk " + std::to_string(p.qk_dim) + ", v " + std::to_string(p.v_dim));
  need(q, queries * p.heads * p.qk_dim, 4, "q");
  need(positions, queries, 8, "positions");
  need(k, context * p.kv_heads * p.qk_dim, 4, "k");
  need(v, context * p.kv_heads * p.v_dim, 4, "v");
  need(out, queries * p.heads * p.v_dim, 4, "out");
  if (sinks) need(*sinks, p.heads, 4, "sinks");
  if (keep) need(*keep, queries * context, 4, "keep");
  if (queries == 0) return;
  // Every score of one (query, head) sits in shared memory: the context is bounded by
  // what one block may hold (Hopper: 227 KiB, opted into below 48 KiB's default).
  const size_t shared_bytes = (kThreads + kWeightTile) * sizeof(double) + static_cast<size_t>(context) * sizeof(float);
  int device = 0, most = 0;
  detail::check(cudaGetDevice(&device), "cudaGetDevice");
  detail::check(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
  if (shared_bytes > static_cast<size_t>(most))
    throw CudaError("attention_f32: a context of " + std::to_string(context) + " tokens needs " +
                    std::to_string(shared_bytes) + " bytes of shared memory per block; this GPU allows " +
                    std::to_string(most));
  detail::check(cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(shared_bytes)),
                "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  const dim3 grid(static_cast<unsigned>(queries), static_cast<unsigned>(p.heads));
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  attention_kernel<<<grid, kThreads, shared_bytes>>>(
      static_cast<const float*>(q.data()), static_cast<const int64_t*>(positions.data()),
      static_cast<const float*>(k.data()), static_cast<const float*>(v.data()),
      sinks ? static_cast<const float*>(sinks->data()) : nullptr,
      keep ? static_cast<const float*>(keep->data()) : nullptr, context, static_cast<float*>(out.data()),
      static_cast<int>(p.heads), static_cast<int>(p.heads / p.kv_heads), static_cast<int>(p.qk_dim),
      static_cast<int>(p.v_dim), p.scale, p.window);
  detail::check_launch("attention_f32");
}

}  // namespace dayzero::cuda
