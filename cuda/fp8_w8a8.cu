#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/dequant.h"
#include "cuda/fp8.cuh"

namespace dayzero::cuda {

namespace {
constexpr int kGroup = static_cast<int>(kFp8ScaleBlock);
constexpr float kE4m3Max = 448.0f;  // the largest finite E4M3 value

void need(const DeviceBuffer& b, int64_t elems, size_t elem_bytes, const char* op, const char* what) {
  if (elems < 0 || b.bytes() < static_cast<size_t>(elems) * elem_bytes)
    throw CudaError(std::string(op) + ": " + what + " holds " + std::to_string(b.bytes()) + " bytes, fewer than " +
                    std::to_string(elems) + " elements of " + std::to_string(elem_bytes));
}

// One block per (row, group of 128 columns), 128 threads: the group's largest |x| by a
// shared-memory reduction, then each thread its code. Rows past m write zeros.
__global__ void quantize_rows_kernel(const float* x, int64_t m, int64_t k, int64_t m_pad, uint8_t* codes,
                                     float* scales) {
  const int64_t row = blockIdx.y, group = blockIdx.x;
  const int t = threadIdx.x;
  const int64_t col = group * kGroup + t;
  const float v = row < m ? x[row * k + col] : 0.0f;
  __shared__ float amax[kGroup];
  amax[t] = fabsf(v);
  __syncthreads();
  for (int stride = kGroup / 2; stride > 0; stride /= 2) {
    if (t < stride) amax[t] = fmaxf(amax[t], amax[t + stride]);
    __syncthreads();
  }
  const float scale = amax[0] > 0.0f ? __fdiv_rn(amax[0], kE4m3Max) : 1.0f;
  codes[row * k + col] = fp8::e4m3_code(__fdiv_rn(v, scale));
  if (t == 0) scales[group * m_pad + row] = scale;
}

__global__ void pad_scales_kernel(const float* scales, int64_t row_blocks, int64_t col_blocks, int64_t padded,
                                  float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= row_blocks * padded) return;
  const int64_t r = i / padded, c = i % padded;
  out[i] = c < col_blocks ? scales[r * col_blocks + c] : 1.0f;
}
}  // namespace

void fp8_quantize_rows(const DeviceBuffer& x, int64_t m, int64_t k, int64_t m_pad, DeviceBuffer& codes,
                       DeviceBuffer& scales) {
  if (m < 0 || k <= 0 || k % kFp8ScaleBlock != 0 || m_pad < m)
    throw CudaError("fp8_quantize_rows: k = " + std::to_string(k) + " must be a positive multiple of 128 and m_pad = " +
                    std::to_string(m_pad) + " at least m = " + std::to_string(m));
  need(x, m * k, 4, "fp8_quantize_rows", "x");
  need(codes, m_pad * k, 1, "fp8_quantize_rows", "codes");
  need(scales, m_pad * (k / kFp8ScaleBlock), 4, "fp8_quantize_rows", "scales");
  if (m_pad == 0) return;
  if (m_pad > 65535)
    throw CudaError("fp8_quantize_rows: " + std::to_string(m_pad) + " rows, more than a grid's 65,535");
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  const dim3 grid(static_cast<unsigned>(k / kFp8ScaleBlock), static_cast<unsigned>(m_pad));
  quantize_rows_kernel<<<grid, kGroup>>>(static_cast<const float*>(x.data()), m, k, m_pad,
                                         static_cast<uint8_t*>(codes.data()), static_cast<float*>(scales.data()));
  detail::check_launch("fp8_quantize_rows");
}

int64_t fp8_padded_scale_cols(int64_t col_blocks) { return (col_blocks + 3) / 4 * 4; }

void fp8_pad_block_scales(const DeviceBuffer& scales, int64_t row_blocks, int64_t col_blocks, DeviceBuffer& out) {
  if (row_blocks <= 0 || col_blocks <= 0)
    throw CudaError("fp8_pad_block_scales: " + std::to_string(row_blocks) + " x " + std::to_string(col_blocks) +
                    " blocks");
  const int64_t padded = fp8_padded_scale_cols(col_blocks);
  need(scales, row_blocks * col_blocks, 4, "fp8_pad_block_scales", "scales");
  need(out, row_blocks * padded, 4, "fp8_pad_block_scales", "out");
  constexpr int kThreads = 256;
  const int64_t n = row_blocks * padded;
  const detail::KernelClock clock;
  pad_scales_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(
      static_cast<const float*>(scales.data()), row_blocks, col_blocks, padded, static_cast<float*>(out.data()));
  detail::check_launch("fp8_pad_block_scales");
}

}  // namespace dayzero::cuda
