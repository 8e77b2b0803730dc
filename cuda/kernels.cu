#include "cuda/kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <utility>

#include "cuda/check.cuh"
#include "cuda/fp8.cuh"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 256;  // one block per group; a power of two for the tree reduction

__global__ void rms_norm_kernel(float* x, const float* w, int64_t n, double eps) {
  __shared__ double partial[kThreads];
  float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) sum += static_cast<double>(row[i]) * row[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = static_cast<float>(1.0 / sqrt(partial[0] / static_cast<double>(n) + eps));
  for (int64_t i = threadIdx.x; i < n; i += kThreads) row[i] = w[i] * (row[i] * inv);
}
constexpr int kElementThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kElementThreads - 1) / kElementThreads); }

using detail::check_launch;

void need(const DeviceBuffer& b, int64_t floats, const char* what, const char* which) {
  if (floats < 0 || b.bytes() < static_cast<size_t>(floats) * sizeof(float))
    throw CudaError(std::string(what) + ": " + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                    std::to_string(floats) + " floats");
}

__global__ void swiglu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  out[i] = g / (1.0f + expf(-g)) * up[i];
}

__global__ void swiglu_clamped_kernel(const float* gate, const float* up, float* out, int64_t n, float alpha,
                                      float limit) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = fminf(gate[i], limit);
  const float u = fminf(fmaxf(up[i], -limit), limit);
  out[i] = (u + 1.0f) * (g / (1.0f + expf(-alpha * g)));
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

// out[i] = blocks[0][i] + blocks[1][i] + ... in block order, each add rounded alone.
__global__ void sum_blocks_kernel(const float* blocks, int64_t n, int64_t count, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = blocks[i];
  for (int64_t b = 1; b < count; ++b) s = __fadd_rn(s, blocks[b * n + i]);
  out[i] = s;
}

__device__ float as_float(float v) { return v; }
__device__ float as_float(uint16_t bf16) { return fp8::bf16_value(bf16); }
template <class T>
__global__ void embedding_kernel(const T* table, int64_t vocab, int64_t hidden, const int64_t* tokens, float* out) {
  const int64_t t = blockIdx.x, id = tokens[t];
  for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
    out[t * hidden + j] = id >= 0 && id < vocab ? as_float(table[id * hidden + j]) : 0.0f;
}

// One block per row, threads over (head, pair).
__global__ void rope_kernel(float* x, int64_t heads, int64_t stride, int64_t offset, const int64_t* positions,
                            const double* inv_freq, int64_t half, double factor, bool interleaved) {
  const int64_t t = blockIdx.x;
  float* row = x + t * heads * stride;
  for (int64_t j = threadIdx.x; j < heads * half; j += blockDim.x) {
    const int64_t h = j / half, i = j % half;
    const double angle = static_cast<double>(positions[t]) * inv_freq[i];
    const auto c = static_cast<float>(cos(angle) * factor), sn = static_cast<float>(sin(angle) * factor);
    float* p = row + h * stride + offset;
    float& a = interleaved ? p[2 * i] : p[i];
    float& b = interleaved ? p[2 * i + 1] : p[i + half];
    const float a0 = a, b0 = b;
    a = __fsub_rn(__fmul_rn(a0, c), __fmul_rn(b0, sn));  // no contraction: the host's rounding
    b = __fadd_rn(__fmul_rn(b0, c), __fmul_rn(a0, sn));
  }
}

// One thread per output element, k ascending: slow and plain, the reference.
__global__ void gemm_reference_kernel(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= n) return;
  for (int64_t row = blockIdx.y; row < m; row += gridDim.y) {  // gridDim.y is at most 65,535
    float acc = 0.0f;
    for (int64_t i = 0; i < k; ++i) acc = fmaf(x[row * k + i], w[col * k + i], acc);
    y[row * n + col] = acc;
  }
}
}  // namespace

void swiglu_f32(const DeviceBuffer& gate, const DeviceBuffer& up, DeviceBuffer& out, int64_t n) {
  need(gate, n, "swiglu_f32", "gate");
  need(up, n, "swiglu_f32", "up");
  need(out, n, "swiglu_f32", "out");
  if (n == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  swiglu_kernel<<<blocks_for(n), kElementThreads>>>(
      static_cast<const float*>(gate.data()), static_cast<const float*>(up.data()), static_cast<float*>(out.data()), n);
  check_launch("swiglu_f32");
}

void swiglu_clamped_f32(const DeviceBuffer& gate, const DeviceBuffer& up, DeviceBuffer& out, int64_t n, double alpha,
                        double limit) {
  need(gate, n, "swiglu_clamped_f32", "gate");
  need(up, n, "swiglu_clamped_f32", "up");
  need(out, n, "swiglu_clamped_f32", "out");
  if (n == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  swiglu_clamped_kernel<<<blocks_for(n), kElementThreads>>>(
      static_cast<const float*>(gate.data()), static_cast<const float*>(up.data()), static_cast<float*>(out.data()), n,
      static_cast<float>(alpha), static_cast<float>(limit));
  check_launch("swiglu_clamped_f32");
}

void columns_f32(const DeviceBuffer& x, int64_t rows, int64_t cols, int64_t first, int64_t count, DeviceBuffer& out) {
  need(x, rows * cols, "columns_f32", "x");
  need(out, rows * count, "columns_f32", "out");
  if (first < 0 || count < 0 || first + count > cols)
    throw CudaError("columns_f32: columns [" + std::to_string(first) + ", " + std::to_string(first + count) + ") of " +
                    std::to_string(cols));
  if (rows * count == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  detail::check(cudaMemcpy2DAsync(out.data(), static_cast<size_t>(count) * sizeof(float),
                                  static_cast<const float*>(x.data()) + first,
                                  static_cast<size_t>(cols) * sizeof(float), static_cast<size_t>(count) * sizeof(float),
                                  static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, nullptr),
                "cudaMemcpy2DAsync (columns)");
}

void add_f32(DeviceBuffer& x, const DeviceBuffer& y, int64_t n) {
  need(x, n, "add_f32", "x");
  need(y, n, "add_f32", "y");
  if (n == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  add_kernel<<<blocks_for(n), kElementThreads>>>(static_cast<float*>(x.data()), static_cast<const float*>(y.data()), n);
  check_launch("add_f32");
}

void sum_blocks_f32(const DeviceBuffer& blocks, int64_t n, int64_t count, DeviceBuffer& out) {
  if (count < 1) throw CudaError("sum_blocks_f32: " + std::to_string(count) + " blocks");
  need(blocks, n * count, "sum_blocks_f32", "blocks");
  need(out, n, "sum_blocks_f32", "out");
  if (n == 0) return;
  sum_blocks_kernel<<<blocks_for(n), kElementThreads>>>(static_cast<const float*>(blocks.data()), n, count,
                                                        static_cast<float*>(out.data()));
  check_launch("sum_blocks_f32");
}

namespace {
template <class T>
void embedding(const char* fn, const DeviceBuffer& table, int64_t vocab, int64_t hidden, const DeviceBuffer& tokens,
               int64_t n_tokens, DeviceBuffer& out) {
  if (vocab < 0 || hidden < 0 || table.bytes() < static_cast<size_t>(vocab * hidden) * sizeof(T))
    throw CudaError(std::string(fn) + ": the table holds " + std::to_string(table.bytes()) + " bytes, not " +
                    std::to_string(vocab) + " x " + std::to_string(hidden) + " values");
  need(out, n_tokens * hidden, fn, "out");
  if (n_tokens < 0 || tokens.bytes() < static_cast<size_t>(n_tokens) * sizeof(int64_t))
    throw CudaError(std::string(fn) + ": the token buffer holds fewer than " + std::to_string(n_tokens) + " ids");
  if (n_tokens == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  embedding_kernel<T><<<static_cast<unsigned>(n_tokens), kElementThreads>>>(
      static_cast<const T*>(table.data()), vocab, hidden, static_cast<const int64_t*>(tokens.data()),
      static_cast<float*>(out.data()));
  check_launch(fn);
}
}  // namespace

void embedding_f32(const DeviceBuffer& table, int64_t vocab, int64_t hidden, const DeviceBuffer& tokens,
                   int64_t n_tokens, DeviceBuffer& out) {
  embedding<float>("embedding_f32", table, vocab, hidden, tokens, n_tokens, out);
}
void embedding_bf16(const DeviceBuffer& table, int64_t vocab, int64_t hidden, const DeviceBuffer& tokens,
                    int64_t n_tokens, DeviceBuffer& out) {
  embedding<uint16_t>("embedding_bf16", table, vocab, hidden, tokens, n_tokens, out);
}

DeviceRopeTable rope_table_on_device(DevicePool& pool, const double* inv_freq, int64_t half, double attention_factor) {
  if (half < 0) throw CudaError("rope_table_on_device: " + std::to_string(half) + " frequencies");
  DeviceRopeTable t;
  t.half = half;
  t.attention_factor = attention_factor;
  t.inv_freq = DeviceBuffer(pool, static_cast<size_t>(half) * sizeof(double));
  if (t.half > 0) t.inv_freq.upload(inv_freq, t.inv_freq.bytes());
  return t;
}

void rope_f32(DeviceBuffer& x, int64_t rows, int64_t heads, int64_t stride, int64_t offset,
              const DeviceBuffer& positions, const DeviceRopeTable& table, bool interleaved) {
  const int64_t half = table.half;
  need(x, rows * heads * stride, "rope_f32", "x");
  if (offset < 0 || offset + 2 * half > stride)
    throw CudaError("rope_f32: " + std::to_string(2 * half) + " rotated features at " + std::to_string(offset) +
                    " do not fit heads of " + std::to_string(stride));
  if (rows < 0 || positions.bytes() < static_cast<size_t>(rows) * sizeof(int64_t))
    throw CudaError("rope_f32: the position buffer holds fewer than " + std::to_string(rows) + " positions");
  if (rows == 0 || half == 0 || heads == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  rope_kernel<<<static_cast<unsigned>(rows), kElementThreads>>>(
      static_cast<float*>(x.data()), heads, stride, offset, static_cast<const int64_t*>(positions.data()),
      static_cast<const double*>(table.inv_freq.data()), half, table.attention_factor, interleaved);
  check_launch("rope_f32");
}

void gemm_f32_reference(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& y, int64_t m, int64_t n,
                        int64_t k) {
  need(x, m * k, "gemm_f32_reference", "x");
  need(w, n * k, "gemm_f32_reference", "w");
  need(y, m * n, "gemm_f32_reference", "y");
  if (m == 0 || n == 0) return;
  const dim3 grid(blocks_for(n), static_cast<unsigned>(std::min<int64_t>(m, 65535)));
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  gemm_reference_kernel<<<grid, kElementThreads>>>(
      static_cast<const float*>(x.data()), static_cast<const float*>(w.data()), static_cast<float*>(y.data()), m, n, k);
  check_launch("gemm_f32_reference");
}

void rms_norm_f32(DeviceBuffer& x, const DeviceBuffer& w, int64_t groups, int64_t n, double eps) {
  const auto need = static_cast<size_t>(groups * n) * sizeof(float);
  if (groups < 0 || n <= 0 || x.bytes() < need || w.bytes() < static_cast<size_t>(n) * sizeof(float))
    throw CudaError("rms_norm_f32: " + std::to_string(groups) + " groups of " + std::to_string(n) +
                    " floats do not fit buffers of " + std::to_string(x.bytes()) + " and " + std::to_string(w.bytes()) +
                    " bytes");
  if (groups == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  rms_norm_kernel<<<static_cast<unsigned>(groups), kThreads>>>(static_cast<float*>(x.data()),
                                                               static_cast<const float*>(w.data()), n, eps);
  check_launch("rms_norm_f32");
}

}  // namespace dayzero::cuda
