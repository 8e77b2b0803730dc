#pragma once
// cuBLASLt, loaded when the first GEMM handle is made (dlopen), not when a binary
// starts: linked at load time, its relocations alone put about 200 MB in the
// resident set of every `dayzero` command, GPU or not. For cuda/*.cu only (it
// includes cuBLASLt's header). The function types are the header's own.

#include <cublasLt.h>

namespace dayzero::cuda::detail {

struct CublasLt {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtGetStatusName) status_name;
  decltype(&cublasLtGetStatusString) status_string;
  decltype(&cublasLtMatmul) matmul;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
};

// The library's entry points, loaded once (by its soname, then by the path the build
// found); throws CudaError naming both and the loader's message when neither loads.
const CublasLt& cublaslt();

}  // namespace dayzero::cuda::detail
