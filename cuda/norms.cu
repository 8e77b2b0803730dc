// The CUDA backend's other row-wise kernels: LayerNorm, RMSNorm over a given mean
// square (MiniMax-M2's norm across heads) and Qwen3.5's sigmoid gate, as
// executor/kernels.h computes them.
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 256;  // one block per row for LayerNorm; a power of two for the tree sums

__device__ double block_sum(double* partial, double v) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const double out = partial[0];
  __syncthreads();
  return out;
}

// Row blockIdx.x: mean and biased variance in double (fixed tree order), then
// float((x - mean) * inv) * w + b.
__global__ void layer_norm_kernel(float* x, const float* w, const float* b, int64_t n, double eps) {
  __shared__ double partial[kThreads];
  float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) s += row[i];
  const double mean = block_sum(partial, s) / static_cast<double>(n);
  double v = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) v += (row[i] - mean) * (row[i] - mean);
  const double inv = 1.0 / sqrt(block_sum(partial, v) / static_cast<double>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    row[i] = __fadd_rn(__fmul_rn(static_cast<float>((row[i] - mean) * inv), w[i]), b[i]);
}

__global__ void rms_given_mean_kernel(float* x, const float* w, const float* mean_sq, int64_t rows, int64_t cols,
                                      double eps) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const float inv = static_cast<float>(1.0 / sqrt(static_cast<double>(mean_sq[i / cols]) + eps));
  x[i] = __fmul_rn(w[i % cols], __fmul_rn(x[i], inv));
}

__global__ void sigmoid_gate_kernel(const float* gate, const float* x, float* y, int64_t n, int64_t gate_every) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + expf(-gate[i / gate_every]));
}

// Block t: row t's sum of squares in double (block_sum's tree), rounded once.
__global__ void row_sum_squares_kernel(const float* x, int64_t cols, float* out) {
  __shared__ double partial[kThreads];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  double s = 0;
  for (int64_t i = threadIdx.x; i < cols; i += kThreads) s += static_cast<double>(row[i]) * row[i];
  const double total = block_sum(partial, s);
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<float>(total);
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void need(const DeviceBuffer& b, int64_t floats, const char* op, const char* which) {
  if (floats < 0 || b.bytes() < static_cast<size_t>(floats) * sizeof(float))
    throw CudaError(std::string(op) + ": " + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                    std::to_string(floats) + " floats");
}
}  // namespace

void layer_norm_f32(DeviceBuffer& x, const DeviceBuffer& w, const DeviceBuffer& b, int64_t rows, int64_t n,
                    double eps) {
  need(x, rows * n, "layer_norm_f32", "x");
  need(w, n, "layer_norm_f32", "weight");
  need(b, n, "layer_norm_f32", "bias");
  if (rows == 0 || n == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads>>>(
      static_cast<float*>(x.data()), static_cast<const float*>(w.data()), static_cast<const float*>(b.data()), n, eps);
  detail::check_launch("layer_norm_f32");
}

void row_sum_squares_f32(const DeviceBuffer& x, int64_t rows, int64_t cols, DeviceBuffer& out) {
  need(x, rows * cols, "row_sum_squares_f32", "x");
  need(out, rows, "row_sum_squares_f32", "out");
  if (rows == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  row_sum_squares_kernel<<<static_cast<unsigned>(rows), kThreads>>>(static_cast<const float*>(x.data()), cols,
                                                                    static_cast<float*>(out.data()));
  detail::check_launch("row_sum_squares_f32");
}

void rms_norm_given_mean_f32(DeviceBuffer& x, const DeviceBuffer& w, const DeviceBuffer& mean_sq, int64_t rows,
                             int64_t cols, double eps) {
  need(x, rows * cols, "rms_norm_given_mean_f32", "x");
  need(w, cols, "rms_norm_given_mean_f32", "weight");
  need(mean_sq, rows, "rms_norm_given_mean_f32", "mean_sq");
  if (rows * cols == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  rms_given_mean_kernel<<<blocks_for(rows * cols), kThreads>>>(
      static_cast<float*>(x.data()), static_cast<const float*>(w.data()), static_cast<const float*>(mean_sq.data()),
      rows, cols, eps);
  detail::check_launch("rms_norm_given_mean_f32");
}

void sigmoid_gate_f32(const DeviceBuffer& gate, const DeviceBuffer& x, DeviceBuffer& y, int64_t n, int64_t gate_every) {
  if (gate_every < 1 || n % gate_every != 0)
    throw CudaError("sigmoid_gate_f32: one gate for every " + std::to_string(gate_every) + " of " + std::to_string(n) +
                    " values");
  need(gate, n / gate_every, "sigmoid_gate_f32", "gate");
  need(x, n, "sigmoid_gate_f32", "x");
  need(y, n, "sigmoid_gate_f32", "y");
  if (n == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  sigmoid_gate_kernel<<<blocks_for(n), kThreads>>>(static_cast<const float*>(gate.data()),
                                                   static_cast<const float*>(x.data()), static_cast<float*>(y.data()),
                                                   n, gate_every);
  detail::check_launch("sigmoid_gate_f32");
}

}  // namespace dayzero::cuda
