#pragma once
// The time of one op on a device, as the simulator costs it (DESIGN, "The cost
// model"): max(FLOPs / (peak x eff_compute), bytes / (bandwidth x eff_memory)),
// with the efficiency of the op's class. The per-kernel overhead is added by the
// caller (the step model counts kernels per layer; validation adds one per call).
// One definition, used by the step model (step_time.cpp) and by validation.

#include <algorithm>
#include <array>
#include <iterator>
#include <string_view>

#include "simulate/efficiency.h"
#include "simulate/time_figure.h"
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
  Roofline(const topology::DeviceSpec& d, const Efficiency& e);
  const topology::DeviceSpec& dev;
  const Efficiency& eff;

  // Peak FLOP/s for a compute dtype: the device's figure for it, else its BF16
  // figure (no FP8 path: dequantize to BF16), else its FP32 figure (a CPU).
  double peak(topology::ComputeDtype dtype) const { return peaks_[static_cast<size_t>(dtype)]; }
  // Each term with the figure that binds it (the compute term on a tie).
  BoundTime gemm_timed(double flops, double bytes, topology::ComputeDtype dtype) const {
    return bound(flops / (peak(dtype) * eff.gemm_compute), TimeFigure::gemm_compute,
                 bytes / (dev.mem_bw_Bps * eff.gemm_memory), TimeFigure::gemm_memory);
  }
  BoundTime attention_timed(double flops, double bytes,
                            topology::ComputeDtype dtype = topology::ComputeDtype::bf16) const {
    return bound(flops / (peak(dtype) * eff.attention_compute), TimeFigure::attention_compute,
                 bytes / (dev.mem_bw_Bps * eff.attention_memory), TimeFigure::attention_memory);
  }
  BoundTime memory_timed(double bytes) const {
    return {bytes / (dev.mem_bw_Bps * eff.elementwise_memory), TimeFigure::elementwise_memory};
  }
  double gemm(double flops, double bytes, topology::ComputeDtype dtype) const {
    return gemm_timed(flops, bytes, dtype).s;
  }
  double attention(double flops, double bytes, topology::ComputeDtype dtype = topology::ComputeDtype::bf16) const {
    return attention_timed(flops, bytes, dtype).s;
  }
  double memory(double bytes) const { return memory_timed(bytes).s; }
  // By class; element-wise ops cost their bytes only.
  double op(OpClass c, double flops, double bytes, topology::ComputeDtype dtype) const;

 private:
  std::array<double, std::size(topology::kAllComputeDtypes)> peaks_{};  // peak() of each, looked up once
  static BoundTime bound(double compute_s, TimeFigure compute, double memory_s, TimeFigure memory) {
    return compute_s >= memory_s ? BoundTime{compute_s, compute} : BoundTime{memory_s, memory};
  }
};

}  // namespace dayzero::simulate
