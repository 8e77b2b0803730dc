#pragma once
// What DayZero's CUDA executor stages beside its float32 activations, one truth for
// the backend that allocates it (cuda/) and the ledger that predicts it
// (simulate/memory.cpp), so that `validate` sets a CUDA run beside its own figures.
// Plain constants (no other include): the CUDA sources read them too.

#include <cstdint>

namespace dayzero::plan {

// cuBLASLt's workspace, one per thread that issues GEMMs: what its Hopper kernels are
// recommended (cuBLAS API reference, cublasSetWorkspace: 32 MiB on Hopper, 4 MiB before).
inline constexpr int64_t kCudaBlasWorkspaceBytes = int64_t{32} << 20;
// At most this many rows multiply FP8 weights where they lie (the decode GEMV); more
// widen the matrix to BF16 for the tensor cores, held for the call.
inline constexpr int kCudaFp8GemvRows = 8;
// The engines' W8A8 (DAYZERO_CUDA_FP8_W8A8=1, cuda/backend.cpp `w8a8_linear`): the
// activations quantized to one E4M3 byte each with a float32 scale per row and this
// many columns (DeepSeek-V3 technical report 3.3; cuBLASLt's VEC128_32F), the rows
// padded to a multiple of kCudaW8a8RowMultiple (cuBLASLt's scale layout), the product
// made in a padded float32 buffer when the rows were padded.
// The path takes inner sizes that are a multiple of the block and outer sizes that are
// a multiple of kCudaW8a8OuterMultiple (cuBLASLt's FP8 kernels' alignment, bytes).
inline constexpr int kCudaW8a8Block = 128;
inline constexpr int kCudaW8a8RowMultiple = 4;
inline constexpr int kCudaW8a8OuterMultiple = 16;

}  // namespace dayzero::plan
