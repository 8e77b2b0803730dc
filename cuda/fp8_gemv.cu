// FP8 weights multiplied where they lie: the decode GEMV of 128 x 128 block-scaled
// E4M3 weights (cuda/dequant.h fp8_block_gemv), reading each weight byte once.
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/dequant.h"
#include "cuda/fp8.cuh"

namespace dayzero::cuda {

namespace {
constexpr int kWarpsPerBlock = 4;
constexpr int kCodesPerLane = 16;  // one 16-byte load

// Two E4M3 codes to float32 through the hardware's FP8 -> FP16 conversion (exact:
// every E4M3 value is an FP16 value).
__device__ float2 e4m3x2_to_float2(uint16_t two) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3);
  return __half22float2(__half2(h));
}

// One warp per output feature `row`: each lane reads 16 consecutive codes at a time
// (16 | block_cols, so one scale covers them), multiplies the dequantized weights
// (code x scale, rounded to float32 as the CPU dequantizes) with the m BF16 rows of x,
// and the warp sums the lanes' partial sums in a fixed butterfly order.
__global__ void fp8_block_gemv_kernel(const uint16_t* x, int m, const uint8_t* codes, const float* scales, int64_t n,
                                      int64_t k, int64_t block_rows, int64_t block_cols, int64_t scale_cols,
                                      const float* bias, float* y) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= n) return;  // the whole warp: row is the warp's
  float acc[kFp8GemvRows] = {};
  const uint8_t* w = codes + row * k;
  const float* row_scales = scales + (row / block_rows) * scale_cols;
  // Unrolled so that each lane has several of its row's 16-byte loads in flight (the sums
  // keep their order): the H200 run's FP8 decode GEMMs reached 26-34 % of the copy rate.
#pragma unroll 4
  for (int64_t k0 = static_cast<int64_t>(lane) * kCodesPerLane; k0 < k; k0 += 32 * kCodesPerLane) {
    const uint4 packed = __ldg(reinterpret_cast<const uint4*>(w + k0));
    const float s = __ldg(row_scales + k0 / block_cols);
    const uint16_t* pairs = reinterpret_cast<const uint16_t*>(&packed);
    float wv[kCodesPerLane];
#pragma unroll
    for (int j = 0; j < kCodesPerLane / 2; ++j) {
      const float2 v = e4m3x2_to_float2(pairs[j]);
      wv[2 * j] = __fmul_rn(v.x, s);
      wv[2 * j + 1] = __fmul_rn(v.y, s);
    }
#pragma unroll
    for (int r = 0; r < kFp8GemvRows; ++r) {
      if (r >= m) break;
      // The row's 16 activations in two 16-byte loads (32-byte aligned: k and k0 are
      // multiples of 16): 2-byte loads, one per activation, made the L1 the bound at
      // ~0.9 TB/s of codes on the H200 (the first GPU run).
      const auto* xr = reinterpret_cast<const uint4*>(x + static_cast<int64_t>(r) * k + k0);
      const uint4 xv[2] = {__ldg(xr), __ldg(xr + 1)};
      const auto* xs = reinterpret_cast<const uint16_t*>(xv);
      float a = 0.0f;
#pragma unroll
      for (int j = 0; j < kCodesPerLane; ++j) a = fmaf(fp8::bf16_value(xs[j]), wv[j], a);
      acc[r] += a;
    }
  }
#pragma unroll
  for (int r = 0; r < kFp8GemvRows; ++r) {
    if (r >= m) break;
    float v = acc[r];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
    if (lane == 0) y[static_cast<int64_t>(r) * n + row] = bias ? v + bias[row] : v;
  }
}
}  // namespace

bool fp8_gemv_fits(int64_t m, int64_t k, int64_t block_cols) {
  return m >= 1 && m <= kFp8GemvRows && k > 0 && k % kCodesPerLane == 0 && block_cols % kCodesPerLane == 0;
}

void fp8_block_gemv(const DeviceBuffer& x_bf16, int64_t m, const DeviceBuffer& codes, const DeviceBuffer& scales,
                    int64_t n, int64_t k, int64_t block_rows, int64_t block_cols, const DeviceBuffer* bias,
                    DeviceBuffer& y) {
  if (!fp8_gemv_fits(m, k, block_cols) || n <= 0 || block_rows <= 0)
    throw CudaError("fp8_block_gemv: " + std::to_string(m) + " rows of " + std::to_string(k) + " inputs, " +
                    std::to_string(n) + " outputs in blocks of " + std::to_string(block_rows) + " x " +
                    std::to_string(block_cols) + " (at most " + std::to_string(kFp8GemvRows) +
                    " rows; inputs and block width multiples of 16)");
  const int64_t scale_cols = (k + block_cols - 1) / block_cols;
  const int64_t n_scales = (n + block_rows - 1) / block_rows * scale_cols;
  if (x_bf16.bytes() < static_cast<size_t>(m * k) * 2 || codes.bytes() < static_cast<size_t>(n * k) ||
      scales.bytes() < static_cast<size_t>(n_scales) * sizeof(float) ||
      y.bytes() < static_cast<size_t>(m * n) * sizeof(float) ||
      (bias && bias->bytes() < static_cast<size_t>(n) * sizeof(float)))
    throw CudaError("fp8_block_gemv: buffers of " + std::to_string(x_bf16.bytes()) + ", " +
                    std::to_string(codes.bytes()) + ", " + std::to_string(scales.bytes()) + " and " +
                    std::to_string(y.bytes()) + " bytes cannot hold " + std::to_string(m) + " x " + std::to_string(k) +
                    " BF16 inputs, " + std::to_string(n) + " x " + std::to_string(k) + " codes, their " +
                    std::to_string(n_scales) + " scales and the output");
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  const auto blocks = static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock);
  fp8_block_gemv_kernel<<<blocks, 32 * kWarpsPerBlock>>>(
      static_cast<const uint16_t*>(x_bf16.data()), static_cast<int>(m), static_cast<const uint8_t*>(codes.data()),
      static_cast<const float*>(scales.data()), n, k, block_rows, block_cols, scale_cols,
      bias ? static_cast<const float*>(bias->data()) : nullptr, static_cast<float*>(y.data()));
  detail::check_launch("fp8_block_gemv");
}

}  // namespace dayzero::cuda
