#pragma once
// What InferenceX's recipe rules ask of a measured row (internal to serve/): whether a
// field names a part (a model, an image), the checkpoint's precision, the GPU family.
// Shared by the recipes' flags (inferencex_recipes.cpp), the layouts their scripts ran
// (inferencex_layouts.cpp) and the twin recipes (inferencex_twins.cpp).

#include <string>

#include "serve/bench_rows.h"

namespace dayzero::serve::detail {

inline bool names(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
// An NVFP4 checkpoint (its GEMMs or its experts).
inline bool nvfp4_row(const BenchRow& r) { return r.gemm_quant == "nvfp4" || r.moe_quant == "nvfp4"; }
// An FP8 checkpoint (per-tensor or block-scaled).
inline bool fp8_row(const BenchRow& r) { return names(r.gemm_quant, "fp8") || names(r.moe_quant, "fp8"); }
// The recipes are chosen by GPU too, and the Hopper ones (`*_h100.sh`, `*_h200.sh`) set
// fewer flags than the Blackwell ones.
inline bool hopper(const BenchRow& r) { return r.system == "h100_sxm" || r.system == "h200_sxm"; }

}  // namespace dayzero::serve::detail
