// The CUDA backend's MoE kernels: routing (executor/cpu_router.cpp's three rules)
// and the weighted combine of expert outputs, plus the bias add of a GEMM.
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 128;
// Routing keeps a token's scores in shared memory (experts at most this many: the
// largest catalog model, Kimi-K2.5, has 384) and its choices in registers.
constexpr int kMaxExperts = 4096;
constexpr int kMaxTopK = 64;
// DeepSeek-V3 reference (transformers DeepseekV3MoE): the normalization's 1e-20, and
// groups ranked by the sum of their best two biased scores (executor/cpu_router.cpp).
constexpr double kNormEpsilon = 1e-20;
constexpr int kGroupScoreTop = 2;

// Index of the largest v[i] with allowed[i] and not taken[i]; ties to the lower index
// (a stable sort's order), -1 when none.
__device__ int best_of(const double* v, const bool* taken, const bool* allowed, int lo, int hi) {
  int best = -1;
  for (int i = lo; i < hi; ++i)
    if (!taken[i] && (!allowed || allowed[i]) && (best < 0 || v[i] > v[best])) best = i;
  return best;
}

// One block of one thread per token (routing is a sliver of a step), its scores in
// the block's shared memory, in double, as the CPU kernels compute.
__global__ void route_kernel(const float* logits, int experts, DeviceRouter p, const float* bias, int64_t* out_experts,
                             float* out_weights) {
  extern __shared__ double shared[];  // score, select (experts each), group_score (n_group); then the flags
  const int64_t t = blockIdx.x;
  const float* l = logits + t * experts;
  const int G = p.rule == RouteRule::sigmoid_group_topk ? p.n_group : 1;
  double* score = shared;
  double* select = shared + experts;
  double* group_score = shared + 2 * experts;
  bool* taken = reinterpret_cast<bool*>(shared + 2 * experts + G);
  bool* allowed = taken + experts;
  bool* group_taken = allowed + experts;
  const int K = p.top_k;
  for (int e = 0; e < experts; ++e) taken[e] = false;
  const bool* allow = nullptr;
  if (p.rule == RouteRule::softmax_topk) {
    float mx = l[0];
    for (int e = 1; e < experts; ++e) mx = fmaxf(mx, l[e]);
    double sum = 0.0;
    for (int e = 0; e < experts; ++e) sum += (score[e] = exp(static_cast<double>(l[e]) - mx));
    for (int e = 0; e < experts; ++e) select[e] = score[e] = score[e] / sum;
  } else if (p.rule == RouteRule::topk_softmax) {
    for (int e = 0; e < experts; ++e) select[e] = score[e] = l[e];
  } else {  // sigmoid_group_topk
    const int per = experts / G;
    for (int e = 0; e < experts; ++e) {
      score[e] = 1.0 / (1.0 + exp(-static_cast<double>(l[e])));
      select[e] = score[e] + (bias ? bias[e] : 0.0);
    }
    for (int g = 0; g < G; ++g) {
      group_score[g] = 0.0;
      for (int i = 0; i < min(kGroupScoreTop, per); ++i) {
        const int b = best_of(select, taken, nullptr, g * per, (g + 1) * per);
        taken[b] = true;
        group_score[g] += select[b];
      }
      group_taken[g] = false;
    }
    for (int e = 0; e < experts; ++e) taken[e] = allowed[e] = false;
    for (int i = 0; i < p.topk_group; ++i) {
      const int g = best_of(group_score, group_taken, nullptr, 0, G);
      group_taken[g] = true;
      for (int e = g * per; e < (g + 1) * per; ++e) allowed[e] = true;
    }
    allow = allowed;
  }
  int sel[kMaxTopK];
  double w[kMaxTopK];
  for (int i = 0; i < K; ++i) {
    sel[i] = best_of(select, taken, allow, 0, experts);
    taken[sel[i]] = true;
  }
  if (p.rule == RouteRule::topk_softmax) {
    const double mx = score[sel[0]];
    for (int i = 0; i < K; ++i) w[i] = exp(score[sel[i]] - mx);
  } else {
    for (int i = 0; i < K; ++i) w[i] = score[sel[i]];
  }
  if (p.normalize || p.rule == RouteRule::topk_softmax) {
    double sum = 0.0;
    for (int i = 0; i < K; ++i) sum += w[i];
    sum += p.rule == RouteRule::sigmoid_group_topk ? kNormEpsilon : 0.0;
    for (int i = 0; i < K; ++i) w[i] /= sum;
  }
  for (int i = 0; i < K; ++i) {
    out_experts[t * K + i] = sel[i];
    const double scaled = p.rule == RouteRule::sigmoid_group_topk ? w[i] * p.routed_scaling_factor : w[i];
    out_weights[t * K + i] = static_cast<float>(scaled);
  }
}

// Column c of every pair, pairs in order: out[rows[i]][c] += weights[i] y[i][c], the
// product rounded before the sum (no fused multiply-add), as the CPU kernel does.
__global__ void combine_kernel(float* out, const float* y, const int64_t* rows, const float* weights, int64_t pairs,
                               int64_t cols) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  for (int64_t i = 0; i < pairs; ++i) {
    float* dst = out + rows[i] * cols + c;
    *dst = __fadd_rn(*dst, __fmul_rn(weights[i], y[i * cols + c]));
  }
}

__global__ void bias_kernel(float* y, const float* bias, int64_t rows, int64_t cols) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < rows * cols) y[i] += bias[i % cols];
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void need(const DeviceBuffer& b, int64_t elems, size_t elem_bytes, const char* op, const char* which) {
  if (elems < 0 || b.bytes() < static_cast<size_t>(elems) * elem_bytes)
    throw CudaError(std::string(op) + ": " + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                    std::to_string(elems) + " elements of " + std::to_string(elem_bytes));
}
}  // namespace

void route_f32(const DeviceBuffer& logits, int64_t tokens, int64_t experts, const DeviceRouter& p,
               const DeviceBuffer* bias, DeviceBuffer& out_experts, DeviceBuffer& out_weights) {
  if (experts <= 0 || experts > kMaxExperts || p.top_k <= 0 || p.top_k > experts || p.top_k > kMaxTopK)
    throw CudaError("route_f32: top_k " + std::to_string(p.top_k) + " of " + std::to_string(experts) +
                    " experts (at most " + std::to_string(kMaxTopK) + " of " + std::to_string(kMaxExperts) + ")");
  if (p.rule == RouteRule::sigmoid_group_topk &&
      (p.n_group < 1 || experts % p.n_group != 0 || p.topk_group < 1 || p.topk_group > p.n_group ||
       p.topk_group * (experts / p.n_group) < p.top_k))
    throw CudaError("route_f32: " + std::to_string(experts) + " experts in " + std::to_string(p.n_group) +
                    " groups, keeping " + std::to_string(p.topk_group) + ", cannot hold top_k " +
                    std::to_string(p.top_k));
  need(logits, tokens * experts, 4, "route_f32", "logits");
  need(out_experts, tokens * p.top_k, 8, "route_f32", "out_experts");
  need(out_weights, tokens * p.top_k, 4, "route_f32", "out_weights");
  if (bias) need(*bias, experts, 4, "route_f32", "bias");
  if (tokens == 0) return;
  const int64_t groups = p.rule == RouteRule::sigmoid_group_topk ? p.n_group : 1;
  const size_t shared_bytes = static_cast<size_t>(2 * experts + groups) * sizeof(double) +
                              static_cast<size_t>(2 * experts + groups);  // 4096 experts: 69 KB, opted in
  detail::check(
      cudaFuncSetAttribute(route_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)),
      "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  route_kernel<<<static_cast<unsigned>(tokens), 1, shared_bytes>>>(
      static_cast<const float*>(logits.data()), static_cast<int>(experts), p,
      bias ? static_cast<const float*>(bias->data()) : nullptr, static_cast<int64_t*>(out_experts.data()),
      static_cast<float*>(out_weights.data()));
  detail::check_launch("route_f32");
}

void moe_combine_f32(DeviceBuffer& out, const DeviceBuffer& y, const DeviceBuffer& rows, const DeviceBuffer& weights,
                     int64_t pairs, int64_t cols) {
  need(y, pairs * cols, 4, "moe_combine_f32", "y");
  need(rows, pairs, 8, "moe_combine_f32", "rows");
  need(weights, pairs, 4, "moe_combine_f32", "weights");
  if (pairs == 0 || cols == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  combine_kernel<<<blocks_for(cols), kThreads>>>(static_cast<float*>(out.data()), static_cast<const float*>(y.data()),
                                                 static_cast<const int64_t*>(rows.data()),
                                                 static_cast<const float*>(weights.data()), pairs, cols);
  detail::check_launch("moe_combine_f32");
}

void add_bias_f32(DeviceBuffer& y, const DeviceBuffer& bias, int64_t rows, int64_t cols) {
  need(y, rows * cols, 4, "add_bias_f32", "y");
  need(bias, cols, 4, "add_bias_f32", "bias");
  if (rows * cols == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  bias_kernel<<<blocks_for(rows * cols), kThreads>>>(static_cast<float*>(y.data()),
                                                     static_cast<const float*>(bias.data()), rows, cols);
  detail::check_launch("add_bias_f32");
}

}  // namespace dayzero::cuda
