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

}  // namespace dayzero::plan
