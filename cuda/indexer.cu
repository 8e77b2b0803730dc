// The CUDA backend's sparse-attention indexer (DeepSeek-V3.2, GLM-5): each query's
// top-k cached tokens, as executor/kernels.h dsa_topk chooses them.
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 128;

// Thread (t, j): token j's score for query t, summed over heads in order, each dot
// product over features in order, every product and sum rounded on its own (no fused
// multiply-adds): the CPU's double arithmetic to the bit, so the choices tie alike.
__global__ void index_scores_kernel(const float* q, const float* w, const int64_t* positions, const float* keys,
                                    int64_t context, int heads, int dim, double head_scale, double dot_scale,
                                    double* scores) {
  const int64_t t = blockIdx.y, j = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= context || j > positions[t]) return;
  const float* k = keys + j * dim;
  double s = 0.0;
  for (int h = 0; h < heads; ++h) {
    const float* qh = q + (t * heads + h) * dim;
    double dot = 0.0;
    for (int d = 0; d < dim; ++d) dot = __dadd_rn(dot, __dmul_rn(static_cast<double>(qh[d]), k[d]));
    const double relu = fmax(0.0, __dmul_rn(dot, dot_scale));
    s = __dadd_rn(s, __dmul_rn(__dmul_rn(static_cast<double>(w[t * heads + h]), head_scale), relu));
  }
  scores[t * context + j] = s;
}

// Block t (one thread): the min(topk, pos + 1) best of tokens 0..pos, each pick the
// largest score not yet kept, ties to the lower index: a stable descending order's head.
__global__ void index_select_kernel(const double* scores, const int64_t* positions, int64_t context, int64_t topk,
                                    float* keep) {
  const int64_t t = blockIdx.x, seen = positions[t] + 1;
  const double* s = scores + t * context;
  float* kt = keep + t * context;
  for (int64_t i = 0; i < min(topk, seen); ++i) {
    int64_t best = -1;
    for (int64_t j = 0; j < seen; ++j)
      if (kt[j] == 0.0f && (best < 0 || s[j] > s[best])) best = j;
    kt[best] = 1.0f;
  }
}
}  // namespace

void dsa_topk_f32(const DeviceBuffer& q, const DeviceBuffer& w, const DeviceBuffer& positions, int64_t queries,
                  const DeviceBuffer& keys, int64_t context, const DeviceIndexer& p, DeviceBuffer& keep) {
  const auto need = [](const DeviceBuffer& b, int64_t elems, size_t bytes, const char* which) {
    if (elems < 0 || b.bytes() < static_cast<size_t>(elems) * bytes)
      throw CudaError(std::string("dsa_topk_f32: ") + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                      std::to_string(elems) + " elements of " + std::to_string(bytes));
  };
  if (p.heads <= 0 || p.head_dim <= 0 || p.topk <= 0)
    throw CudaError("dsa_topk_f32: " + std::to_string(p.heads) + " heads of " + std::to_string(p.head_dim) +
                    ", top-k " + std::to_string(p.topk));
  need(q, queries * p.heads * p.head_dim, 4, "q");
  need(w, queries * p.heads, 4, "w");
  need(positions, queries, 8, "positions");
  need(keys, context * p.head_dim, 4, "keys");
  need(keep, queries * context, 4, "keep");
  if (queries == 0 || context == 0) return;
  DeviceBuffer scores(*keep.pool(), static_cast<size_t>(queries * context) * sizeof(double));
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  detail::check(cudaMemset(keep.data(), 0, static_cast<size_t>(queries * context) * sizeof(float)), "cudaMemset");
  const dim3 grid(static_cast<unsigned>((context + kThreads - 1) / kThreads), static_cast<unsigned>(queries));
  index_scores_kernel<<<grid, kThreads>>>(
      static_cast<const float*>(q.data()), static_cast<const float*>(w.data()),
      static_cast<const int64_t*>(positions.data()), static_cast<const float*>(keys.data()), context,
      static_cast<int>(p.heads), static_cast<int>(p.head_dim), 1.0 / sqrt(static_cast<double>(p.heads)),
      1.0 / sqrt(static_cast<double>(p.head_dim)), static_cast<double*>(scores.data()));
  detail::check_launch("dsa_topk_f32 (scores)");
  index_select_kernel<<<static_cast<unsigned>(queries), 1>>>(static_cast<const double*>(scores.data()),
                                                             static_cast<const int64_t*>(positions.data()), context,
                                                             p.topk, static_cast<float*>(keep.data()));
  detail::check_launch("dsa_topk_f32 (select)");
  // No wait: the scores' buffer goes back to the pool, whose next user of a block is
  // queued behind these kernels on the same stream (cuda/device.h DevicePool).
}

}  // namespace dayzero::cuda
