// dayzero calibrate MEASUREMENTS.json [--device cpu-host] --out calibration.json:
// fits the device's efficiency figures to a run's measured ops (simulate/calibration.h)
// and writes them as an efficiency table that `validate --calibration` loads.
// dayzero calibrate --bench FILE --out DIR: measured serving runs (cli/calibrate_bench.h).
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/calibrate_bench.h"
#include "cli/closed_loop.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "simulate/calibration.h"

namespace dayzero::cli {

namespace {

struct CalibrateOptions {
  std::string measurements, bench, device, catalog, out;
};

std::string figure(const std::string& name, double v) {
  return name == "kernel_overhead_s" ? fixed(v * 1e6, 3) + " us" : fixed(v, 4);
}

void run_calibrate(const CalibrateOptions& o) {
  if (!o.bench.empty()) return run_calibrate_bench(o.bench, {}, o.out);
  if (o.measurements.empty()) throw std::runtime_error("calibrate needs a Measurements file or --bench FILE");
  const LoopInputs in = load_loop_inputs(o.measurements, o.device, o.catalog, "");
  simulate::Calibration c;
  try {
    c = simulate::fit_calibration(in.run.measurements, in.figures.device, in.figures.efficiency);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(o.measurements + ": " + e.what());
  }
  const auto& m = in.run.measurements;
  std::ostringstream src;
  src << "dayzero calibrate, " << today_utc() << ", from " << o.measurements << " (" << describe_run(m);
  if (!m.machine.hostname.empty()) src << ", host " << m.machine.hostname;
  src << "): the fit of simulate/calibration.h over " << c.ops
      << " measured ops, starting from: " << in.figures.efficiency_source;
  simulate::save_calibration(o.out, c, src.str(), in.figures.table.default_efficiency(),
                             in.figures.table.default_source());

  std::ostringstream out;
  out << "Calibration of " << in.figures.device.name << " from " << o.measurements << "\n  run: " << describe_run(m)
      << "\n  " << c.ops << " ops, " << c.rounds << " round(s) of grouping by bound\n\n";
  out << "  " << pad_right("figure", 20) << pad_left("start", 12) << pad_left("fitted", 12) << pad_left("ops", 6)
      << pad_left("ideal us", 14) << pad_left("measured us", 14) << "  note\n";
  for (const auto& f : c.figures) {
    const bool overhead = f.name == "kernel_overhead_s";
    out << "  " << pad_right(f.name, 20) << pad_left(figure(f.name, f.start), 12)
        << pad_left(figure(f.name, f.value), 12) << pad_left(std::to_string(f.ops), 6)
        << pad_left(overhead || f.ops == 0 ? "-" : fixed(f.ideal_s * 1e6, 2), 14)
        << pad_left(overhead || f.ops == 0 ? "-" : fixed(f.measured_s * 1e6, 2), 14) << "  "
        << (f.ops == 0  ? "no op of this group: kept"
            : f.clamped ? "clamped to the allowed range"
                        : "")
        << '\n';
  }
  out << "\n  (ideal us: the group's time at the device's peak; measured us: its measured time less the fitted\n"
         "  overhead per call; fitted = ideal / measured. Times are min_s x calls, us = 1e-6 s.)\n";
  out << "calibration written to " << o.out << "\n";
  std::cout << out.str() << std::flush;
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto opts = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand("calibrate",
                                     "Fit a device's efficiency figures to a run's measured ops, or every "
                                     "device's figures and every engine's overheads to measured serving runs");
  auto* measurements =
      cmd->add_option("measurements", opts->measurements, "Measurements JSON written by `dayzero run`");
  cmd->add_option("--bench", opts->bench,
                  "Measured serving runs (the aiconfigurator CSV, vLLM or SGLang result files): fit every device's "
                  "figures and every engine's overheads to them; --out is then a directory")
      ->excludes(measurements);
  cmd->add_option("--device", opts->device,
                  "Catalog device the run ran on (default: cpu-host for a CPU run; a GPU run must name it)");
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file (adds or replaces devices)");
  cmd->add_option("--out", opts->out,
                  "Calibration JSON to write (efficiency.json format); with --bench, the directory for "
                  "efficiency.json and engine-overheads.json")
      ->required();
  cmd->callback([opts] { run_calibrate(*opts); });
}

}  // namespace dayzero::cli
