#pragma once
// A run's path for block-scaled FP8 GEMMs: what the CUDA backend reports
// (executor::Backend::fp8_block_gemm) and Measurements records. Plain (no other
// include): the executor's backend table names it.

namespace dayzero::plan {

// How block-scaled FP8 weights were multiplied at more rows than the CUDA backend's
// GEMV takes (cuda/backend.cpp `linear`): widened to BF16 for the call (bf16, the
// default; the CPU's float32 products are the CPU's business), or as the engines run
// them, activations quantized to E4M3 per row and 128 columns with both operands
// scaled inside cuBLASLt's FP8 GEMM (w8a8: DAYZERO_CUDA_FP8_W8A8=1 and cuBLASLt took
// it). `validate` prices those GEMMs and sizes the executor's staging by it.
enum class Fp8BlockGemm { bf16, w8a8 };

}  // namespace dayzero::plan
