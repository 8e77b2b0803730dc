#pragma once
// The time of one op on a device, as the simulator costs it (DESIGN, "The cost
// model"): max(FLOPs / (peak x eff_compute), bytes / (bandwidth x eff_memory)),
// with the efficiency of the op's class. The per-kernel overhead is added by the
// caller (the step model counts kernels per layer; validation adds one per call).
// One definition, used by the step model (step_time.cpp) and by validation.

#include <algorithm>
#include <string_view>

#include "simulate/efficiency.h"
#include "topology/device.h"

namespace dayzero::simulate {

// Which efficiency figures an op kind (model::op_kind_name) is costed with:
// gemm, expert_gemm and router are GEMMs; attention is attention; norm, rope,
// activation, moe_combine and embedding are bandwidth-bound element-wise ops.
enum class OpClass { gemm, attention, elementwise };
// Throws std::invalid_argument for a name that is not an op kind.
OpClass op_class(std::string_view kind);
const char* op_class_name(OpClass c);  // "gemm" | "attention" | "elementwise"

struct Roofline {
  const topology::DeviceSpec& dev;
  const Efficiency& eff;

  // Peak FLOP/s for a compute dtype: the device's figure for it, else its BF16
  // figure (no FP8 path: dequantize to BF16), else its FP32 figure (a CPU).
  double peak(topology::ComputeDtype dtype) const;
  double gemm(double flops, double bytes, topology::ComputeDtype dtype) const {
    return std::max(flops / (peak(dtype) * eff.gemm_compute), bytes / (dev.mem_bw_Bps * eff.gemm_memory));
  }
  double attention(double flops, double bytes, topology::ComputeDtype dtype = topology::ComputeDtype::bf16) const {
    return std::max(flops / (peak(dtype) * eff.attention_compute), bytes / (dev.mem_bw_Bps * eff.attention_memory));
  }
  double memory(double bytes) const { return bytes / (dev.mem_bw_Bps * eff.elementwise_memory); }
  // By class; element-wise ops cost their bytes only.
  double op(OpClass c, double flops, double bytes, topology::ComputeDtype dtype) const;
};

}  // namespace dayzero::simulate
