// The CUDA backend's gated delta-net (Qwen3.5's linear attention), as
// executor/kernels.h gated_delta_net computes it in its recurrent form: the causal
// conv with SiLU, each head's normalized q and k with its decay and beta, the delta
// rule token by token on each head's state, and the gated RMSNorm. Every double
// product and sum is rounded on its own (no fused multiply-adds), in the CPU's order.
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 128;
constexpr int kMaxConvKernel = 16;  // Qwen3.5: 4

__device__ float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ double dfma_free(double acc, double a, double b) { return __dadd_rn(acc, __dmul_rn(a, b)); }

// Thread c: channel c over the step's tokens, earlier inputs from the state (the last
// K - 1, oldest first), which then holds the newest K - 1.
__global__ void conv_kernel(const float* x, const float* w, float* state, float* y, int64_t T, int64_t C, int K) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= C) return;
  float old[kMaxConvKernel];
  for (int r = 0; r < K - 1; ++r) old[r] = state[r * C + c];
  const auto input = [&](int64_t t) { return t >= 0 ? x[t * C + c] : old[K - 1 + t]; };
  for (int64_t t = 0; t < T; ++t) {
    float acc = 0.0f;
    for (int j = 0; j < K; ++j) acc = __fadd_rn(acc, __fmul_rn(w[c * K + j], input(t - K + 1 + j)));
    y[t * C + c] = silu(acc);
  }
  for (int r = 0; r < K - 1; ++r) state[r * C + c] = input(T - (K - 1) + r);
}

__device__ void l2_normalize(float* x, int n, double eps) {
  double ss = 0.0;
  for (int i = 0; i < n; ++i) ss = dfma_free(ss, x[i], x[i]);
  const double inv = 1.0 / sqrt(ss + eps);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(__dmul_rn(x[i], inv));
}

// Thread (t, h): value head h's q and k (key head h / (Hv / Hk)), L2-normalized, q
// times dk^-1/2; its v; g = -exp(A_log) softplus(a + dt_bias); beta = sigmoid(b).
__global__ void head_inputs_kernel(const float* conv, const float* b, const float* a, const float* dt_bias,
                                   const float* a_log, DeviceDeltaNet p, float* q, float* k, float* v, float* g,
                                   float* beta, int64_t T) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= T * p.value_heads) return;
  const int64_t t = i / p.value_heads;
  const int h = static_cast<int>(i % p.value_heads), dk = p.key_head_dim, dv = p.value_head_dim;
  const int kh = h / (p.value_heads / p.key_heads);
  const int64_t conv_dim = 2 * p.key_heads * dk + static_cast<int64_t>(p.value_heads) * dv;
  const float* row = conv + t * conv_dim;
  float *qi = q + i * dk, *ki = k + i * dk, *vi = v + i * dv;
  for (int d = 0; d < dk; ++d) {
    qi[d] = row[kh * dk + d];
    ki[d] = row[(p.key_heads + kh) * dk + d];
  }
  for (int d = 0; d < dv; ++d) vi[d] = row[2 * p.key_heads * dk + h * dv + d];
  l2_normalize(qi, dk, p.l2_eps);
  l2_normalize(ki, dk, p.l2_eps);
  const double scale = 1.0 / sqrt(static_cast<double>(dk));
  for (int d = 0; d < dk; ++d) qi[d] = static_cast<float>(__dmul_rn(qi[d], scale));
  const double x = __dadd_rn(static_cast<double>(a[i]), static_cast<double>(dt_bias[h]));
  const double softplus = x > 20.0 ? x : log1p(exp(x));  // torch's threshold 20
  g[i] = static_cast<float>(__dmul_rn(-exp(static_cast<double>(a_log[h])), softplus));
  beta[i] = 1.0f / (1.0f + expf(-b[i]));
}

// Block h, thread c: column c of head h's state S [dk, dv] through the step's tokens:
// S = e^g S; S += k (beta (v - S^T k))^T; o = S^T q. Columns are independent.
__global__ void recurrent_kernel(const float* q, const float* k, const float* v, const float* g, const float* beta,
                                 float* state, float* out, int64_t T, int Hv, int dk, int dv) {
  const int h = blockIdx.x;
  float* S = state + static_cast<int64_t>(h) * dk * dv;
  for (int c = threadIdx.x; c < dv; c += kThreads)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t i = t * Hv + h;
      const float decay = expf(g[i]);
      const float *qi = q + i * dk, *ki = k + i * dk;
      double mem = 0.0;
      for (int r = 0; r < dk; ++r) {
        S[r * dv + c] = __fmul_rn(S[r * dv + c], decay);
        mem = dfma_free(mem, ki[r], S[r * dv + c]);
      }
      mem = __dmul_rn(__dadd_rn(static_cast<double>(v[i * dv + c]), -mem), static_cast<double>(beta[i]));
      double acc = 0.0;
      for (int r = 0; r < dk; ++r) {
        S[r * dv + c] = __fadd_rn(S[r * dv + c], static_cast<float>(__dmul_rn(ki[r], mem)));
        acc = dfma_free(acc, qi[r], S[r * dv + c]);
      }
      out[t * Hv * dv + static_cast<int64_t>(h) * dv + c] = static_cast<float>(acc);
    }
}

// Thread (t, h): rms_norm(o) * norm * silu(z) over the head's dv outputs.
__global__ void gated_norm_kernel(float* o, const float* z, const float* norm, int64_t rows, int dv, double eps) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;  // (t, h): o's i-th dv run
  if (i >= rows) return;
  float* x = o + i * dv;
  const float* zi = z + i * dv;
  double ss = 0.0;
  for (int c = 0; c < dv; ++c) ss = dfma_free(ss, x[c], x[c]);
  const double inv = 1.0 / sqrt(ss / static_cast<double>(dv) + eps);
  for (int c = 0; c < dv; ++c)
    x[c] = __fmul_rn(__fmul_rn(static_cast<float>(__dmul_rn(x[c], inv)), norm[c]), silu(zi[c]));
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void need(const DeviceBuffer& b, int64_t floats, const char* which) {
  if (floats < 0 || b.bytes() < static_cast<size_t>(floats) * sizeof(float))
    throw CudaError(std::string("gated_delta_net_f32: ") + which + " holds " + std::to_string(b.bytes()) +
                    " bytes, not " + std::to_string(floats) + " floats");
}
}  // namespace

void gated_delta_net_f32(const DeltaNetInputs& in, DeltaNetState& state, const DeviceDeltaNet& p, int64_t T,
                         DeviceBuffer& out) {
  if (p.key_heads <= 0 || p.value_heads <= 0 || p.value_heads % p.key_heads != 0 || p.conv_kernel < 1 ||
      p.conv_kernel > kMaxConvKernel || p.key_head_dim <= 0 || p.value_head_dim <= 0)
    throw CudaError("gated_delta_net_f32: " + std::to_string(p.key_heads) + " key heads, " +
                    std::to_string(p.value_heads) + " value heads, conv kernel " + std::to_string(p.conv_kernel) +
                    " (at most " + std::to_string(kMaxConvKernel) + ")");
  const int64_t Hv = p.value_heads, dk = p.key_head_dim, dv = p.value_head_dim, K = p.conv_kernel;
  const int64_t C = 2 * p.key_heads * dk + Hv * dv;
  need(in.qkv, T * C, "qkv");
  need(in.z, T * Hv * dv, "z");
  need(in.b, T * Hv, "b");
  need(in.a, T * Hv, "a");
  need(in.conv, C * K, "conv weight");
  need(in.dt_bias, Hv, "dt_bias");
  need(in.a_log, Hv, "A_log");
  need(in.norm, dv, "norm");
  need(state.conv, (K - 1) * C, "conv state");
  need(state.recurrent, Hv * dk * dv, "recurrent state");
  need(out, T * Hv * dv, "out");
  if (T == 0) return;
  DevicePool& pool = *out.pool();
  DeviceBuffer conv_out(pool, static_cast<size_t>(T * C) * 4), q(pool, static_cast<size_t>(T * Hv * dk) * 4),
      k(pool, static_cast<size_t>(T * Hv * dk) * 4), v(pool, static_cast<size_t>(T * Hv * dv) * 4),
      g(pool, static_cast<size_t>(T * Hv) * 4), beta(pool, static_cast<size_t>(T * Hv) * 4);
  const auto f = [](const DeviceBuffer& b) { return static_cast<const float*>(b.data()); };
  const auto m = [](DeviceBuffer& b) { return static_cast<float*>(b.data()); };
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  conv_kernel<<<blocks_for(C), kThreads>>>(f(in.qkv), f(in.conv), m(state.conv), m(conv_out), T, C,
                                           static_cast<int>(K));
  detail::check_launch("gated_delta_net_f32 (conv)");
  head_inputs_kernel<<<blocks_for(T * Hv), kThreads>>>(f(conv_out), f(in.b), f(in.a), f(in.dt_bias), f(in.a_log), p,
                                                       m(q), m(k), m(v), m(g), m(beta), T);
  detail::check_launch("gated_delta_net_f32 (heads)");
  recurrent_kernel<<<static_cast<unsigned>(Hv), kThreads>>>(f(q), f(k), f(v), f(g), f(beta), m(state.recurrent), m(out),
                                                            T, static_cast<int>(Hv), static_cast<int>(dk),
                                                            static_cast<int>(dv));
  detail::check_launch("gated_delta_net_f32 (recurrence)");
  gated_norm_kernel<<<blocks_for(T * Hv), kThreads>>>(m(out), f(in.z), f(in.norm), T * Hv, static_cast<int>(dv),
                                                      p.norm_eps);
  detail::check_launch("gated_delta_net_f32 (norm)");
  // No wait: the scratch buffers go back to the pool, whose next user of a block is
  // queued behind these kernels on the same stream (cuda/device.h DevicePool).
}

}  // namespace dayzero::cuda
