#include "cli/run_prediction_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "topology/cluster.h"

namespace dayzero::cli {

namespace {
namespace fs = std::filesystem;

std::optional<fs::path> find_model(const LoopInputs& in) {
  if (auto found = simulate::find_run_model(in.measurements, in.measurements_file)) return found;
  try {
    const fs::path bundled = resolve_model_path(in.measurements.model);  // a bundled model's name
    if (fs::exists(bundled)) return bundled;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string pct(double p) {
  if (!std::isfinite(p)) return "-";
  return p > 0 ? std::string(1, '+').append(fixed(p, 1)) : fixed(p, 1);
}
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

RunPredictionResult predict_whole_run(const LoopInputs& in) {
  RunPredictionResult r;
  const auto config = find_model(in);
  if (!config) {
    r.skipped = std::string("the run's model config '").append(in.measurements.model).append("' was not found");
    return r;
  }
  const model::Model m = model::load_model(*config);
  const topology::Cluster cluster = simulate::one_node_cluster(in.device, in.measurements.world_size);
  r.prediction = simulate::predict_run(in.measurements, m, cluster, in.efficiency);
  return r;
}

void print_run_prediction(std::ostream& out, const RunPredictionResult& r, const LoopInputs& in) {
  out << "\nWhole run, as the simulator predicts it (the run's plan and workload on " << in.measurements.world_size
      << " x " << in.device.name << " in one node: collectives, pipeline, overheads included)\n";
  if (!r.prediction) {
    out << "  not predicted: " << r.skipped << '\n';
    return;
  }
  const auto& p = *r.prediction;
  const auto& w = p.plan.workload;
  out << "  workload: " << w.batch << " sequences of " << w.input_len << " prompt tokens (mean), "
      << w.output_len - 1 << " decode steps\n";
  std::string prefill = "prefill (";
  prefill += std::to_string(p.prompts_per_replica);
  prefill += " x TTFT per replica)";
  const size_t w1 = std::max<size_t>(prefill.size(), 20) + 2;
  out << "  " << pad_right("phase", w1) << pad_left("measured ms", 13) << pad_left("predicted ms", 14)
      << pad_left("error %", 10) << '\n';
  out << "  " << pad_right(prefill, w1) << pad_left(fixed(p.measured_prefill_s * 1e3, 3), 13)
      << pad_left(fixed(p.predicted_prefill_s * 1e3, 3), 14) << pad_left(pct(p.prefill_error_pct), 10) << '\n';
  out << "  " << pad_right("decode step (TPOT)", w1) << pad_left(fixed(p.measured_decode_step_s * 1e3, 3), 13)
      << pad_left(fixed(p.predicted_decode_step_s * 1e3, 3), 14) << pad_left(pct(p.decode_error_pct), 10) << '\n';
}

nlohmann::json run_prediction_json(const RunPredictionResult& r) {
  if (!r.prediction) return {{"predicted", false}, {"skipped", r.skipped}};
  const auto& p = *r.prediction;
  return {{"predicted", true},
          {"batch", p.plan.workload.batch},
          {"input_len", p.plan.workload.input_len},
          {"output_len", p.plan.workload.output_len},
          {"prompts_per_replica", p.prompts_per_replica},
          {"ttft_s", p.prediction.ttft_s},
          {"tpot_s", p.prediction.tpot_s},
          {"prefill", {{"measured_s", p.measured_prefill_s}, {"predicted_s", p.predicted_prefill_s},
                       {"error_pct", num(p.prefill_error_pct)}}},
          {"decode_step", {{"measured_s", p.measured_decode_step_s}, {"predicted_s", p.predicted_decode_step_s},
                           {"error_pct", num(p.decode_error_pct)}}}};
}

}  // namespace dayzero::cli
