// A serving fit applied (serving_fit.h): each device's scales, a row's fitted TTFT and
// TPOT, the efficiency figures and the engines' overheads as the shipped tables hold them.
#include <cstdio>
#include <set>
#include <string>

#include "serve/serving_fit.h"

namespace dayzero::serve {

const FigureScales& ServingFit::scales_for(const std::string& device) const {
  if (const auto it = devices.find(device); it != devices.end()) return it->second;
  if (const auto it = measured_priors.find(device); it != measured_priors.end()) return it->second.scales;
  if (const auto a = device_architecture.find(device); a != device_architecture.end())
    if (const auto f = architectures.find(a->second); f != architectures.end()) return f->second.scales;
  return shared;
}

double ServingFit::ttft_s(const FitRow& r) const {
  const FigureScales& m = scales_for(r.device);
  const auto eo = engines.find(r.engine);
  double t = r.ttft.kv_transfer_s;
  for (size_t f = 0; f < simulate::kTimeFigures; ++f) t += m[f] * r.ttft.figure_s[f];
  if (eo != engines.end())
    t += eo->second.step_overhead_s * (r.overlap_scheduling ? 0 : r.ttft.steps) + eo->second.request_overhead_s +
         eo->second.request_overhead_per_inflight_s * r.ttft.inflight +
         eo->second.admission_delay_steps * tpot_s(r) * r.ttft.admissions() + eo->second.handoff_s * r.ttft.handoffs;
  return t;
}

double ServingFit::tpot_s(const FitRow& r) const {
  const FigureScales& m = scales_for(r.device);
  const auto eo = engines.find(r.engine);
  double t = 0;
  for (size_t f = 0; f < simulate::kTimeFigures; ++f) t += m[f] * r.tpot.figure_s[f];
  if (eo != engines.end()) t += eo->second.step_overhead_s * (r.overlap_scheduling ? 0 : r.tpot.steps);
  return t;
}

simulate::Efficiency ServingFit::efficiency(const FigureScales& m) const {
  using simulate::TimeFigure;
  const auto scale = [&m](TimeFigure f) { return m[static_cast<size_t>(f)]; };
  simulate::Efficiency e = start;
  e.gemm_compute = start.gemm_compute / scale(TimeFigure::gemm_compute);
  e.gemm_memory = start.gemm_memory / scale(TimeFigure::gemm_memory);
  e.attention_compute = start.attention_compute / scale(TimeFigure::attention_compute);
  e.attention_memory = start.attention_memory / scale(TimeFigure::attention_memory);
  e.elementwise_memory = start.elementwise_memory / scale(TimeFigure::elementwise_memory);
  e.kernel_overhead_s = start.kernel_overhead_s * scale(TimeFigure::kernel_overhead);
  e.collective_efficiency = start.collective_efficiency / scale(TimeFigure::communication);
  return e;
}

namespace {

// Where the figures of a device without runs come from, in words (ServingFit::table).
std::string fit_prior_words(const ServingFit& fit, const std::string& device) {
  const auto a = fit.device_architecture.find(device);
  const auto f = a == fit.device_architecture.end() ? fit.architectures.end() : fit.architectures.find(a->second);
  if (f == fit.architectures.end()) return "the shared figures";
  std::string from;
  for (const auto& [d, n] : f->second.device_rows)
    from += (from.empty() ? "" : ", ") + d + " " + std::to_string(n) + " runs";
  return "the figures fitted to the " + std::string(topology::architecture_name(a->second)) + " devices' runs (" +
         from + ")";
}

}  // namespace

simulate::EfficiencyTable ServingFit::table(simulate::EfficiencyTable base, const std::string& source) const {
  base.set_default(efficiency(shared), source + " Shared by every device (the default for one without measured runs).");
  for (const auto& [device, m] : devices)
    base.set_device(device, efficiency(m),
                    source + " " + device + ": " + std::to_string(device_rows.at(device)) + " measured runs.");
  for (const auto& [device, arch] : device_architecture) {
    if (devices.count(device) || measured_priors.count(device) || !architectures.count(arch)) continue;
    base.set_device(device, efficiency(architectures.at(arch).scales),
                    source + " " + device + ": no measured runs; " + fit_prior_words(*this, device) + ".");
  }
  // A GPU of an architecture no run measured takes the shared figures, as a held-out
  // GPU does in bench_fidelity (its own entry held start figures no serving run had
  // corrected), where a device of its vendor was measured; its GEMM tile height is the
  // hardware's and stays.
  std::set<std::string> measured_vendors;
  for (const auto& [device, m] : devices)
    if (const auto v = device_vendor.find(device); v != device_vendor.end()) measured_vendors.insert(v->second);
  for (const auto& [device, arch] : device_architecture) {
    if (devices.count(device) || measured_priors.count(device) || architectures.count(arch)) continue;
    const auto v = device_vendor.find(device);
    if (v == device_vendor.end() || !measured_vendors.count(v->second)) continue;
    simulate::Efficiency e = efficiency(shared);
    e.tile_rows = base.for_device(device).tile_rows;
    base.set_device(device, e,
                    source + " " + device + ": no measured runs, nor of its architecture (" +
                        std::string(topology::architecture_name(arch)) + "); the shared figures.");
  }
  for (const auto& [device, prior] : measured_priors) {
    char frac[32];
    std::snprintf(frac, sizeof frac, "%.3f", prior.copy_fraction);
    base.set_device(device, efficiency(prior.scales),
                    source + " " + device + ": no measured runs; " + fit_prior_words(*this, device) +
                        ", with gemm_memory " + frac + ", the copy bandwidth measured on " +
                        (prior.own ? "this device" : "its architecture's devices") +
                        " over mem_bw_Bps (catalog measured_copy).");
  }
  return base;
}

EngineOverheadTable ServingFit::overheads(const std::string& source) const {
  EngineOverheadTable t;
  for (auto [e, o] : engines) {
    o.source = source;
    t.set(e, o);
  }
  return t;
}

}  // namespace dayzero::serve
