// bench_fidelity: how well the serving simulation predicts the measured serving runs
// of scenarios/fidelity/serving-measured.csv (`agg` rows), out of sample.
//
//   build/bench/bench_fidelity [CSV] [--markdown]
//
// 1. Every row is simulated once at the start figures (simulate::Efficiency's sourced
//    defaults, no engine overheads): the steady-state formula's prediction (the
//    simulator before the serving model) and the serving simulation's, uncalibrated,
//    with each latency's parts (serve/serving_fit.h).
// 2. In sample: fit on all rows, re-simulate all rows with the fitted figures.
// 3. Leave one GPU out: for each GPU type, fit on the others' rows, re-simulate its
//    rows with the fit (its device gets the shared figures: it has no entry).
// 4. Leave one model out: for each model (models of one architecture, e.g.
//    DeepSeek-V3 and -R1, held out together), fit on the others, re-simulate it.
// Median and p90 |error| of TTFT and TPOT per group, for each.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_main.h"
#include "serve/bench_predict.h"
#include "serve/bench_rows.h"
#include "serve/serving_fit.h"
#include "serve/stats.h"
#include "simulate/time_figure.h"

namespace {

using namespace dayzero;
using serve::BenchPool;
using serve::BenchRow;
using serve::RowPrediction;

struct Scheme {
  std::string name;
  std::vector<RowPrediction> predictions;
  std::vector<BenchRow> rows;  // the re-simulated copies the predictions point into
};

serve::BenchOptions start_options() {
  serve::BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable{};  // every device at simulate::Efficiency's sourced figures
  return o;
}

// The fit's options: each catalog device's architecture, so that a held-out GPU takes
// its measured siblings' figures, and the copy bandwidths measured on devices
// (serve/serving_fit.h, steps 3 and 4).
serve::FitOptions fit_options() {
  return serve::fit_options_from(topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR));
}

void print_fit(const serve::ServingFit& fit) {
  const auto line = [&](const std::string& name, const serve::FigureScales& m) {
    const simulate::Efficiency e = fit.efficiency(m);
    std::printf("  %-10s gemm %.3f / %.3f  attention %.3f / %.3f  elementwise %.3f  kernel %.2f us  collectives %.3f\n",
                name.c_str(), e.gemm_compute, e.gemm_memory, e.attention_compute, e.attention_memory,
                e.elementwise_memory, e.kernel_overhead_s * 1e6, e.collective_efficiency);
  };
  line("shared", fit.shared);
  for (const auto& [d, m] : fit.devices) line(d, m);
  for (const auto& [a, f] : fit.architectures) line(std::string(topology::architecture_name(a)), f.scales);
  for (const auto& [e, o] : fit.engines)
    std::printf(
        "  %-10s step %.2f ms  request %.1f ms + %.2f ms in flight  admission %.1f steps  handoff %.1f ms  (%lld "
        "rows)\n",
        std::string(serve::engine_name(e)).c_str(), o.step_overhead_s * 1e3, o.request_overhead_s * 1e3,
        o.request_overhead_per_inflight_s * 1e3, o.admission_delay_steps, o.handoff_s * 1e3,
        static_cast<long long>(o.rows));
}

// Fits on `train` and re-simulates `test` with the fit.
std::vector<RowPrediction> fit_and_predict(const std::vector<RowPrediction>& train, const std::vector<BenchRow>& test,
                                           const serve::BenchOptions& start) {
  const serve::ServingFit fit = serve::fit_serving(serve::fit_rows(train), simulate::Efficiency{}, fit_options());
  serve::BenchOptions o = start;
  o.efficiency = fit.table(simulate::EfficiencyTable{}, "bench_fidelity fold.");
  o.engines = fit.overheads("bench_fidelity fold.");
  return serve::predict_bench(test, o);
}

// Held out group by group: `key` names the group of a predicted row.
Scheme holdout(const std::string& name, const std::vector<RowPrediction>& base, const serve::BenchOptions& start,
               const std::function<std::string(const RowPrediction&)>& key) {
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < base.size(); ++i)
    if (base[i].predicted) groups[key(base[i])].push_back(i);
  Scheme s{name, {}, {}};
  size_t total = 0;
  for (const auto& [group, members] : groups) total += members.size();
  s.rows.reserve(total);  // the predictions point into it: no reallocation
  for (const auto& [group, members] : groups) {
    std::vector<RowPrediction> train;
    for (size_t i = 0; i < base.size(); ++i)
      if (base[i].predicted && key(base[i]) != group) train.push_back(base[i]);
    const size_t first = s.rows.size();
    for (size_t i : members) s.rows.push_back(*base[i].row);
    auto p = fit_and_predict(train, {s.rows.begin() + static_cast<std::ptrdiff_t>(first), s.rows.end()}, start);
    for (size_t k = 0; k < p.size(); ++k) p[k].row = &s.rows[first + k];
    s.predictions.insert(s.predictions.end(), p.begin(), p.end());
  }
  return s;
}

// The model groups: models with the same parameter count are one architecture.
std::function<std::string(const RowPrediction&)> model_group(const std::vector<RowPrediction>& base) {
  auto names = std::make_shared<std::map<int64_t, std::string>>();
  for (const auto& p : base) {
    if (!p.predicted) continue;
    std::string& n = (*names)[p.model_params];
    if (n.find(p.row->model_path) == std::string::npos) n += (n.empty() ? "" : " + ") + p.row->model_path;
  }
  return [names](const RowPrediction& p) { return names->at(p.model_params); };
}

// Per row, for a look at what the summary hides: --dump DIR writes DIR/<scheme>.csv.
void dump(const std::string& dir, const std::string& name, const std::vector<RowPrediction>& p) {
  if (dir.empty()) return;
  std::string file = dir + "/" + name + ".csv";
  for (char& c : file)
    if (c == ' ') c = '_';
  std::FILE* f = std::fopen(file.c_str(), "w");
  if (!f) throw std::runtime_error("--dump: cannot write " + file);
  std::fprintf(f,
               "id,system,backend,model,isl,osl,batch,tp,pp,dp,moe_tp,moe_ep,gemm_quant,ttft_s,ttft_pred_s,tpot_s,tpot_"
               "pred_s,ttft_gpu_s,ttft_steps,ttft_request_s,ttft_inflight,tpot_gpu_s,tpot_steps");
  for (const char* which : {"ttft", "tpot"})
    for (const auto fig : simulate::kAllTimeFigures)
      std::fprintf(f, ",%s_%s_s", which, std::string(simulate::time_figure_name(fig)).c_str());
  std::fprintf(f, ",ttft_kv_transfer_s,ttft_handoff_s,mode,prefill_pool,decode_pool\n");
  // A disaggregated row's pools: "<workers>x b<batch> tp pp dp | ep etp".
  const auto pool = [](const BenchPool& q) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lldx b%lld tp%lld pp%lld dp%lld | ep%lld etp%lld",
                  static_cast<long long>(q.workers), static_cast<long long>(q.batch_size), static_cast<long long>(q.tp),
                  static_cast<long long>(q.pp), static_cast<long long>(q.attention_dp),
                  static_cast<long long>(q.moe_ep), static_cast<long long>(q.moe_tp));
    return std::string(buf);
  };
  for (const auto& r : p) {
    if (!r.predicted) continue;
    const BenchRow& b = *r.row;
    std::fprintf(
        f, "%s,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g",
        b.id.c_str(), b.system.c_str(), b.backend.c_str(), b.model_path.c_str(), static_cast<long long>(b.isl),
        static_cast<long long>(b.osl), static_cast<long long>(b.batch_size), static_cast<long long>(b.tp),
        static_cast<long long>(b.pp), static_cast<long long>(b.attention_dp), static_cast<long long>(b.moe_tp),
        static_cast<long long>(b.moe_ep), b.gemm_quant.c_str(), b.ttft_s, r.ttft_s, b.tpot_s, r.tpot_s,
        std::accumulate(r.ttft_parts.figure_s.begin(), r.ttft_parts.figure_s.end(), 0.0), r.ttft_parts.steps,
        r.ttft_parts.request_overhead_s, r.ttft_parts.inflight,
        std::accumulate(r.tpot_parts.figure_s.begin(), r.tpot_parts.figure_s.end(), 0.0), r.tpot_parts.steps);
    for (const auto* parts : {&r.ttft_parts, &r.tpot_parts})
      for (const double s : parts->figure_s) std::fprintf(f, ",%.6g", s);
    std::fprintf(f, ",%.6g,%.6g,%s,%s,%s\n", r.ttft_parts.kv_transfer_s, r.ttft_parts.handoff_s, b.mode.c_str(),
                 b.disaggregated() ? pool(b.prefill).c_str() : "", b.disaggregated() ? pool(b.decode).c_str() : "");
  }
  std::fclose(f);
}

void print_line(const char* scheme, const std::string& group, const serve::ErrorSummary& s, bool steady) {
  std::printf("  %-26s %-58s %5lld %9.1f %9.1f %9.1f %9.1f\n", scheme, group.c_str(), static_cast<long long>(s.rows),
              steady ? s.steady_ttft_median : s.ttft_median, steady ? s.steady_ttft_p90 : s.ttft_p90,
              steady ? s.steady_tpot_median : s.tpot_median, steady ? s.steady_tpot_p90 : s.tpot_p90);
}

// The rows of one mode: the aggregated runs (issue 13's figures) or the disaggregated
// ones (issue 14's; fits use their TPOT, not their TTFT: serve/serving_fit.h).
std::vector<RowPrediction> of_mode(const std::vector<RowPrediction>& p, bool disaggregated) {
  std::vector<RowPrediction> out;
  for (const auto& r : p)
    if (r.row->disaggregated() == disaggregated) out.push_back(r);
  return out;
}

void print_scheme(const char* title, const std::vector<RowPrediction>& all, const char* group_prefix, bool steady,
                  bool with_all = true, bool disaggregated = false) {
  for (const auto& [group, s] : serve::summarize(of_mode(all, disaggregated)))
    if ((with_all && group == "all") || group.rfind(group_prefix, 0) == 0) print_line(title, group, s, steady);
}

// The signed median error (predicted / measured - 1) of the aggregated runs per GPU and
// engine: where a predictor is biased, not only how far off (a held-out GPU inherits the
// others' engine overheads: docs/FIDELITY.md, session 31).
void print_bias(const char* title, const std::vector<RowPrediction>& all) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by;
  for (const auto& p : of_mode(all, false))
    if (p.predicted && p.row->ttft_s > 0 && p.row->tpot_s > 0) {
      auto& [ttft, tpot] = by[p.row->system + " " + p.row->backend];
      ttft.push_back(p.ttft_error_pct());
      tpot.push_back(p.tpot_error_pct());
    }
  for (auto& [group, e] : by)
    std::printf("  %-26s %-58s %5zu %+9.1f %9s %+9.1f\n", title, ("signed, " + group).c_str(), e.first.size(),
                serve::latency_stats(e.first).p50, "", serve::latency_stats(e.second).p50);
}

// The disaggregated runs under each predictor: by model and by GPU.
void print_disaggregated(const char* title, const std::vector<RowPrediction>& all) {
  print_scheme(title, all, "model:", false, true, true);
  print_scheme(title, all, "system:", false, false, true);
}

int run(int argc, char** argv) {
  std::string csv = DAYZERO_DATA_DIR "/fidelity/serving-measured.csv", dir;
  bool start_only = false;  // the start figures' predictions only (with --dump: the features to fit outside)
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: bench_fidelity [BENCH.csv] [--dump DIR] [--start-only]\n");
      return 0;
    }
    if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc) dir = argv[++i];
    else if (std::strcmp(argv[i], "--start-only") == 0) start_only = true;
    else csv = argv[i];
  }
  if (!dir.empty()) std::filesystem::create_directories(dir);  // before minutes of work, not after
  std::setvbuf(stdout, nullptr, _IOLBF, 0);                    // each line as it is printed, also into a file
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<BenchRow> rows = serve::read_bench_csv(csv);
  const serve::BenchOptions start = start_options();
  const std::vector<RowPrediction> base = serve::predict_bench(rows, start);
  int64_t predicted = 0;
  for (const auto& p : base) predicted += p.predicted ? 1 : 0;
  std::printf(
      "bench_fidelity: %s\n  %zu rows, %lld predicted (agg and fully described disagg, mappable), the rest rejected "
      "with the reason\n\n",
      csv.c_str(), rows.size(), static_cast<long long>(predicted));
  std::printf("  |error| in %%, median and p90\n  %-26s %-58s %5s %9s %9s %9s %9s\n", "predictor", "group", "rows",
              "TTFT med", "TTFT p90", "TPOT med", "TPOT p90");
  dump(dir, "start", base);
  print_scheme("steady state (before)", base, "engine:", true);
  print_scheme("serving, start figures", base, "engine:", false);
  print_disaggregated("disagg, start figures", base);
  if (start_only) return 0;
  std::vector<BenchRow> in_rows;
  for (const auto& p : base)
    if (p.predicted) in_rows.push_back(*p.row);
  std::vector<RowPrediction> in_sample;  // fitted on: the aggregated runs, and the disaggregated ones' TPOT
  for (const auto& p : base)
    if (p.predicted) in_sample.push_back(p);
  print_fit(serve::fit_serving(serve::fit_rows(in_sample), simulate::Efficiency{}, fit_options()));
  const auto fitted = fit_and_predict(in_sample, in_rows, start);
  dump(dir, "in sample", fitted);
  print_scheme("serving, fit in sample", fitted, "engine:", false);
  print_bias("serving, fit in sample", fitted);
  print_disaggregated("disagg, fit in sample", fitted);
  const Scheme gpu = holdout("leave one GPU out", base, start, [](const RowPrediction& p) { return p.row->system; });
  dump(dir, "leave one GPU out", gpu.predictions);
  print_scheme("leave one GPU out", gpu.predictions, "system:", false);
  print_scheme("leave one GPU out", gpu.predictions, "engine:", false, false);
  print_bias("leave one GPU out", gpu.predictions);
  print_disaggregated("disagg, one GPU out", gpu.predictions);
  const Scheme model = holdout("leave one model out", base, start, model_group(base));
  dump(dir, "leave one model out", model.predictions);
  print_scheme("leave one model out", model.predictions, "model:", false);
  print_scheme("leave one model out", model.predictions, "engine:", false, false);
  print_disaggregated("disagg, one model out", model.predictions);
  std::printf("\n  %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return dayzero::bench::guarded_main("bench_fidelity", [&] { return run(argc, argv); });
}
