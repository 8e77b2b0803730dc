#include "cli/validate_bench.h"

#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/format.h"
#include "core/data_dir.h"
#include "serve/bench_predict.h"
#include "serve/calibration_files.h"

namespace dayzero::cli {

namespace {

nlohmann::json summary_json(const serve::ErrorSummary& s) {
  return {{"rows", s.rows},
          {"ttft_abs_error_pct", {{"median", s.ttft_median}, {"p90", s.ttft_p90}}},
          {"tpot_abs_error_pct", {{"median", s.tpot_median}, {"p90", s.tpot_p90}}},
          {"steady_state",
           {{"ttft_abs_error_pct", {{"median", s.steady_ttft_median}, {"p90", s.steady_ttft_p90}}},
            {"tpot_abs_error_pct", {{"median", s.steady_tpot_median}, {"p90", s.steady_tpot_p90}}}}}};
}

nlohmann::json rows_json(const std::vector<serve::RowPrediction>& preds) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : preds) {
    nlohmann::json j = {{"id", p.row->id},
                        {"line", p.row->line},
                        {"status", p.predicted ? "predicted" : "rejected"},
                        {"measured", {{"ttft_s", p.row->ttft_s}, {"tpot_s", p.row->tpot_s}}}};
    if (p.predicted) {
      j["predicted"] = {{"ttft_s", p.ttft_s}, {"tpot_s", p.tpot_s}};
      j["steady_state"] = {{"ttft_s", p.steady_ttft_s}, {"tpot_s", p.steady_tpot_s}};
      j["error_pct"] = {{"ttft", p.ttft_error_pct()}, {"tpot", p.tpot_error_pct()}};
    } else {
      j["reason"] = p.reason;
    }
    rows.push_back(std::move(j));
  }
  return rows;
}

// A percentage with one decimal.
std::string pct_1(double v) { return fixed(v, 1); }

void print_text(std::ostream& out, const std::string& file, const std::vector<serve::RowPrediction>& preds,
                const std::map<std::string, serve::ErrorSummary>& summary, bool per_row) {
  std::map<std::string, int64_t> reasons;
  int64_t predicted = 0;
  for (const auto& p : preds) p.predicted ? (void)++predicted : (void)++reasons[p.reason];
  out << "Measured serving runs against the serving simulation: " << file << "\n  " << preds.size() << " rows, "
      << predicted << " predicted, " << preds.size() - static_cast<size_t>(predicted) << " rejected\n";
  if (per_row) {
    out << "\n  " << pad_right("row", 62) << pad_left("TTFT ms", 10) << pad_left("pred", 10) << pad_left("err %", 8)
        << pad_left("TPOT ms", 10) << pad_left("pred", 10) << pad_left("err %", 8) << '\n';
    for (const auto& p : preds) {
      if (!p.predicted) continue;
      out << "  " << pad_right(p.row->id.substr(0, 60), 62) << pad_left(fixed(p.row->ttft_s * 1e3, 1), 10)
          << pad_left(fixed(p.ttft_s * 1e3, 1), 10) << pad_left(pct_1(p.ttft_error_pct()), 8)
          << pad_left(fixed(p.row->tpot_s * 1e3, 2), 10) << pad_left(fixed(p.tpot_s * 1e3, 2), 10)
          << pad_left(pct_1(p.tpot_error_pct()), 8) << '\n';
    }
  }
  out << "\n|error| in % (serving simulation; steady-state formula in brackets), median and p90\n";
  out << "  " << pad_right("group", 44) << pad_left("rows", 6) << pad_left("TTFT med", 18) << pad_left("TTFT p90", 18)
      << pad_left("TPOT med", 18) << pad_left("TPOT p90", 18) << '\n';
  for (const auto& [key, s] : summary)
    out << "  " << pad_right(key, 44) << pad_left(std::to_string(s.rows), 6)
        << pad_left(pct_1(s.ttft_median) + " (" + pct_1(s.steady_ttft_median) + ")", 18)
        << pad_left(pct_1(s.ttft_p90) + " (" + pct_1(s.steady_ttft_p90) + ")", 18)
        << pad_left(pct_1(s.tpot_median) + " (" + pct_1(s.steady_tpot_median) + ")", 18)
        << pad_left(pct_1(s.tpot_p90) + " (" + pct_1(s.steady_tpot_p90) + ")", 18) << '\n';
  if (!reasons.empty()) {
    out << "\nRejected rows, by reason\n";
    for (const auto& [reason, n] : reasons) out << "  " << pad_left(std::to_string(n), 6) << "  " << reason << '\n';
  }
}

}  // namespace

void run_validate_bench(const std::string& file, const serve::BenchDefaults& defaults, const std::string& calibration,
                        bool json, bool rows) {
  const std::vector<serve::BenchRow> bench = serve::read_bench_file(file, defaults);
  serve::BenchOptions o;
  o.data_dir = core::data_dir();
  serve::ServingCalibration cal = serve::load_serving_calibration(o.data_dir, calibration);
  o.efficiency = std::move(cal.efficiency);
  o.engines = std::move(cal.engines);
  const auto preds = serve::predict_bench(bench, o);
  const auto summary = serve::summarize(preds);
  std::ostringstream out;
  if (json) {
    nlohmann::json s = nlohmann::json::object();
    for (const auto& [key, v] : summary) s[key] = summary_json(v);
    out << nlohmann::json{{"file", file}, {"rows", rows_json(preds)}, {"summary", s}}.dump(2) << '\n';
  } else {
    print_text(out, file, preds, summary, rows || preds.size() <= kRunsListed);
  }
  std::cout << out.str() << std::flush;
}

}  // namespace dayzero::cli
