#include "cli/run_prediction_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "topology/cluster.h"

namespace dayzero::cli {

namespace {
std::string pct(double p) {
  if (!std::isfinite(p)) return "-";
  return p > 0 ? std::string(1, '+').append(fixed(p, 1)) : fixed(p, 1);
}
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

void print_run_prediction(std::ostream& out, const simulate::RunValidation& v, const LoopInputs& in) {
  out << "\nWhole run, as the simulator predicts it (the run's plan and workload on " << in.run.measurements.world_size
      << " x " << in.figures.device.name << " in one node: collectives, pipeline, overheads included)\n";
  if (!v.whole_run) {
    out << "  not predicted: " << v.whole_run_skipped << '\n';
    return;
  }
  const auto& p = *v.whole_run;
  const auto& w = p.plan.workload;
  out << "  workload: " << w.batch << " sequences of " << w.input_len << " prompt tokens (mean), " << w.output_len - 1
      << " decode steps\n";
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

nlohmann::json run_prediction_json(const simulate::RunValidation& v) {
  if (!v.whole_run) return {{"predicted", false}, {"skipped", v.whole_run_skipped}};
  const auto& p = *v.whole_run;
  return {{"predicted", true},
          {"batch", p.plan.workload.batch},
          {"input_len", p.plan.workload.input_len},
          {"output_len", p.plan.workload.output_len},
          {"prompts_per_replica", p.prompts_per_replica},
          {"ttft_s", p.prediction.ttft_s},
          {"tpot_s", p.prediction.tpot_s},
          {"prefill",
           {{"measured_s", p.measured_prefill_s},
            {"predicted_s", p.predicted_prefill_s},
            {"error_pct", num(p.prefill_error_pct)}}},
          {"decode_step",
           {{"measured_s", p.measured_decode_step_s},
            {"predicted_s", p.predicted_decode_step_s},
            {"error_pct", num(p.decode_error_pct)}}}};
}

}  // namespace dayzero::cli
