#pragma once
// What a weight precision asks of the device: the tensor-core dtype its GEMMs run
// in, and whether a device without that path can run it at all. One place, used
// by the cost model (model_costs.cpp), plan checks against a cluster and the search.

#include <optional>
#include <string>

#include "model/config.h"
#include "model/dtype.h"
#include "plan/plan.h"
#include "topology/device.h"

namespace dayzero::simulate {

// The compute dtype of a GEMM whose weights are at `p` (activations as the engines
// run each precision):
//   bf16, int8_w8a16, int4  bf16  weight-only: weights dequantized in the kernel,
//                                 BF16 math (Marlin / Machete W8A16, W4A16)
//   fp8                     fp8   W8A8 FP8
//   int8                    int8  W8A8 INT8 (per-token dynamic activation scales)
//   nvfp4                   fp4   W4A4: activations quantized to NVFP4 as well
//                                 (TensorRT-LLM, vLLM and SGLang on Blackwell)
//   checkpoint              fp8 for an FP8 checkpoint, else bf16 (MXFP4 gpt-oss
//                                 experts: dequantized to BF16)
topology::ComputeDtype gemm_dtype(model::WeightPrecision p, const model::ModelConfig& c);

// The compute dtype a precision cannot be run without: int8 (W8A8) needs INT8 tensor
// cores and nvfp4 (W4A4) FP4 ones, since their activations are quantized to that
// type. nullopt for the rest: weight-only precisions compute in BF16, and fp8 on a
// device without FP8 is run weight-only by the engines (vLLM's FP8 Marlin, W8A16),
// which Roofline::peak costs at the BF16 peak.
std::optional<topology::ComputeDtype> required_compute_dtype(model::WeightPrecision p);

// Checks a plan's weight precisions against the cluster's device: a precision whose
// required compute dtype the device has no peak for is a core::InputError naming
// `file`, the field (dtypes.attention, dtypes.dense_mlp, dtypes.experts,
// dtypes.embedding), the precision and the device, e.g.
//   plan.json: field 'dtypes.experts' = nvfp4: needs FP4 tensor cores (W4A4); the
//   device H100-SXM has none (its catalog entry has no fp4 peak); ...
// Call it beside plan::validate_plan wherever a plan meets a cluster.
void validate_plan_precisions(const plan::Plan& p, const topology::DeviceSpec& dev, const std::string& file);

}  // namespace dayzero::simulate
