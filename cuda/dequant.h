#pragma once
// Weights stored in one format, made into another on the device before a GEMM (and
// float32 activations into BF16 for a BF16 GEMM):
// DeepSeek-V3's FP8 E4M3 with a float32 scale per 128 x 128 block (the checkpoints'
// `weight_scale_inv`) into BF16 for Blas::gemm_bf16 (cuda/gemm.h), which keeps the
// activations' BF16 bits (cuBLASLt scales FP8 by blocks only when both operands are
// FP8: the opt-in W8A8 path below). The values are the CPU's (executor/weights.cpp:
// code x scale in float32), rounded to BF16 to nearest even (executor/quantize.h).

#include <cstdint>

#include "cuda/device.h"
#include "plan/cuda_staging.h"

namespace dayzero::cuda {

// codes: [rows, cols] bytes; scales: float32 [ceil(rows / block_rows), ceil(cols /
// block_cols)]; out: [rows, cols] BF16 (2 bytes each). Throws CudaError when a buffer
// is too small or a size is not positive.
void fp8_block_to_bf16(const DeviceBuffer& codes, const DeviceBuffer& scales, int64_t rows, int64_t cols,
                       int64_t block_rows, int64_t block_cols, DeviceBuffer& out);

// The decode GEMV over FP8 weights as stored (1 byte an element read once, no BF16
// copy): y [m, n] float32 = x [m, k] W^T (+ bias [n], or null), W [n, k] E4M3 codes with
// float32 scales per block_rows x block_cols block, x as BF16 bits (the activations
// rounded as for the tensor-core GEMMs). Each product is the CPU's dequantized weight
// (code x scale in float32) times x, summed in float32 (16 consecutive inputs per
// lane, then the warp's lanes): the CPU's product of the same values, in another order.
// For m <= kFp8GemvRows, k and block_cols multiples of 16 (fp8_gemv_fits); throws
// CudaError otherwise or when a buffer is too small.
inline constexpr int kFp8GemvRows = plan::kCudaFp8GemvRows;  // the memory ledger reads it there
bool fp8_gemv_fits(int64_t m, int64_t k, int64_t block_cols);
void fp8_block_gemv(const DeviceBuffer& x_bf16, int64_t m, const DeviceBuffer& codes, const DeviceBuffer& scales,
                    int64_t n, int64_t k, int64_t block_rows, int64_t block_cols, const DeviceBuffer* bias,
                    DeviceBuffer& y);

// DeepSeek-V3's W8A8 (its technical report, section 3.3: activations quantized per
// token and 128 channels, weights per 128 x 128 block), the way SGLang and vLLM run its
// FP8 GEMMs and Blas::gemm_fp8_blocks takes them (cuBLASLt's VEC128_32F and
// BLK128x128_32F modes, cuBLAS 12.9 and later on Hopper). Opt-in in the backend's
// `linear` (DAYZERO_CUDA_FP8_W8A8=1): its values are not the CPU's (the activations lose
// their BF16 bits to E4M3), so the goldens' tolerance does not cover it.
inline constexpr int64_t kFp8ScaleBlock = 128;
// x [m, k] float32 -> codes [m_pad, k] E4M3 and scales float32 [k / 128, m_pad]
// (m_pad contiguous: the layout cuBLASLt reads a VEC128_32F scale of the B operand in,
// per the cuBLAS documentation's scaling-factor layouts): each group of 128 columns of
// a row gets scale = its largest |x| / 448 (1 for an all-zero group) and codes
// fp8::e4m3_code(x / scale); rows m .. m_pad - 1 are zero with scale 1. k a multiple
// of 128 and m_pad >= m, else CudaError.
void fp8_quantize_rows(const DeviceBuffer& x, int64_t m, int64_t k, int64_t m_pad, DeviceBuffer& codes,
                       DeviceBuffer& scales);
// The checkpoint's block scales float32 [row_blocks, col_blocks] into cuBLASLt's
// BLK128x128_32F layout for the A operand: the same rows, each padded with ones to
// fp8_padded_scale_cols(col_blocks) entries (the column blocks contiguous).
int64_t fp8_padded_scale_cols(int64_t col_blocks);
void fp8_pad_block_scales(const DeviceBuffer& scales, int64_t row_blocks, int64_t col_blocks, DeviceBuffer& out);

// n float32 values to BF16 (round to nearest even, executor/quantize.h's rule): the
// activations a BF16 GEMM takes.
void f32_to_bf16(const DeviceBuffer& x, DeviceBuffer& out, int64_t n);

}  // namespace dayzero::cuda
