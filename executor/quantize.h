#pragma once
// Encoders to the reduced formats the executor stores in its plan's dtypes (the
// decoders are in executor/weights.h): BF16 and OCP FP8 E4M3, both rounding to
// nearest with ties to even, as the GPUs' conversion instructions do
// (cvt.rn.bf16.f32; cvt.rn.satfinite.e4m3x2.f32).

#include <cstdint>
#include <span>

#include "plan/plan.h"

namespace dayzero::executor {

// float32 -> BF16 bits: the top 16 bits, rounded to nearest even; NaN stays a (quiet) NaN.
uint16_t float_to_bf16(float x);
// float32 -> FP8 E4M3 code, rounded to nearest even and saturated to +-448 (the
// largest finite E4M3 value: "satfinite", as vLLM writes an FP8 KV cache); NaN -> 0x7F.
uint8_t float_to_fp8_e4m3(float x);

// Rounds `values` in place to what a KV cache of dtype `d` stores (fp32: unchanged;
// fp8: E4M3 at scale 1, as vLLM's fp8 cache without calibrated scales).
void round_to_storage(std::span<float> values, plan::KvDtype d);

}  // namespace dayzero::executor
