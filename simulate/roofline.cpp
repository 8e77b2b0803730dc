#include "simulate/roofline.h"

#include <stdexcept>
#include <string>

namespace dayzero::simulate {

OpClass op_class(std::string_view kind) {
  if (kind == "gemm" || kind == "expert_gemm" || kind == "router") return OpClass::gemm;
  if (kind == "attention") return OpClass::attention;
  if (kind == "norm" || kind == "rope" || kind == "activation" || kind == "moe_combine" || kind == "embedding")
    return OpClass::elementwise;
  throw std::invalid_argument("\"" + std::string(kind) +
                              "\" is not an op kind (gemm, expert_gemm, router, attention, norm, rope, activation, "
                              "moe_combine, embedding)");
}

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::gemm: return "gemm";
    case OpClass::attention: return "attention";
    case OpClass::elementwise: return "elementwise";
  }
  return "?";
}

Roofline::Roofline(const topology::DeviceSpec& d, const Efficiency& e) : dev(d), eff(e) {
  for (topology::ComputeDtype dtype : topology::kAllComputeDtypes) {
    double& p = peaks_[static_cast<size_t>(dtype)];
    for (topology::ComputeDtype fallback : {dtype, topology::ComputeDtype::bf16, topology::ComputeDtype::fp32})
      if (p = dev.peak_flops_for(fallback); p > 0) break;
    // The catalog loader guarantees some dtype; one without bf16 or fp32 is costed as
    // infinitely slow (peak 0).
  }
}

double Roofline::op(OpClass c, double flops, double bytes, topology::ComputeDtype dtype) const {
  switch (c) {
    case OpClass::gemm: return gemm(flops, bytes, dtype);
    case OpClass::attention: return attention(flops, bytes, dtype);
    case OpClass::elementwise: return memory(bytes);
  }
  return 0;
}

}  // namespace dayzero::simulate
