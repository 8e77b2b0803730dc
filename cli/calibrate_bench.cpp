#include "cli/calibrate_bench.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "cli/format.h"
#include "core/data_dir.h"
#include "serve/bench_predict.h"
#include "serve/calibration_files.h"
#include "serve/serving_fit.h"
#include "serve/stats.h"

namespace dayzero::cli {

namespace {

// The 10th and 90th percentile of predicted / measured - 1 per engine.
std::map<serve::Engine, std::pair<serve::ErrorBand, serve::ErrorBand>> bands(
    const std::vector<serve::RowPrediction>& preds) {
  std::map<serve::Engine, std::pair<std::vector<double>, std::vector<double>>> errors;
  for (const auto& p : preds) {
    const auto e = serve::parse_engine(p.row->backend);
    if (!p.predicted || !e || p.row->disaggregated()) continue;  // the band of the fitted (aggregated) runs
    errors[*e].first.push_back(p.ttft_error_pct() / 100);
    errors[*e].second.push_back(p.tpot_error_pct() / 100);
  }
  std::map<serve::Engine, std::pair<serve::ErrorBand, serve::ErrorBand>> out;
  const auto band = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)]; };
    return serve::ErrorBand{at(0.1), at(0.9)};
  };
  for (auto& [e, v] : errors) out[e] = {band(v.first), band(v.second)};
  return out;
}

void print_figures(std::ostream& out, const serve::ServingFit& fit) {
  out << "  " << pad_right("device", 12) << pad_left("rows", 6) << pad_left("gemm c", 8) << pad_left("gemm m", 8)
      << pad_left("attn c", 8) << pad_left("attn m", 8) << pad_left("elem", 8) << pad_left("kernel us", 11)
      << pad_left("links", 8) << '\n';
  const auto line = [&](const std::string& name, int64_t rows, const serve::FigureScales& m) {
    const simulate::Efficiency e = fit.efficiency(m);
    out << "  " << pad_right(name, 12) << pad_left(rows ? std::to_string(rows) : "-", 6)
        << pad_left(fixed(e.gemm_compute, 3), 8) << pad_left(fixed(e.gemm_memory, 3), 8)
        << pad_left(fixed(e.attention_compute, 3), 8) << pad_left(fixed(e.attention_memory, 3), 8)
        << pad_left(fixed(e.elementwise_memory, 3), 8) << pad_left(fixed(e.kernel_overhead_s * 1e6, 2), 11)
        << pad_left(fixed(e.collective_efficiency, 3), 8) << '\n';
  };
  line("start", 0, serve::FigureScales{1, 1, 1, 1, 1, 1, 1, 1});
  line("shared", 0, fit.shared);
  for (const auto& [d, m] : fit.devices) line(d, fit.device_rows.at(d), m);
}

}  // namespace

void run_calibrate_bench(const std::string& file, const serve::BenchDefaults& defaults, const std::string& out_dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(out_dir)) throw std::runtime_error(out_dir + ": --out must be an existing directory");
  const std::vector<serve::BenchRow> rows = serve::read_bench_file(file, defaults);
  serve::BenchOptions start;
  start.data_dir = core::data_dir();
  start.efficiency = simulate::EfficiencyTable{};  // every device at simulate::Efficiency's sourced figures
  const auto before = serve::predict_bench(rows, start);
  const std::vector<serve::FitRow> fit_rows = serve::fit_rows(before);
  serve::ServingFit fit;
  try {
    // A device without runs takes the figures of its architecture's, and its measured copy rate (serving_fit.h).
    const serve::FitOptions fo = serve::fit_options_from(topology::DeviceCatalog::load_builtin(start.data_dir));
    fit = serve::fit_serving(fit_rows, simulate::Efficiency{}, fo);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(file + ": " + e.what());
  }
  std::ostringstream src;
  src << "dayzero calibrate --bench " << fs::path(file).filename().string() << ", " << today_utc() << ": fitted to "
      << fit_rows.size() << " measured serving runs (serve/serving_fit.h) from simulate::Efficiency's sourced figures;"
      << " out-of-sample accuracy in docs/FIDELITY.md.";
  // The shipped table keeps the devices the runs do not name (their figures are sourced
  // apart) unless a device of their architecture was measured.
  serve::BenchOptions fitted = start;
  fitted.efficiency = fit.table(simulate::EfficiencyTable::load_builtin(start.data_dir), src.str());
  fitted.engines = fit.overheads(src.str());
  const auto after = serve::predict_bench(rows, fitted);
  serve::EngineOverheadTable overheads;
  for (const auto& [e, b] : bands(after)) {
    serve::EngineOverheads o = fitted.engines.for_engine(e);
    o.ttft_band = b.first;
    o.tpot_band = b.second;
    overheads.set(e, o);
  }
  fitted.efficiency.save(
      fs::path(out_dir) / serve::kEfficiencyFile,
      "Share of a device's datasheet peak each kind of op reaches in DayZero's time model. `default` "
      "applies to every device without its own entry; each entry says where its figures come from.");
  overheads.save(fs::path(out_dir) / serve::kEngineOverheadsFile,
                 "Host time per engine step and per request that the serving simulation adds to the step model, "
                 "with the band of relative errors (predicted / measured - 1, 10th and 90th percentile) on the "
                 "runs they were fitted to.");

  std::ostringstream out;
  out << "Calibration from " << file << ": " << fit_rows.size() << " of " << rows.size()
      << " runs predicted and fitted\n\n";
  print_figures(out, fit);
  out << '\n';
  for (const auto& e : serve::kAllEngines) {
    const serve::EngineOverheads o = overheads.for_engine(e);
    if (o.rows == 0) continue;
    out << "  " << pad_right(std::string(serve::engine_name(e)), 8) << " step " << fixed(o.step_overhead_s * 1e3, 3)
        << " ms, request " << fixed(o.request_overhead_s * 1e3, 1) << " ms + "
        << fixed(o.request_overhead_per_inflight_s * 1e3, 2) << " ms per request in flight, admission after "
        << fixed(o.admission_delay_steps, 1) << " steps, disaggregated handoff " << fixed(o.handoff_s * 1e3, 1)
        << " ms (" << o.rows << " runs); TTFT error band " << fixed(100 * o.ttft_band.p10, 0) << "% .. "
        << fixed(100 * o.ttft_band.p90, 0) << "%, TPOT " << fixed(100 * o.tpot_band.p10, 0) << "% .. "
        << fixed(100 * o.tpot_band.p90, 0) << "%\n";
  }
  const auto b = serve::summarize(before), a = serve::summarize(after);
  if (a.count("mode:agg") && b.count("mode:agg")) {
    const auto &bb = b.at("mode:agg"), &aa = a.at("mode:agg");
    out << "\n  in sample (aggregated runs), median |error|: TTFT " << fixed(bb.ttft_median, 1) << "% -> "
        << fixed(aa.ttft_median, 1) << "%, TPOT " << fixed(bb.tpot_median, 1) << "% -> " << fixed(aa.tpot_median, 1)
        << "% (out of sample: bench/bench_fidelity)\n";
  }
  out << "calibration written to " << (fs::path(out_dir) / serve::kEfficiencyFile).string() << " and "
      << (fs::path(out_dir) / serve::kEngineOverheadsFile).string() << '\n';
  std::cout << out.str() << std::flush;
}

}  // namespace dayzero::cli
