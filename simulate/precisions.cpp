#include "simulate/precisions.h"

#include <utility>

#include "core/error.h"

namespace dayzero::simulate {

using model::WeightPrecision;
using topology::ComputeDtype;

topology::ComputeDtype gemm_dtype(WeightPrecision p, const model::ModelConfig& c) {
  switch (p) {
    case WeightPrecision::bf16:
    case WeightPrecision::int8_w8a16:
    case WeightPrecision::int4: return ComputeDtype::bf16;
    case WeightPrecision::fp8: return ComputeDtype::fp8;
    case WeightPrecision::int8: return ComputeDtype::int8;
    case WeightPrecision::nvfp4: return ComputeDtype::fp4;
    case WeightPrecision::checkpoint:
      return c.quant.method == model::QuantMethod::fp8 ? ComputeDtype::fp8 : ComputeDtype::bf16;
  }
  return ComputeDtype::bf16;
}

std::optional<topology::ComputeDtype> required_compute_dtype(WeightPrecision p) {
  switch (p) {
    case WeightPrecision::int8: return ComputeDtype::int8;
    case WeightPrecision::nvfp4: return ComputeDtype::fp4;
    case WeightPrecision::bf16:
    case WeightPrecision::fp8:
    case WeightPrecision::int8_w8a16:
    case WeightPrecision::int4:
    case WeightPrecision::checkpoint: break;
  }
  return std::nullopt;
}

namespace {

// What a user can plan instead on a device without the precision's tensor cores.
const char* alternative(WeightPrecision p) {
  switch (p) {
    case WeightPrecision::int8: return "int8_w8a16 is INT8 weights with BF16 math";
    case WeightPrecision::nvfp4:
      return "int4 (W4A16) costs 4-bit weights with BF16 math, as engines run FP4 weights on such devices";
    case WeightPrecision::bf16:
    case WeightPrecision::fp8:
    case WeightPrecision::int8_w8a16:
    case WeightPrecision::int4:
    case WeightPrecision::checkpoint: break;
  }
  return "";
}

}  // namespace

void validate_plan_precisions(const plan::Plan& p, const topology::DeviceSpec& dev, const std::string& file) {
  const std::pair<const char*, WeightPrecision> parts[] = {{"dtypes.attention", p.dtypes.attention},
                                                           {"dtypes.dense_mlp", p.dtypes.dense_mlp},
                                                           {"dtypes.experts", p.dtypes.experts},
                                                           {"dtypes.embedding", p.dtypes.embedding}};
  for (const auto& [field, precision] : parts) {
    const auto needed = required_compute_dtype(precision);
    if (!needed || dev.peak_flops_for(*needed) > 0) continue;
    const std::string dtype(topology::compute_dtype_name(*needed));
    throw core::InputError(file, field, std::string(model::precision_name(precision)),
                           "needs " + dtype + " tensor cores (its activations are " + dtype + " too); the device " +
                               dev.name + " has none (its catalog entry has no " + dtype + " peak); " +
                               alternative(precision));
  }
}

}  // namespace dayzero::simulate
