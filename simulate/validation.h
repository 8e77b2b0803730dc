#pragma once
// Predicted against measured (DESIGN, "The closed loop", step 4): every op a run
// measured (simulate/measurements.h) is re-costed with the simulator's roofline
// (simulate/roofline.h) on a catalog device with an Efficiency, op by op, per
// (phase, op kind) and end to end. Plain values; nothing here prints.
//
// What "measured" means: an op's min_s (the fastest of its timed iterations), per
// call; totals are min_s x calls. End to end compares the sum of the predicted
// ops with the step times the run measured, which also hold what no op timing
// covers (framework work between ops, collectives, the first call's cold caches):
// the report carries the measured ops' own sum beside them to show that gap.
// Collectives are not predicted here: their measured time is reported apart.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plan/measurements.h"
#include "simulate/efficiency.h"
#include "simulate/roofline.h"
#include "topology/device.h"

namespace dayzero::simulate {

// The dtype the executor's CPU backend computes in, whatever the checkpoint stores
// (executor/registry.h: float32 activations, weights dequantized to float32).
inline constexpr topology::ComputeDtype kCpuComputeDtype = topology::ComputeDtype::fp32;

// The dtype one op of a run computed in: `base` (kCpuComputeDtype for the CPU backend
// and for the CUDA backend's first-stage kernels), except the CUDA backend's GEMMs of
// BF16 and block-scaled FP8 weights, which multiply BF16 on the tensor cores when the
// inner size is a multiple of 8 (and, for FP8, more than 8 rows: fewer read the codes
// in a GEMV; cuda/backend.cpp, `linear`). With `fp8` w8a8 (the run's
// Measurements::fp8_block_gemm) those FP8 GEMMs whose inner size is a multiple of 128
// and outer size of 16 multiply in FP8 (cuda/backend.cpp `w8a8_wanted`; the 128 x 128
// blocks the FP8 checkpoints DayZero reads store).
topology::ComputeDtype op_compute_dtype(const plan::OpMeasurement& op, std::string_view backend,
                                        topology::ComputeDtype base = kCpuComputeDtype,
                                        plan::Fp8BlockGemm fp8 = plan::Fp8BlockGemm::bf16);

// The FLOPs the roofline charges one call of a measured op: GEMM-class ops
// (gemm, expert_gemm, router) with their rows (shape[0]) rounded up to whole
// tiles of eff.tile_rows, as the step model does; other ops as measured.
double costed_flops(const plan::OpMeasurement& op, const Efficiency& eff);

// One call's time: Roofline::op(class, costed FLOPs, bytes) + eff.kernel_overhead_s.
// Throws std::invalid_argument when op.kind is not an op kind.
double predict_op_s(const plan::OpMeasurement& op, const topology::DeviceSpec& dev, const Efficiency& eff,
                    topology::ComputeDtype compute_dtype = kCpuComputeDtype);

// Which roofline term sets an op's time: "compute" or "memory" (element-wise ops
// are always "memory").
std::string_view bound_of(const plan::OpMeasurement& op, const topology::DeviceSpec& dev, const Efficiency& eff,
                          topology::ComputeDtype compute_dtype = kCpuComputeDtype);

// 100 x (predicted - measured) / measured; 0 when both are 0, +inf when only
// measured is 0.
double error_pct(double predicted_s, double measured_s);

struct OpValidation {
  size_t op = 0;  // index into Measurements::ops
  int rank = 0;
  std::string phase, name, kind, variant;
  std::vector<int64_t> shape;
  int64_t calls = 0;
  std::string bound;            // "compute" | "memory", as predicted
  double measured_s = 0;        // min_s, one call
  double predicted_s = 0;       // one call
  double measured_total_s = 0;  // x calls
  double predicted_total_s = 0;
  double error_pct = 0;
};

// One (phase, kind) over every rank.
struct GroupValidation {
  std::string phase, kind;
  int64_t ops = 0;  // distinct measured ops
  int64_t calls = 0;
  double measured_s = 0, predicted_s = 0;  // totals (min_s x calls)
  double error_pct = 0;
};

// One phase end to end, on the rank whose predicted ops take longest (a step waits
// for the slowest rank). Decode figures are per step (the phase's totals divided
// by the number of decode steps).
struct PhaseValidation {
  std::string phase;
  bool measured = false;      // the run had this phase (decode: at least one step)
  int64_t steps = 0;          // 1 for prefill; decode steps
  int rank = 0;               // the slowest rank by prediction
  double measured_s = 0;      // the run's step time: prefill_s, or the mean decode step
  double measured_ops_s = 0;  // that rank's measured ops, per step (min_s x calls / steps)
  double predicted_s = 0;     // that rank's predicted ops, per step
  double error_pct = 0;       // predicted against measured_s
};

struct ValidationReport {
  std::string device;
  topology::ComputeDtype compute_dtype = kCpuComputeDtype;
  Efficiency efficiency;
  std::vector<OpValidation> ops;        // in Measurements::ops order (ops with calls > 0)
  std::vector<GroupValidation> groups;  // by phase (prefill first), then kind
  PhaseValidation prefill, decode;
  double collectives_s = 0;  // measured on the busiest rank (min_s x calls); not predicted
};

// Throws std::invalid_argument naming the op (index, name) when an op's kind is
// not an op kind.
ValidationReport validate(const plan::Measurements& m, const topology::DeviceSpec& dev, const Efficiency& eff,
                          topology::ComputeDtype compute_dtype = kCpuComputeDtype);

}  // namespace dayzero::simulate
