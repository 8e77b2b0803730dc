#include "simulate/validation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include "plan/cuda_staging.h"

namespace dayzero::simulate {

namespace {

OpClass class_of(const plan::OpMeasurement& op, size_t index) {
  try {
    return op_class(op.kind);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("field 'ops[" + std::to_string(index) + "].kind' (op " + op.name + "): " + e.what());
  }
}

int phase_order(const std::string& phase) { return phase == "prefill" ? 0 : phase == "decode" ? 1 : 2; }

// The slowest rank of one phase by prediction, with its per-step totals.
PhaseValidation phase_totals(const std::vector<OpValidation>& ops, const std::string& phase, int64_t steps,
                             double measured_step_s, bool measured) {
  std::map<int, std::pair<double, double>> by_rank;  // rank -> (predicted, measured) totals
  for (const auto& o : ops)
    if (o.phase == phase) {
      by_rank[o.rank].first += o.predicted_total_s;
      by_rank[o.rank].second += o.measured_total_s;
    }
  PhaseValidation p;
  p.phase = phase;
  p.measured = measured;
  p.steps = steps;
  p.measured_s = measured_step_s;
  double slowest = -1;
  for (const auto& [rank, t] : by_rank)
    if (t.first > slowest) {
      slowest = t.first;
      p.rank = rank;
      p.predicted_s = t.first / static_cast<double>(std::max<int64_t>(steps, 1));
      p.measured_ops_s = t.second / static_cast<double>(std::max<int64_t>(steps, 1));
    }
  p.error_pct = measured ? error_pct(p.predicted_s, p.measured_s) : 0;
  return p;
}

}  // namespace

double costed_flops(const plan::OpMeasurement& op, const Efficiency& eff) {
  const double flops = static_cast<double>(op.flops);
  if (op_class(op.kind) != OpClass::gemm || op.shape.empty() || op.shape[0] <= 0 || eff.tile_rows <= 1) return flops;
  const double rows = static_cast<double>(op.shape[0]);
  const double tile = static_cast<double>(eff.tile_rows);
  return flops * (std::ceil(rows / tile) * tile) / rows;
}

topology::ComputeDtype op_compute_dtype(const plan::OpMeasurement& op, std::string_view backend,
                                        topology::ComputeDtype base, plan::Fp8BlockGemm fp8) {
  if (backend != "cuda" || (op.kind != "gemm" && op.kind != "expert_gemm")) return base;
  const int64_t rows = op.shape.empty() ? 0 : op.shape[0], inner = op.shape.size() > 1 ? op.shape[1] : 0;
  if (inner <= 0 || inner % 8 != 0) return base;
  if (op.variant == "bf16") return topology::ComputeDtype::bf16;
  if (op.variant != "fp8_block" || rows <= plan::kCudaFp8GemvRows) return base;
  const int64_t outer = rows > 0 ? op.flops / (2 * rows * inner) : 0;  // flops = 2 x rows x inner x outer
  if (fp8 == plan::Fp8BlockGemm::w8a8 && inner % plan::kCudaW8a8Block == 0 && outer > 0 &&
      outer % plan::kCudaW8a8OuterMultiple == 0)
    return topology::ComputeDtype::fp8;
  return topology::ComputeDtype::bf16;
}

double predict_op_s(const plan::OpMeasurement& op, const topology::DeviceSpec& dev, const Efficiency& eff,
                    topology::ComputeDtype compute_dtype) {
  const Roofline rf{dev, eff};
  return rf.op(op_class(op.kind), costed_flops(op, eff), static_cast<double>(op.bytes), compute_dtype) +
         eff.kernel_overhead_s;
}

std::string_view bound_of(const plan::OpMeasurement& op, const topology::DeviceSpec& dev, const Efficiency& eff,
                          topology::ComputeDtype compute_dtype) {
  const OpClass c = op_class(op.kind);
  if (c == OpClass::elementwise) return "memory";
  const Roofline rf{dev, eff};
  const double ec = c == OpClass::gemm ? eff.gemm_compute : eff.attention_compute;
  const double em = c == OpClass::gemm ? eff.gemm_memory : eff.attention_memory;
  const double compute_s = costed_flops(op, eff) / (rf.peak(compute_dtype) * ec);
  const double memory_s = static_cast<double>(op.bytes) / (dev.mem_bw_Bps * em);
  return compute_s > memory_s ? "compute" : "memory";
}

double error_pct(double predicted_s, double measured_s) {
  if (measured_s == 0) return predicted_s == 0 ? 0 : std::numeric_limits<double>::infinity();
  return 100 * (predicted_s - measured_s) / measured_s;
}

ValidationReport validate(const plan::Measurements& m, const topology::DeviceSpec& dev, const Efficiency& eff,
                          topology::ComputeDtype compute_dtype) {
  ValidationReport r;
  r.device = dev.name;
  r.compute_dtype = compute_dtype;
  r.efficiency = eff;
  std::map<std::pair<int, std::string>, GroupValidation> groups;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const plan::OpMeasurement& o = m.ops[i];
    if (o.calls <= 0) continue;
    (void)class_of(o, i);  // names the op when its kind is unknown
    OpValidation v;
    v.op = i;
    v.rank = o.rank;
    v.phase = o.phase;
    v.name = o.name;
    v.kind = o.kind;
    v.variant = o.variant;
    v.shape = o.shape;
    v.calls = o.calls;
    const topology::ComputeDtype dtype = op_compute_dtype(o, m.backend, compute_dtype, m.fp8_block_gemm);
    v.bound = std::string(bound_of(o, dev, eff, dtype));
    v.measured_s = o.min_s;
    v.predicted_s = predict_op_s(o, dev, eff, dtype);
    const double calls = static_cast<double>(o.calls);
    v.measured_total_s = v.measured_s * calls;
    v.predicted_total_s = v.predicted_s * calls;
    v.error_pct = error_pct(v.predicted_s, v.measured_s);
    GroupValidation& g = groups[{phase_order(o.phase), o.kind}];
    g.phase = o.phase;
    g.kind = o.kind;
    g.ops += 1;
    g.calls += o.calls;
    g.measured_s += v.measured_total_s;
    g.predicted_s += v.predicted_total_s;
    r.ops.push_back(std::move(v));
  }
  for (auto& [key, g] : groups) {
    g.error_pct = error_pct(g.predicted_s, g.measured_s);
    r.groups.push_back(g);
  }
  r.prefill = phase_totals(r.ops, "prefill", 1, m.prefill_s, true);
  const auto steps = static_cast<int64_t>(m.decode_step_s.size());
  r.decode = phase_totals(r.ops, "decode", steps, m.decode_step_mean_s(), steps > 0);
  std::map<int, double> coll;
  for (const auto& c : m.collectives) coll[c.rank] += c.min_s * static_cast<double>(c.calls);
  for (const auto& [rank, s] : coll) r.collectives_s = std::max(r.collectives_s, s);
  return r;
}

}  // namespace dayzero::simulate
