// dayzero validate MEASUREMENTS.json [--device cpu-host] [--calibration FILE] [--ops] [--json]:
// the run's measured ops against the simulator's prediction of them on a catalog
// device (simulate/validation.h): per phase and op kind, and end to end.
// dayzero validate --bench FILE [--system S --model ID --tp N ...]: measured serving
// runs against the serving simulation (cli/validate_bench.h).
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <tuple>

#include "cli/closed_loop.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/run_prediction_report.h"
#include "cli/validate_bench.h"
#include "serve/bench_results.h"
#include "simulate/validation.h"

namespace dayzero::cli {

namespace {

struct ValidateOptions {
  std::string measurements, bench, device, catalog, calibration;
  bool ops = false, json = false;
  // --bench: what a vLLM or SGLang result file does not say (0 / not given: the file's or the default).
  serve::BenchDefaults bench_defaults;
  int64_t tp = 0, pp = 0, dp = 0, ep = 0, moe_tp = 0;
  std::string quant, moe_quant;
};

// Seconds as microseconds: two decimals below 100 us, else one.
std::string us_auto(double s) { return fixed(s * 1e6, s < 1e-4 ? 2 : 1); }

std::string shape(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

nlohmann::json phase_json(const simulate::PhaseValidation& p) {
  return {{"measured", p.measured},
          {"steps", p.steps},
          {"rank", p.rank},
          {"measured_s", p.measured_s},
          {"measured_ops_s", p.measured_ops_s},
          {"predicted_s", p.predicted_s},
          {"error_pct", finite_or_null(p.error_pct)}};
}

nlohmann::json report_json(const simulate::ValidationReport& r, const LoopInputs& in) {
  nlohmann::json groups = nlohmann::json::array(), ops = nlohmann::json::array();
  for (const auto& g : r.groups)
    groups.push_back({{"phase", g.phase},
                      {"kind", g.kind},
                      {"ops", g.ops},
                      {"calls", g.calls},
                      {"measured_s", g.measured_s},
                      {"predicted_s", g.predicted_s},
                      {"error_pct", finite_or_null(g.error_pct)}});
  for (const auto& o : r.ops)
    ops.push_back({{"rank", o.rank},
                   {"phase", o.phase},
                   {"name", o.name},
                   {"kind", o.kind},
                   {"variant", o.variant},
                   {"shape", o.shape},
                   {"calls", o.calls},
                   {"bound", o.bound},
                   {"measured_s", o.measured_s},
                   {"predicted_s", o.predicted_s},
                   {"error_pct", finite_or_null(o.error_pct)}});
  nlohmann::json efficiency = simulate::efficiency_to_json(r.efficiency);
  efficiency["file"] = in.figures.table_file.string();
  efficiency["source"] = in.figures.efficiency_source;
  return {{"measurements", in.run.file.string()},
          {"device", r.device},
          {"compute_dtype", topology::compute_dtype_name(r.compute_dtype)},
          {"fp8_block_gemm", in.run.measurements.fp8_block_gemm == plan::Fp8BlockGemm::w8a8 ? "w8a8" : "bf16"},
          {"efficiency", efficiency},
          {"groups", groups},
          {"prefill", phase_json(r.prefill)},
          {"decode", phase_json(r.decode)},
          {"collectives_s", r.collectives_s},
          {"ops", ops}};
}

void print_report(std::ostream& out, const simulate::ValidationReport& r, const LoopInputs& in, bool per_op) {
  const auto& e = r.efficiency;
  out << "Predicted against measured: " << in.run.file.string() << "\n  run: " << describe_run(in.run.measurements)
      << "\n  device " << r.device << " (" << topology::compute_dtype_name(r.compute_dtype) << "), figures from "
      << in.figures.table_file.string() << ": GEMM " << fixed(e.gemm_compute, 3) << " compute / "
      << fixed(e.gemm_memory, 3) << " memory, attention " << fixed(e.attention_compute, 3) << " / "
      << fixed(e.attention_memory, 3) << ", element-wise " << fixed(e.elementwise_memory, 3) << ", "
      << fixed(e.kernel_overhead_s * 1e6, 3) << " us per call, tile rows " << e.tile_rows << "\n\n";
  out << "Per phase and op kind, all ranks (measured = min_s x calls; us = 1e-6 s; error = (predicted - measured) / "
         "measured)\n";
  out << "  " << pad_right("phase", 9) << pad_right("kind", 13) << pad_left("ops", 5) << pad_left("calls", 8)
      << pad_left("measured us", 14) << pad_left("predicted us", 14) << pad_left("error %", 10) << '\n';
  for (const auto& g : r.groups)
    out << "  " << pad_right(g.phase, 9) << pad_right(g.kind, 13) << pad_left(std::to_string(g.ops), 5)
        << pad_left(std::to_string(g.calls), 8) << pad_left(us_auto(g.measured_s), 14)
        << pad_left(us_auto(g.predicted_s), 14) << pad_left(signed_pct(g.error_pct), 10) << '\n';
  out << "\nEnd to end, one step of the slowest rank by prediction (predicted = the sum of its ops' predictions;\n"
         "measured step = the run's step time, which also holds what no op timing covers; collectives are not\n"
         "predicted: measured "
      << us_auto(r.collectives_s) << " us on the busiest rank)\n";
  out << "  " << pad_right("phase", 20) << pad_left("rank", 5) << pad_left("measured step us", 18)
      << pad_left("measured ops us", 17) << pad_left("predicted us", 14) << pad_left("error %", 10) << '\n';
  for (const auto* p : {&r.prefill, &r.decode}) {
    const std::string label = p->phase == "decode" ? "decode (per step)" : p->phase;
    if (!p->measured) {
      out << "  " << pad_right(label, 20) << "  not run\n";
      continue;
    }
    out << "  " << pad_right(label, 20) << pad_left(std::to_string(p->rank), 5) << pad_left(us_auto(p->measured_s), 18)
        << pad_left(us_auto(p->measured_ops_s), 17) << pad_left(us_auto(p->predicted_s), 14)
        << pad_left(signed_pct(p->error_pct), 10) << '\n';
  }
  if (!per_op) {
    out << "\n(--ops lists every op)\n";
    return;
  }
  out << "\nPer op (one call; us = 1e-6 s)\n";
  out << "  " << pad_left("rank", 4) << "  " << pad_right("phase", 8) << pad_right("op", 26) << pad_right("kind", 12)
      << pad_right("shape", 14) << pad_left("calls", 6) << pad_left("bound", 9) << pad_left("measured us", 13)
      << pad_left("predicted us", 14) << pad_left("error %", 10) << '\n';
  for (const auto& o : r.ops)
    out << "  " << pad_left(std::to_string(o.rank), 4) << "  " << pad_right(o.phase, 8) << pad_right(o.name, 26)
        << pad_right(o.kind, 12) << pad_right(shape(o.shape), 14) << pad_left(std::to_string(o.calls), 6)
        << pad_left(o.bound, 9) << pad_left(fixed(o.measured_s * 1e6, 3), 13)
        << pad_left(fixed(o.predicted_s * 1e6, 3), 14) << pad_left(signed_pct(o.error_pct), 10) << '\n';
}

void run_validate(const ValidateOptions& o) {
  if (!o.bench.empty()) return run_validate_bench(o.bench, o.bench_defaults, o.calibration, o.json, o.ops);
  if (o.measurements.empty()) throw std::runtime_error("validate needs a Measurements file or --bench FILE");
  const LoopInputs in = load_loop_inputs(o.measurements, o.device, o.catalog, o.calibration);
  const simulate::RunValidation v = simulate::validate_measured_run(in.run, in.figures);
  std::ostringstream out;
  if (o.json) {
    nlohmann::json j = report_json(v.report, in);
    j["run_prediction"] = run_prediction_json(v, in);
    out << j.dump(2) << '\n';
  } else {
    print_report(out, v.report, in, o.ops);
    print_run_prediction(out, v, in);
  }
  std::cout << out.str() << std::flush;
}

// The layout flags of `validate --bench`, used for runs whose result file lacks them
// (serve/bench_results.h; keys and flags: scenarios/fidelity/README.md).
void add_bench_options(CLI::App* cmd, ValidateOptions& o, CLI::Option* bench) {
  serve::BenchDefaults& d = o.bench_defaults;
  cmd->add_option("--system", d.system,
                  "With --bench: the GPU system of runs that do not say (h100_sxm, h200_sxm, "
                  "b200_sxm, ...: scenarios/fidelity/systems.json)")
      ->needs(bench);
  cmd->add_option("--model", d.model_path, "With --bench: the Hugging Face id of runs that do not say")->needs(bench);
  cmd->add_option("--engine", d.engine,
                  "With --bench: the engine behind an OpenAI-compatible endpoint type (default: vllm)")
      ->check(CLI::IsMember({"vllm", "sglang", "trtllm"}))
      ->needs(bench);
  for (auto [flag, v, what] : {std::tuple{"--tp", &o.tp, "tensor-parallel size"},
                               {"--pp", &o.pp, "pipeline-parallel size (default 1)"},
                               {"--dp", &o.dp, "attention data-parallel size (default 1)"},
                               {"--ep", &o.ep, "expert-parallel size (default 1)"},
                               {"--moe-tp", &o.moe_tp, "expert tensor-parallel size (default: tp x dp / ep)"}})
    cmd->add_option(flag, *v, std::string("With --bench: the ") + what + " of runs that do not say")
        ->check(CLI::PositiveNumber)
        ->needs(bench);
  cmd->add_option("--quant", o.quant,
                  "With --bench: the GEMM (and expert) quantization of runs that do not say: bf16, fp8, fp8_block, "
                  "nvfp4, int4_wo (default bf16)")
      ->needs(bench);
  cmd->add_option("--moe-quant", o.moe_quant, "With --bench: the expert quantization (default: --quant's)")
      ->needs(bench);
}

// Flags given on the command line, as BenchDefaults (a flag not given leaves the default).
void finish_bench_defaults(const CLI::App* cmd, ValidateOptions& o) {
  serve::BenchDefaults& d = o.bench_defaults;
  const auto given = [](int64_t v) { return v > 0 ? std::optional<int64_t>(v) : std::nullopt; };
  d.tp = given(o.tp);
  d.pp = given(o.pp);
  d.attention_dp = given(o.dp);
  d.moe_ep = given(o.ep);
  d.moe_tp = given(o.moe_tp);
  if (cmd->count("--quant")) d.gemm_quant = o.quant;
  if (cmd->count("--moe-quant")) d.moe_quant = o.moe_quant;
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate",
                                     "A run's measured ops against the simulator's prediction of them: "
                                     "per phase and op kind, and end to end");
  auto* measurements =
      cmd->add_option("measurements", opts->measurements, "Measurements JSON written by `dayzero run`");
  auto* bench =
      cmd->add_option("--bench", opts->bench,
                      "Measured serving runs: a CSV in the format of scenarios/fidelity/serving-measured.csv, a "
                      "`vllm bench serve --save-result` JSON or an `sglang.bench_serving --output-file` JSONL; each "
                      "run predicted by the serving simulation, with its error, and summarized per model, GPU and "
                      "engine")
          ->excludes(measurements);
  add_bench_options(cmd, *opts, bench);
  cmd->add_option("--device", opts->device,
                  "Catalog device to predict on (default: cpu-host for a CPU run; a GPU run must name it)");
  cmd->add_option("--calibration", opts->calibration,
                  "Efficiency table from `dayzero calibrate` (default: scenarios/devices/efficiency.json)");
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file (adds or replaces devices)");
  cmd->add_flag("--ops", opts->ops, "List every op too (with --bench: every run, as files of up to 20 runs do)");
  cmd->add_flag("--json", opts->json, "Print the report as one JSON object");
  cmd->callback([opts, cmd] {
    finish_bench_defaults(cmd, *opts);
    run_validate(*opts);
  });
}

}  // namespace dayzero::cli
