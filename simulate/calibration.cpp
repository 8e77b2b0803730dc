#include "simulate/calibration.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/atomic_file.h"

namespace dayzero::simulate {

namespace {

// The fitted figures, in the order of Calibration::figures after kernel_overhead_s.
enum Group { gemm_compute, gemm_memory, attention_compute, attention_memory, elementwise_memory, kGroups };
constexpr std::array<const char*, kGroups> kGroupNames = {"gemm_compute", "gemm_memory", "attention_compute",
                                                          "attention_memory", "elementwise_memory"};

double& figure(Efficiency& e, int g) {
  switch (static_cast<Group>(g)) {
    case gemm_compute: return e.gemm_compute;
    case gemm_memory: return e.gemm_memory;
    case attention_compute: return e.attention_compute;
    case attention_memory: return e.attention_memory;
    case elementwise_memory:
    case kGroups: break;
  }
  return e.elementwise_memory;
}

double figure_of(Efficiency e, int g) { return figure(e, g); }

// One op's ideal times at peak, one call.
struct Ideal {
  double compute_s = 0, memory_s = 0;
};

struct Timed {
  const plan::OpMeasurement* op;
  OpClass cls;
  Ideal ideal;
  int group = 0;
  topology::ComputeDtype dtype = kCpuComputeDtype;  // op_compute_dtype
};

int group_of(const Timed& t, const topology::DeviceSpec& dev, const Efficiency& e) {
  if (t.cls == OpClass::elementwise) return elementwise_memory;
  const bool compute = bound_of(*t.op, dev, e, t.dtype) == "compute";
  if (t.cls == OpClass::gemm) return compute ? gemm_compute : gemm_memory;
  return compute ? attention_compute : attention_memory;
}

double ideal_term(const Timed& t) {
  return t.group == gemm_compute || t.group == attention_compute ? t.ideal.compute_s : t.ideal.memory_s;
}

}  // namespace

Calibration fit_calibration(const plan::Measurements& m, const topology::DeviceSpec& dev, const Efficiency& start,
                            topology::ComputeDtype compute_dtype) {
  const Roofline peak_rf{dev, Efficiency{}};
  std::vector<Timed> ops;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const plan::OpMeasurement& o = m.ops[i];
    if (o.calls <= 0 || o.min_s <= 0) continue;
    OpClass cls;
    try {
      cls = op_class(o.kind);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("field 'ops[" + std::to_string(i) + "].kind' (op " + o.name + "): " + e.what());
    }
    Ideal id;
    const topology::ComputeDtype dtype = op_compute_dtype(o, m.backend, compute_dtype, m.fp8_block_gemm);
    id.memory_s = static_cast<double>(o.bytes) / dev.mem_bw_Bps;
    if (cls != OpClass::elementwise) id.compute_s = costed_flops(o, start) / peak_rf.peak(dtype);
    ops.push_back({&o, cls, id, 0, dtype});
  }
  if (ops.empty())
    throw std::invalid_argument(
        "field 'ops': no op has a timing (calls > 0 and min_s > 0); run with --iterations 1 or more");

  Calibration c;
  c.device = dev.name;
  c.ops = static_cast<int64_t>(ops.size());
  Efficiency e = start;

  // 1. The fixed cost per call.
  double overhead = std::numeric_limits<double>::infinity();
  for (const auto& t : ops) overhead = std::min(overhead, t.op->min_s - std::max(t.ideal.compute_s, t.ideal.memory_s));
  const bool overhead_clamped = overhead < 0 || overhead > kMaxCalibratedOverheadS;
  e.kernel_overhead_s = std::clamp(overhead, 0.0, kMaxCalibratedOverheadS);

  // 2-4. Groups by the bounding term, figures from the groups' totals, until stable.
  std::array<double, kGroups> ideal{}, measured{};
  std::array<int64_t, kGroups> count{};
  std::array<bool, kGroups> clamped{};
  for (auto& t : ops) t.group = group_of(t, dev, e);
  for (c.rounds = 1;; ++c.rounds) {
    ideal.fill(0);
    measured.fill(0);
    count.fill(0);
    clamped.fill(false);
    for (const auto& t : ops) {
      const double calls = static_cast<double>(t.op->calls);
      const auto g = static_cast<size_t>(t.group);
      ideal[g] += calls * ideal_term(t);
      measured[g] += calls * std::max(t.op->min_s - e.kernel_overhead_s, 0.0);
      count[g] += 1;
    }
    for (int g = 0; g < kGroups; ++g) {
      const auto i = static_cast<size_t>(g);
      if (count[i] == 0) {
        figure(e, g) = figure_of(start, g);
        continue;
      }
      const double f = measured[i] > 0 ? ideal[i] / measured[i] : 1.0;
      clamped[i] = f < kMinCalibratedEfficiency || f > 1;
      figure(e, g) = std::clamp(f, kMinCalibratedEfficiency, 1.0);
    }
    bool moved = false;
    for (auto& t : ops) {
      const int g = group_of(t, dev, e);
      moved = moved || g != t.group;
      t.group = g;
    }
    if (!moved || c.rounds >= kMaxCalibrationRounds) break;
  }

  c.efficiency = e;
  c.figures.push_back(
      {"kernel_overhead_s", start.kernel_overhead_s, e.kernel_overhead_s, c.ops, 0, 0, overhead_clamped});
  for (int g = 0; g < kGroups; ++g) {
    const auto i = static_cast<size_t>(g);
    c.figures.push_back(
        {kGroupNames[i], figure_of(start, g), figure(e, g), count[i], ideal[i], measured[i], clamped[i]});
  }
  return c;
}

nlohmann::json calibration_to_json(const Calibration& c, const std::string& source, const Efficiency& table_default,
                                   const std::string& table_default_source) {
  auto figures = [](const Efficiency& e, const std::string& src) {
    nlohmann::json j = efficiency_to_json(e);
    j["source"] = src;
    return j;
  };
  return {{"description", "Efficiency figures of " + c.device + " fitted by `dayzero calibrate` to a run's " +
                              "measured ops (simulate/calibration.h); `default` is the shipped table's. Load with " +
                              "`--calibration` (validate) or use in place of scenarios/devices/efficiency.json."},
          {"default", figures(table_default, table_default_source)},
          {"devices", {{c.device, figures(c.efficiency, source)}}}};
}

void save_calibration(const std::filesystem::path& file, const Calibration& c, const std::string& source,
                      const Efficiency& table_default, const std::string& table_default_source) {
  core::write_file_atomically(file, calibration_to_json(c, source, table_default, table_default_source).dump(2) + "\n",
                              "calibration");
}

}  // namespace dayzero::simulate
