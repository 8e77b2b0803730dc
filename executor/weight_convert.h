#pragma once
// Weights converted to the plan's precision when a run loads them (the plan's
// dtypes.attention / dense_mlp / experts / embedding other than "checkpoint"), so
// the run holds and computes with what the plan deploys: FP8 E4M3 with 128 x 128
// block scales (DeepSeek-V3's recipe, model::matrix_format) or BF16. Each
// converted weight owns its bytes; the kernels read it as they read a checkpoint
// stored so. Other precisions (INT8, INT4, NVFP4) are not converted: the runner
// says so.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "executor/weights.h"
#include "model/dtype.h"
#include "model/model.h"
#include "plan/plan.h"

namespace dayzero::executor {

// A weight with its own storage: `view` points into `data` and `scales`.
struct OwnedWeight {
  StoredWeight view;
  std::vector<std::byte> data, scales;
  OwnedWeight() = default;
  OwnedWeight(const OwnedWeight&) = delete;  // the view points into this object's vectors
  OwnedWeight& operator=(const OwnedWeight&) = delete;
  int64_t bytes() const { return static_cast<int64_t>(data.size() + scales.size()); }
};

// FP8 E4M3 with one F32 scale (weight_scale_inv: amax / 448, 1 for an all-zero block)
// per block of block x block elements of each matrix, codes rounded to nearest even.
void to_fp8_block(const StoredWeight& w, OwnedWeight& out, int64_t block = model::kFp8DefaultBlock);
// BF16, rounded to nearest even.
void to_bf16(const StoredWeight& w, OwnedWeight& out);

// Whether the executor converts to `p` (bf16, fp8), and what it converts: the
// projection matrices (the first weight of each gemm / expert_gemm op, and the
// embedding table) of the parts whose plan precision is not `checkpoint`; routers,
// norms and biases keep the checkpoint's storage, as the engines keep them.
bool converts_to(model::WeightPrecision p);
model::WeightPrecision planned_precision(const plan::PlanDtypes& d, model::Part part);  // checkpoint: none
// Every weight name in `needed` that the plan converts, with its precision.
std::map<std::string, model::WeightPrecision> planned_conversions(const model::Model& m, const plan::PlanDtypes& d,
                                                                  const std::vector<std::string>& needed);

}  // namespace dayzero::executor
