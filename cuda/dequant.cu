#include "cuda/dequant.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "cuda/check.cuh"
#include "cuda/fp8.cuh"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 256;

using fp8::bf16_bits;
using fp8::e4m3_value;

__global__ void fp8_block_to_bf16_kernel(const uint8_t* codes, const float* scales, int64_t rows, int64_t cols,
                                         int64_t block_rows, int64_t block_cols, int64_t scale_cols, uint16_t* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  const float scale = scales[(r / block_rows) * scale_cols + c / block_cols];
  out[i] = bf16_bits(__fmul_rn(e4m3_value(codes[i]), scale));  // no contraction: the CPU's product
}
// Eight codes a thread (one 8-byte load, one 16-byte store) along row blockIdx.y (and
// every gridDim.y-th after it): the same products as the kernel above, without its
// 64-bit divisions per element, which held it to ~0.1 TB/s on the H200 (first GPU run).
// Needs cols % 8 == 0 and block_cols % 8 == 0 (eight codes share one scale).
__global__ void fp8_block_to_bf16_x8_kernel(const uint8_t* codes, const float* scales, int64_t rows, int64_t cols,
                                            int64_t block_rows, int64_t block_cols, int64_t scale_cols, uint16_t* out) {
  const int64_t c = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  if (c >= cols) return;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float scale = scales[(r / block_rows) * scale_cols + c / block_cols];
    const uint2 packed = *reinterpret_cast<const uint2*>(codes + r * cols + c);
    const auto* in = reinterpret_cast<const uint8_t*>(&packed);
    uint4 bits;
    auto* o = reinterpret_cast<uint16_t*>(&bits);
#pragma unroll
    for (int j = 0; j < 8; ++j) o[j] = bf16_bits(__fmul_rn(e4m3_value(in[j]), scale));
    *reinterpret_cast<uint4*>(out + r * cols + c) = bits;
  }
}
__global__ void to_bf16_kernel(const float* x, uint16_t* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = bf16_bits(x[i]);
}
}  // namespace

void f32_to_bf16(const DeviceBuffer& x, DeviceBuffer& out, int64_t n) {
  if (n < 0 || x.bytes() < static_cast<size_t>(n) * 4 || out.bytes() < static_cast<size_t>(n) * 2)
    throw CudaError("f32_to_bf16: buffers of " + std::to_string(x.bytes()) + " and " + std::to_string(out.bytes()) +
                    " bytes cannot hold " + std::to_string(n) + " values");
  if (n == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  to_bf16_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
      static_cast<const float*>(x.data()), static_cast<uint16_t*>(out.data()), n);
  detail::check_launch("f32_to_bf16");
}

void fp8_block_to_bf16(const DeviceBuffer& codes, const DeviceBuffer& scales, int64_t rows, int64_t cols,
                       int64_t block_rows, int64_t block_cols, DeviceBuffer& out) {
  if (rows <= 0 || cols <= 0 || block_rows <= 0 || block_cols <= 0)
    throw CudaError("fp8_block_to_bf16: " + std::to_string(rows) + " x " + std::to_string(cols) + " in blocks of " +
                    std::to_string(block_rows) + " x " + std::to_string(block_cols));
  const int64_t n = rows * cols;
  const int64_t scale_cols = (cols + block_cols - 1) / block_cols;
  const int64_t n_scales = (rows + block_rows - 1) / block_rows * scale_cols;
  if (codes.bytes() < static_cast<size_t>(n) || out.bytes() < static_cast<size_t>(n) * 2 ||
      scales.bytes() < static_cast<size_t>(n_scales) * sizeof(float))
    throw CudaError("fp8_block_to_bf16: buffers of " + std::to_string(codes.bytes()) + ", " +
                    std::to_string(scales.bytes()) + " and " + std::to_string(out.bytes()) + " bytes cannot hold " +
                    std::to_string(n) + " codes, " + std::to_string(n_scales) + " scales and " + std::to_string(n) +
                    " BF16 values");
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  // Eight at a time where rows start 16-byte aligned in the output (cudaMalloc'd
  // buffers) and eight codes share a scale; element by element otherwise.
  if (cols % 8 == 0 && block_cols % 8 == 0) {
    const int64_t threads_per_row = cols / 8;
    const dim3 grid(static_cast<unsigned>((threads_per_row + kThreads - 1) / kThreads),
                    static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
    fp8_block_to_bf16_x8_kernel<<<grid, kThreads>>>(static_cast<const uint8_t*>(codes.data()),
                                                    static_cast<const float*>(scales.data()), rows, cols, block_rows,
                                                    block_cols, scale_cols, static_cast<uint16_t*>(out.data()));
    detail::check_launch("fp8_block_to_bf16");
    return;
  }
  fp8_block_to_bf16_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
      static_cast<const uint8_t*>(codes.data()), static_cast<const float*>(scales.data()), rows, cols, block_rows,
      block_cols, scale_cols, static_cast<uint16_t*>(out.data()));
  detail::check_launch("fp8_block_to_bf16");
}

}  // namespace dayzero::cuda
