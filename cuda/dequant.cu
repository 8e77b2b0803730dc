#include "cuda/dequant.h"

#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 256;

// OCP FP8 E4M3 (bias 7, no infinities, 0x7F / 0xFF NaN) as float32, exactly.
__device__ float e4m3_value(uint8_t code) {
  const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  const float sign = (code & 0x80) ? -1.0f : 1.0f;
  if (exponent == 0xF && mantissa == 0x7) return __int_as_float(0x7FC00000);
  if (exponent == 0) return sign * ldexpf(static_cast<float>(mantissa), -9);  // subnormal: m x 2^-9
  return sign * ldexpf(static_cast<float>(8 + mantissa), exponent - 10);      // (1 + m/8) x 2^(e-7)
}

// float32 -> BF16 bits, to nearest even; NaN stays a quiet NaN (executor/quantize.cpp).
__device__ uint16_t to_bf16(float x) {
  const uint32_t u = static_cast<uint32_t>(__float_as_int(x));
  if (x != x) return static_cast<uint16_t>((u >> 16) | 0x0040);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

__global__ void fp8_block_to_bf16_kernel(const uint8_t* codes, const float* scales, int64_t rows, int64_t cols,
                                         int64_t block_rows, int64_t block_cols, int64_t scale_cols, uint16_t* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  const float scale = scales[(r / block_rows) * scale_cols + c / block_cols];
  out[i] = to_bf16(__fmul_rn(e4m3_value(codes[i]), scale));  // no contraction: the CPU's product
}
__global__ void to_bf16_kernel(const float* x, uint16_t* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = to_bf16(x[i]);
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
  fp8_block_to_bf16_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
      static_cast<const uint8_t*>(codes.data()), static_cast<const float*>(scales.data()), rows, cols, block_rows,
      block_cols, scale_cols, static_cast<uint16_t*>(out.data()));
  detail::check_launch("fp8_block_to_bf16");
}

}  // namespace dayzero::cuda
