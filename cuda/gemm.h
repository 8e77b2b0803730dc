#pragma once
// Tensor-core GEMMs through cuBLASLt, in the executor's layout (executor/kernels.h
// linear_f32): y [m, n] = x [m, k] W^T with W [n, k], all row-major, y in float32,
// accumulation in float32. Row-major y^T = W x^T is cuBLAS's column-major "TN" GEMM
// (A = W transposed, B = x as it lies), the layout cuBLASLt's FP8 kernels require.
// Plain C++: no CUDA or cuBLAS header reaches a user of this file.

#include <cstdint>
#include <memory>

#include "cuda/device.h"
#include "plan/cuda_staging.h"

namespace dayzero::cuda {

// A cuBLASLt handle and its workspace (RAII), one per thread that issues GEMMs.
class Blas {
 public:
  // plan::kCudaBlasWorkspaceBytes (32 MiB): the workspace cuBLAS recommends on Hopper;
  // the memory ledger counts it so.
  explicit Blas(DevicePool& pool,
                size_t workspace_bytes = static_cast<size_t>(plan::kCudaBlasWorkspaceBytes));  // throws CudaError
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // x and W as float32, multiplied in float32 (CUBLAS_COMPUTE_32F: no TF32).
  void gemm_f32(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& y, int64_t m, int64_t n, int64_t k);
  // x and W as BF16 (2 bytes an element).
  void gemm_bf16(const DeviceBuffer& x, const DeviceBuffer& w, DeviceBuffer& y, int64_t m, int64_t n, int64_t k);
  // x and W as FP8 E4M3 (1 byte an element) with one scale each, float32 on the
  // device: y = x_scale * w_scale * (x W^T). k and n multiples of 16 (cuBLASLt's FP8
  // alignment).
  void gemm_fp8(const DeviceBuffer& x, const DeviceBuffer& x_scale, const DeviceBuffer& w, const DeviceBuffer& w_scale,
                DeviceBuffer& y, int64_t m, int64_t n, int64_t k);
  // x and W as FP8 E4M3 scaled by blocks, DeepSeek-V3's W8A8: x's scales float32
  // [k / 128, m] (m contiguous; cuda/dequant.h fp8_quantize_rows makes them), W's
  // [ceil(n / 128), fp8_padded_scale_cols(k / 128)] (fp8_pad_block_scales):
  // y[r][c] = sum over each 128-column group g of x_scale[g][r] * w_scale[c / 128][g] *
  // (x codes . W codes) over g. cuBLASLt's VEC128_32F (x) and BLK128x128_32F (W) modes:
  // cuBLAS 12.9 or later, Hopper. m a multiple of 4, k of 128, n of 16; throws CudaError
  // otherwise, or when cuBLASLt has no algorithm for it (the caller falls back).
  void gemm_fp8_blocks(const DeviceBuffer& x, const DeviceBuffer& x_scales, const DeviceBuffer& w,
                       const DeviceBuffer& w_scales, DeviceBuffer& y, int64_t m, int64_t n, int64_t k);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dayzero::cuda
