#pragma once
// Calibration (DESIGN, "The closed loop", step 3): the efficiency figures of one
// device fitted to what a run measured there, written in the format of
// scenarios/devices/efficiency.json so EfficiencyTable loads it and the simulator
// costs with it.
//
// The fit, in order (deterministic; every op with calls > 0 and min_s > 0 takes
// part, all ranks and both phases; t = min_s, one call; ideal terms use the
// op's costed FLOPs (validation.h) and bytes at the device's peak and bandwidth):
//  1. kernel_overhead_s = min over ops of (t - max(FLOPs / peak, bytes / bandwidth)),
//     clamped to [0, 1 ms]: the largest fixed cost per call that no op contradicts
//     (element-wise ops count bytes only).
//  2. Every op is put in the group of the roofline term that sets its predicted
//     time with the current figures (validation.h, bound_of): gemm_compute,
//     gemm_memory, attention_compute, attention_memory, elementwise_memory.
//  3. Each group's figure = sum(calls x ideal term) / sum(calls x max(t - overhead, 0)):
//     the fraction of peak that makes the group's predicted total equal its
//     measured total; clamped to [1e-6, 1] (a group faster than peak, e.g. data
//     held in cache, is costed at peak). A figure without ops keeps its start value.
//  4. Steps 2-3 repeat until no op changes group (at most kMaxCalibrationRounds).
// tile_rows is kept from the start figures.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "plan/measurements.h"
#include "simulate/efficiency.h"
#include "simulate/validation.h"
#include "topology/device.h"

namespace dayzero::simulate {

inline constexpr int kMaxCalibrationRounds = 20;
inline constexpr double kMinCalibratedEfficiency = 1e-6;
inline constexpr double kMaxCalibratedOverheadS = 1e-3;  // EfficiencyTable's upper bound

// One figure as the fit left it.
struct CalibratedFigure {
  std::string name;       // the efficiency.json key, e.g. "gemm_memory", "kernel_overhead_s"
  double start = 0;       // the figure before calibration
  double value = 0;       // after
  int64_t ops = 0;        // distinct measured ops it was fitted to; 0: kept from the start
  double ideal_s = 0;     // its group's ideal time at peak (sum of calls x ideal term)
  double measured_s = 0;  // its group's measured time less the overhead (sum of calls x (t - overhead))
  bool clamped = false;   // the fit fell outside the allowed range
};

struct Calibration {
  std::string device;
  Efficiency efficiency;
  std::vector<CalibratedFigure> figures;  // the six fitted figures, kernel_overhead_s first
  int rounds = 0;                         // rounds of steps 2-3
  int64_t ops = 0;                        // ops that took part
};

// Throws std::invalid_argument when no op has a timing (a run with --iterations 0)
// or an op's kind is not an op kind.
Calibration fit_calibration(const plan::Measurements& m, const topology::DeviceSpec& dev, const Efficiency& start,
                            topology::ComputeDtype compute_dtype = kCpuComputeDtype);
inline Efficiency calibrate(const plan::Measurements& m, const topology::DeviceSpec& dev, const Efficiency& start,
                            topology::ComputeDtype compute_dtype = kCpuComputeDtype) {
  return fit_calibration(m, dev, start, compute_dtype).efficiency;
}

// The calibration as an efficiency.json: `default` is the table's default (so the
// file is a whole table that EfficiencyTable::load reads), `devices` has the one
// calibrated device with `source` (say which Measurements file, machine and date).
nlohmann::json calibration_to_json(const Calibration& c, const std::string& source, const Efficiency& table_default,
                                   const std::string& table_default_source);
// Writes via a temporary file in the same directory and a rename.
void save_calibration(const std::filesystem::path& file, const Calibration& c, const std::string& source,
                      const Efficiency& table_default, const std::string& table_default_source);

}  // namespace dayzero::simulate
