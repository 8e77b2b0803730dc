#pragma once
// How the serving engine that runs a plan launches the kernels whose count or cost it
// decides (the step model's share of serve::EngineProfile).

namespace dayzero::simulate {

struct EngineKernels {
  // A block-scaled FP8 GEMM's input activations are quantized (per token and 128 columns)
  // by a kernel of their own before the GEMM, once per distinct input: one more launch
  // and one pass over the input each (simulate/step_time.cpp). serve::EngineProfile holds
  // each engine's default.
  bool separate_activation_quant = false;
  bool operator==(const EngineKernels&) const = default;
};

}  // namespace dayzero::simulate
