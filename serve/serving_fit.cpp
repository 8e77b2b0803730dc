// calibrate --bench's fit (serving_fit.h); what the fit gives, applied and written out:
// serving_fit_apply.cpp.
#include "serve/serving_fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

namespace dayzero::serve {

namespace {

using simulate::TimeFigure;
constexpr size_t kF = simulate::kTimeFigures;
// The lowest figure a fit may give each kind of kernel: below it the fit would be
// absorbing what the model leaves out (queueing, host time) into a kernel rate that
// no kernel of the class is that slow at on these GPUs. Memory: streaming kernels reach
// 0.6-0.9 of HBM bandwidth (STREAM-like copies). Compute: BF16 kernels reach 0.35-0.75
// of the peak (FlashAttention-2 forward 0.35-0.73 of the A100's, Dao 2023, fig. 4;
// FlashAttention-3 0.6-0.75 on H100, Shah et al. 2024; cuBLAS GEMMs 0.6-0.8 on large
// shapes), but the measured serving runs' prompts are costed against FP8 and FP4 peaks
// (4.5 and 9-15 PFLOPS on B200 / B300) that the engines' MoE and attention kernels reach
// a far smaller share of: the extra TTFT of an 8,192-token prompt over a 1,024-token one
// (concurrency <= 16, docs/FIDELITY.md) is 1.5-2.8 times what the start figures (0.7 and
// 0.5) predict on B200 / B300 under vLLM and TensorRT-LLM, i.e. 0.2-0.45 of those peaks.
// A floor of 0.25 bound every fit (attention compute sat on it); at 0.10 none reaches it.
constexpr double kMinComputeEfficiency = 0.10;
constexpr double kMinMemoryEfficiency = 0.4;
constexpr double kMinCollectiveEfficiency = 0.05;
constexpr double kMaxKernelOverheadS = 1e-3;  // EfficiencyTable's bound
constexpr double kMaxHostOverheadS = 1.0;     // EngineOverheadTable's bound
constexpr double kErrorFloor = 0.02;          // IRLS: errors below 2 % weigh as 2 %

size_t fi(TimeFigure f) { return static_cast<size_t>(f); }

// The start value of the figure a scale multiplies the time of (1 for host transfers).
double start_value(const simulate::Efficiency& e, TimeFigure f) {
  switch (f) {
    case TimeFigure::gemm_compute: return e.gemm_compute;
    case TimeFigure::gemm_memory: return e.gemm_memory;
    case TimeFigure::attention_compute: return e.attention_compute;
    case TimeFigure::attention_memory: return e.attention_memory;
    case TimeFigure::elementwise_memory: return e.elementwise_memory;
    case TimeFigure::kernel_overhead: return e.kernel_overhead_s;
    case TimeFigure::communication: return e.collective_efficiency;
    case TimeFigure::host_transfer: return 1;
  }
  return 1;
}

// Bounds of m_f (serving_fit.h).
std::pair<double, double> scale_bounds(const simulate::Efficiency& e, TimeFigure f) {
  const double v = start_value(e, f);
  switch (f) {
    case TimeFigure::kernel_overhead: return {0.0, v > 0 ? kMaxKernelOverheadS / v : 0.0};
    case TimeFigure::host_transfer: return {1.0, 1.0};
    case TimeFigure::gemm_compute:
    case TimeFigure::attention_compute: return {v, v / kMinComputeEfficiency};
    case TimeFigure::gemm_memory:
    case TimeFigure::attention_memory:
    case TimeFigure::elementwise_memory: return {v, v / kMinMemoryEfficiency};
    case TimeFigure::communication: return {v, v / kMinCollectiveEfficiency};
  }
  return {1.0, 1.0};
}

// A least-squares problem 1/2 x'Ax - b'x over a box, by cyclic coordinate descent
// (exact minimization along each coordinate, clamped); a coordinate without data
// (A_ii = 0) keeps its start value.
struct BoxQp {
  explicit BoxQp(size_t n) : a(n, std::vector<double>(n, 0.0)), b(n, 0.0), lo(n), hi(n), x(n) {}
  void add(const std::vector<double>& row, double y, double w) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (row[i] == 0) continue;
      b[i] += w * row[i] * y;
      for (size_t j = 0; j < row.size(); ++j) a[i][j] += w * row[i] * row[j];
    }
  }
  void solve() {
    for (int sweep = 0; sweep < 5000; ++sweep) {
      double change = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!(a[i][i] > 0)) continue;
        double r = b[i];
        for (size_t j = 0; j < x.size(); ++j)
          if (j != i) r -= a[i][j] * x[j];
        const double v = std::clamp(r / a[i][i], lo[i], hi[i]);
        change = std::max(change, std::abs(v - x[i]) / std::max(std::abs(x[i]), 1e-9));
        x[i] = v;
      }
      if (change < 1e-12) break;
    }
  }
  std::vector<std::vector<double>> a;
  std::vector<double> b, lo, hi, x;
};

// The engine's unknowns after the figures' scales: s, q, q1, k.
constexpr size_t kEngineUnknowns = 4;
// The two equations of a row: coefficients of (m_0..m_{F-1}, s, q, q1, k) for TTFT and
// TPOT; `own_step_s`, the row's TPOT as currently fitted, is k's coefficient.
struct RowEquations {
  std::vector<double> ttft, tpot;
};
RowEquations equations(const FitRow& r, double own_step_s) {
  RowEquations e{std::vector<double>(kF + kEngineUnknowns, 0.0), std::vector<double>(kF + kEngineUnknowns, 0.0)};
  for (size_t f = 0; f < kF; ++f) {
    e.ttft[f] = r.ttft.figure_s[f];
    e.tpot[f] = r.tpot.figure_s[f];
  }
  e.ttft[kF] = r.overlap_scheduling ? 0 : r.ttft.steps;
  e.tpot[kF] = r.overlap_scheduling ? 0 : r.tpot.steps;
  e.ttft[kF + 1] = 1;
  e.ttft[kF + 2] = r.ttft.inflight;
  e.ttft[kF + 3] = own_step_s * r.ttft.admissions();
  return e;
}

double relative_error(double predicted, double measured) { return predicted / measured - 1; }

// What a pass fits: one latency, and the unknowns it may move (the rest held).
struct Pass {
  bool ttft = false;  // else TPOT
  std::array<bool, kF> figures{};
  bool step_overhead = false, request_overhead = false;
};
// TPOT first: one step per output token, measured precisely; it sets every figure a
// step's time shows and the step overhead.
Pass tpot_pass() {
  Pass p;
  p.figures.fill(true);
  p.figures[fi(TimeFigure::host_transfer)] = false;
  p.step_overhead = true;
  return p;
}
// Then TTFT, for what TPOT barely sees: the request overhead and prompt attention.
Pass ttft_pass() {
  Pass p;
  p.ttft = true;
  p.figures[fi(TimeFigure::attention_compute)] = true;
  p.request_overhead = true;
  return p;
}

// Step 1: shared scales, overheads per engine. Unknowns: F scales, then (s, q) per engine.
void fit_shared(const std::vector<FitRow>& rows, ServingFit& fit, const FitOptions& o, const Pass& pass) {
  std::map<Engine, size_t> engine_index;
  for (const auto& r : rows) engine_index.emplace(r.engine, 0);
  size_t n = kF;
  for (auto& [e, i] : engine_index) i = (n += kEngineUnknowns) - kEngineUnknowns;
  BoxQp qp(n);
  for (size_t f = 0; f < kF; ++f) {
    std::tie(qp.lo[f], qp.hi[f]) = scale_bounds(fit.start, simulate::kAllTimeFigures[f]);
    qp.x[f] = std::clamp(fit.shared[f], qp.lo[f], qp.hi[f]);
    if (!pass.figures[f]) qp.lo[f] = qp.hi[f] = qp.x[f];
  }
  for (const auto& [e, i] : engine_index) {
    const EngineOverheads& eo = fit.engines[e];
    qp.x[i] = eo.step_overhead_s;
    qp.x[i + 1] = eo.request_overhead_s;
    qp.x[i + 2] = eo.request_overhead_per_inflight_s;
    qp.lo[i] = pass.step_overhead ? 0 : qp.x[i];
    qp.hi[i] = pass.step_overhead ? kMaxHostOverheadS : qp.x[i];
    qp.lo[i + 1] = pass.request_overhead ? 0 : qp.x[i + 1];
    qp.hi[i + 1] = pass.request_overhead ? kMaxHostOverheadS : qp.x[i + 1];
    qp.lo[i + 2] = pass.request_overhead ? 0 : qp.x[i + 2];
    qp.hi[i + 2] = pass.request_overhead ? kMaxHostOverheadS : qp.x[i + 2];
    qp.x[i + 3] = eo.admission_delay_steps;
    qp.lo[i + 3] = pass.request_overhead ? 0 : qp.x[i + 3];
    qp.hi[i + 3] = pass.request_overhead ? kMaxAdmissionDelaySteps : qp.x[i + 3];
  }
  std::vector<double> w_ttft(rows.size(), 1.0), w_tpot(rows.size(), 1.0);
  const auto spread = [&](const std::vector<double>& eq, size_t base) {  // (s, q, q1, k) into the engine's columns
    std::vector<double> row(n, 0.0);
    std::copy(eq.begin(), eq.begin() + kF, row.begin());
    for (size_t k = 0; k < kEngineUnknowns; ++k) row[base + k] = eq[kF + k];
    return row;
  };
  for (int round = 0; round < o.rounds; ++round) {
    BoxQp step = qp;
    std::fill(step.b.begin(), step.b.end(), 0.0);
    for (auto& line : step.a) std::fill(line.begin(), line.end(), 0.0);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (pass.ttft && !rows[i].fit_ttft) continue;
      const RowEquations e = equations(rows[i], fit.tpot_s(rows[i]));
      const size_t base = engine_index.at(rows[i].engine);
      if (pass.ttft)
        step.add(spread(e.ttft, base), rows[i].ttft_s - rows[i].ttft.kv_transfer_s,
                 w_ttft[i] / (rows[i].ttft_s * rows[i].ttft_s));
      else step.add(spread(e.tpot, base), rows[i].tpot_s, w_tpot[i] / (rows[i].tpot_s * rows[i].tpot_s));
    }
    step.solve();
    qp.x = step.x;
    for (size_t f = 0; f < kF; ++f) fit.shared[f] = qp.x[f];
    for (const auto& [e, i] : engine_index) {
      fit.engines[e].step_overhead_s = qp.x[i];
      fit.engines[e].request_overhead_s = qp.x[i + 1];
      fit.engines[e].request_overhead_per_inflight_s = qp.x[i + 2];
      fit.engines[e].admission_delay_steps = qp.x[i + 3];
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      w_ttft[i] = 1 / std::max(std::abs(relative_error(fit.ttft_s(rows[i]), rows[i].ttft_s)), kErrorFloor);
      w_tpot[i] = 1 / std::max(std::abs(relative_error(fit.tpot_s(rows[i]), rows[i].tpot_s)), kErrorFloor);
    }
  }
}

// Steps 2 and 3: one set of scales for a group of rows (one device's, or one
// architecture's), from `m`, with the engines' overheads held.
FigureScales fit_group(const std::vector<const FitRow*>& rows, const ServingFit& fit, const FitOptions& o,
                       const Pass& pass, FigureScales m) {
  std::vector<double> w_ttft(rows.size(), 1.0), w_tpot(rows.size(), 1.0);
  ServingFit probe = fit;
  std::set<std::string> devices;
  for (const FitRow* r : rows) devices.insert(r->device);
  for (int round = 0; round < o.rounds; ++round) {
    BoxQp qp(kF);
    double mean_w = 0;
    size_t used = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const FitRow& r = *rows[i];
      if (pass.ttft && !r.fit_ttft) continue;
      ++used;
      const EngineOverheads& eo = fit.engines.at(r.engine);
      const RowEquations e = equations(r, probe.tpot_s(r));
      const std::vector<double> ttft(e.ttft.begin(), e.ttft.begin() + kF), tpot(e.tpot.begin(), e.tpot.begin() + kF);
      if (pass.ttft)
        qp.add(ttft,
               r.ttft_s - r.ttft.kv_transfer_s - eo.step_overhead_s * e.ttft[kF] - eo.request_overhead_s -
                   eo.request_overhead_per_inflight_s * r.ttft.inflight - eo.admission_delay_steps * e.ttft[kF + 3],
               w_ttft[i] / (r.ttft_s * r.ttft_s));
      else qp.add(tpot, r.tpot_s - eo.step_overhead_s * e.tpot[kF], w_tpot[i] / (r.tpot_s * r.tpot_s));
      mean_w += pass.ttft ? w_ttft[i] : w_tpot[i];
    }
    if (used > 0) mean_w /= static_cast<double>(used);
    // The pull toward the shared scales: prior_rows rows' worth of the pass's equation,
    // on the relative change of each scale that has data.
    for (size_t f = 0; f < kF; ++f) {
      std::tie(qp.lo[f], qp.hi[f]) = scale_bounds(fit.start, simulate::kAllTimeFigures[f]);
      qp.x[f] = std::clamp(m[f], qp.lo[f], qp.hi[f]);
      if (!pass.figures[f]) qp.lo[f] = qp.hi[f] = qp.x[f];
      const double g = fit.shared[f];
      if (!(qp.a[f][f] > 0) || !(g > 0)) continue;
      const double lambda = o.prior_rows * mean_w / (g * g);
      qp.a[f][f] += lambda;
      qp.b[f] += lambda * g;
    }
    qp.solve();
    std::copy(qp.x.begin(), qp.x.end(), m.begin());
    for (const std::string& device : devices) probe.devices[device] = m;
    for (size_t i = 0; i < rows.size(); ++i) {
      w_ttft[i] = 1 / std::max(std::abs(relative_error(probe.ttft_s(*rows[i]), rows[i]->ttft_s)), kErrorFloor);
      w_tpot[i] = 1 / std::max(std::abs(relative_error(probe.tpot_s(*rows[i]), rows[i]->tpot_s)), kErrorFloor);
    }
  }
  return m;
}

// Step 2b (serving_fit.h): each engine's request overheads (q, q1, k) again, now with
// every row at its own device's figures (step 2's), the figures and step overheads held.
void refit_request_overheads(const std::vector<FitRow>& rows, ServingFit& fit, const FitOptions& o) {
  std::map<Engine, std::vector<const FitRow*>> by_engine;
  for (const auto& r : rows)
    if (r.fit_ttft) by_engine[r.engine].push_back(&r);
  for (const auto& [e, list] : by_engine) {
    EngineOverheads& eo = fit.engines[e];
    std::vector<double> rest(list.size()), w(list.size(), 1.0);
    for (size_t i = 0; i < list.size(); ++i) {  // the row's TTFT without q, q1 and k
      const FitRow& r = *list[i];
      rest[i] = fit.ttft_s(r) - eo.request_overhead_s - eo.request_overhead_per_inflight_s * r.ttft.inflight -
                eo.admission_delay_steps * fit.tpot_s(r) * r.ttft.admissions();
    }
    for (int round = 0; round < o.rounds; ++round) {
      BoxQp qp(3);
      qp.x = {eo.request_overhead_s, eo.request_overhead_per_inflight_s, eo.admission_delay_steps};
      qp.lo = {0, 0, 0};
      qp.hi = {kMaxHostOverheadS, kMaxHostOverheadS, kMaxAdmissionDelaySteps};
      for (size_t i = 0; i < list.size(); ++i) {
        const FitRow& r = *list[i];
        qp.add({1.0, r.ttft.inflight, fit.tpot_s(r) * r.ttft.admissions()}, r.ttft_s - rest[i],
               w[i] / (r.ttft_s * r.ttft_s));
      }
      qp.solve();
      eo.request_overhead_s = qp.x[0];
      eo.request_overhead_per_inflight_s = qp.x[1];
      eo.admission_delay_steps = qp.x[2];
      for (size_t i = 0; i < list.size(); ++i)
        w[i] = 1 / std::max(std::abs(relative_error(fit.ttft_s(*list[i]), list[i]->ttft_s)), kErrorFloor);
    }
  }
}

}  // namespace

std::vector<FitRow> fit_rows(const std::vector<RowPrediction>& predictions) {
  std::vector<FitRow> rows;
  for (const auto& p : predictions) {
    if (!p.predicted || !(p.row->ttft_s > 0) || !(p.row->tpot_s > 0)) continue;
    const auto e = parse_engine(p.row->backend);
    if (!e) continue;
    // A disaggregated run's TTFT parts come from two pools' replicas and the transfer
    // between them (serve/latency_parts.h); its TPOT's, from the decode pool's steps alone.
    rows.push_back({p.device, p.row->model_path, *e, p.overlap_scheduling, p.ttft_parts, p.tpot_parts, p.row->ttft_s,
                    p.row->tpot_s, !p.row->disaggregated(), p.row->isl});
  }
  return rows;
}

std::map<std::string, topology::DeviceArchitecture> architectures_of(const topology::DeviceCatalog& catalog) {
  std::map<std::string, topology::DeviceArchitecture> out;
  for (const auto& d : catalog.devices())
    if (d.architecture) out[d.name] = *d.architecture;
  return out;
}

FitOptions fit_options_from(const topology::DeviceCatalog& catalog) {
  FitOptions o;
  o.architectures = architectures_of(catalog);
  for (const auto& d : catalog.devices())
    if (d.measured_copy && d.mem_bw_Bps > 0) o.measured_copy_fraction[d.name] = d.measured_copy->bw_Bps / d.mem_bw_Bps;
  for (const auto& d : catalog.devices())
    if (!d.vendor.empty()) o.vendors[d.name] = d.vendor;
  return o;
}

namespace {

// Step 4 (serving_fit.h), after step 3: a measured copy sets gemm_memory of a device
// without rows, from its own measurement or, where its architecture has no rows, from
// the mean of its architecture's measured devices.
void set_measured_priors(ServingFit& fit, const FitOptions& o) {
  std::map<topology::DeviceArchitecture, std::vector<double>> by_arch;
  for (const auto& [device, frac] : o.measured_copy_fraction)
    if (const auto a = o.architectures.find(device); a != o.architectures.end()) by_arch[a->second].push_back(frac);
  std::set<std::string> names;
  for (const auto& [device, arch] : o.architectures) names.insert(device);
  for (const auto& [device, frac] : o.measured_copy_fraction) names.insert(device);
  const size_t g = fi(TimeFigure::gemm_memory);
  const auto [lo, hi] = scale_bounds(fit.start, TimeFigure::gemm_memory);
  for (const std::string& device : names) {
    if (fit.devices.count(device)) continue;
    double frac = 0;
    const auto own = o.measured_copy_fraction.find(device);
    if (own != o.measured_copy_fraction.end()) {
      frac = own->second;
    } else if (const auto a = o.architectures.find(device);
               a != o.architectures.end() && !fit.architectures.count(a->second) && by_arch.count(a->second)) {
      const std::vector<double>& f = by_arch.at(a->second);
      frac = std::accumulate(f.begin(), f.end(), 0.0) / static_cast<double>(f.size());
    }
    if (!(frac > 0)) continue;
    ServingFit::MeasuredPrior prior{fit.scales_for(device), frac, own != o.measured_copy_fraction.end()};
    prior.scales[g] = std::clamp(fit.start.gemm_memory / frac, lo, hi);
    fit.measured_priors[device] = prior;
  }
}

// Step 5 (serving_fit.h): each engine's handoff time h from its disaggregated runs'
// TTFT, everything else as fitted: TTFT = (the row's fitted TTFT without it) + h, one
// unknown, minimizing the sum of |predicted / measured - 1| by the same reweighting.
void fit_handoffs(const std::vector<FitRow>& rows, ServingFit& fit, const FitOptions& o) {
  std::map<Engine, std::vector<const FitRow*>> by_engine;
  for (const auto& r : rows)
    if (!r.fit_ttft && r.ttft.handoffs > 0) by_engine[r.engine].push_back(&r);
  for (const auto& [e, list] : by_engine) {
    EngineOverheads& eo = fit.engines[e];
    eo.handoff_s = 0;
    std::vector<double> base(list.size()), w(list.size(), 1.0);
    for (size_t i = 0; i < list.size(); ++i) base[i] = fit.ttft_s(*list[i]);
    for (int round = 0; round < o.rounds; ++round) {
      double num = 0, den = 0;  // d/dh of sum w (base + h n - y)^2 / y^2 = 0
      for (size_t i = 0; i < list.size(); ++i) {
        const FitRow& r = *list[i];
        const double k = w[i] / (r.ttft_s * r.ttft_s);
        num += k * r.ttft.handoffs * (r.ttft_s - base[i]);
        den += k * r.ttft.handoffs * r.ttft.handoffs;
      }
      eo.handoff_s = den > 0 ? std::clamp(num / den, 0.0, kMaxHostOverheadS) : 0;
      for (size_t i = 0; i < list.size(); ++i) {
        const double predicted = base[i] + eo.handoff_s * list[i]->ttft.handoffs;
        w[i] = 1 / std::max(std::abs(relative_error(predicted, list[i]->ttft_s)), kErrorFloor);
      }
    }
  }
  // An engine without disaggregated runs takes the mean of the measured engines' times
  // (as a device without runs takes its architecture's figures): the router, the KV
  // connector's setup and notification are the same kind of work in every engine, and
  // 0 would say a handoff is free.
  if (by_engine.empty()) return;
  double sum_s = 0;
  for (const auto& [e, list] : by_engine) sum_s += fit.engines[e].handoff_s;
  const double mean_s = sum_s / static_cast<double>(by_engine.size());
  for (auto& [e, eo] : fit.engines)
    if (!by_engine.count(e)) eo.handoff_s = mean_s;
}

}  // namespace

ServingFit fit_serving(const std::vector<FitRow>& rows, const simulate::Efficiency& start, const FitOptions& o) {
  std::vector<FitRow> usable;
  for (const auto& r : rows)
    if (r.ttft_s > 0 && r.tpot_s > 0 && std::isfinite(r.ttft_s) && std::isfinite(r.tpot_s)) usable.push_back(r);
  if (usable.empty()) throw std::invalid_argument("no measured run with a positive TTFT and TPOT to fit");
  ServingFit fit;
  fit.start = start;
  fit.shared.fill(1.0);
  for (const Pass& pass : {tpot_pass(), ttft_pass()}) fit_shared(usable, fit, o, pass);
  std::map<std::string, std::vector<const FitRow*>> by_device;
  for (const auto& r : usable) by_device[r.device].push_back(&r);
  for (const auto& r : usable) {
    EngineOverheads& eo = fit.engines[r.engine];
    ++eo.rows;
    if (r.fit_ttft) eo.longest_prompt_tokens = std::max(eo.longest_prompt_tokens, r.prompt_tokens);
  }
  for (const auto& [device, list] : by_device) {
    for (const Pass& pass : {tpot_pass(), ttft_pass()})
      fit.devices[device] = fit_group(list, fit, o, pass, fit.scales_for(device));
    fit.device_rows[device] = static_cast<int64_t>(list.size());
  }
  refit_request_overheads(usable, fit, o);
  // Step 3, after step 2 so that a measured device's own fit does not depend on it.
  std::map<topology::DeviceArchitecture, std::vector<const FitRow*>> by_arch;
  for (const auto& [device, list] : by_device)
    if (const auto a = o.architectures.find(device); a != o.architectures.end())
      by_arch[a->second].insert(by_arch[a->second].end(), list.begin(), list.end());
  for (const auto& [arch, list] : by_arch) {
    ArchitectureFit a;
    a.scales = fit.shared;
    for (const Pass& pass : {tpot_pass(), ttft_pass()}) a.scales = fit_group(list, fit, o, pass, a.scales);
    for (const FitRow* r : list) ++a.device_rows[r->device];
    fit.architectures[arch] = a;
  }
  fit.device_architecture = o.architectures;
  fit.device_vendor = o.vendors;
  set_measured_priors(fit, o);
  fit_handoffs(usable, fit, o);
  return fit;
}

}  // namespace dayzero::serve
