// dayzero plan [SCENARIO] [--top N] [--out DIR] [--json]: the best plans for a
// scenario, ranked and explained, with the Pareto front. Output on stdout is a
// function of the scenario alone (timings and progress go to stderr).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "core/data_dir.h"
#include "search/search.h"
#include "search/session.h"
#include "plan/plan_json.h"
#include "simulate/simulator.h"
#include "topology/device.h"

namespace dayzero::cli {

namespace {

// The scenario `dayzero plan` (and `dayzero` alone) runs without arguments.
constexpr const char* kDefaultScenario = "deepseek-v3-h200-2x8";

struct PlanOptions {
  std::string scenario;
  std::string out;
  std::string catalog;
  int top = 0;
  int threads = 0;
  bool json = false;
};

std::string ms(double s) { return fixed(s * 1e3, 1); }

void write_atomically(const std::filesystem::path& file, const std::string& text) {
  const auto tmp = std::filesystem::path(file.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error(tmp.string() + ": write failed");
  }
  std::filesystem::rename(tmp, file);
}

std::string csv(const search::SearchResult& r) {
  std::ostringstream o;
  o << "index,devices,pp,tp,dp,ep,expert_tp,weights,kv_cache,resident_experts,batch,fits,meets_sla,"
       "max_memory_bytes,ttft_s,tpot_s,tokens_per_s,tokens_per_s_per_device\n";
  for (size_t i = 0; i < r.all.size(); ++i) {
    const auto& e = r.all[i];
    const auto& p = e.plan;
    const auto& d = e.prediction;
    o << i << ',' << p.world_size() << ',' << p.pp << ',' << p.attention.tp << ',' << p.attention.dp << ','
      << p.moe.ep << ',' << p.moe.tp << ',' << search::weight_choice_name(e.weights) << ','
      << plan::kv_dtype_name(p.dtypes.kv_cache) << ','
      << p.offload.resident_experts << ',' << p.workload.batch << ',' << (d.fits ? 1 : 0) << ','
      << (e.meets_sla ? 1 : 0) << ',' << e.max_memory_bytes << ',';
    if (d.fits) o << d.ttft_s << ',' << d.tpot_s << ',' << d.throughput_tokens_per_s << ',' << d.throughput_tokens_per_s_per_device;
    else o << ",,,";
    o << '\n';
  }
  return o.str();
}

void run_plan(const PlanOptions& o) {
  const auto file = search::resolve_scenario(o.scenario.empty() ? kDefaultScenario : o.scenario, core::data_dir());
  search::Session session = search::load_session(file, core::data_dir(), o.catalog);
  search::Scenario& s = session.scenario;
  if (o.top > 0) s.space.top = o.top;
  const model::Model& m = session.model;
  const topology::Cluster& c = session.cluster;
  const simulate::Efficiency& eff = session.efficiency;

  search::SearchOptions so;
  so.threads = o.threads;
  const bool tty = ::isatty(2) != 0;
  bool progressed = false;
  so.progress = [&](size_t done, size_t total, double elapsed) {
    if (!tty || elapsed < 1.0) return;
    std::cerr << "\rsearching: " << with_commas(static_cast<int64_t>(done)) << " / " << with_commas(static_cast<int64_t>(total))
              << " plans (" << fixed(elapsed, 1) << " s)" << std::flush;
    progressed = true;
  };
  const search::SearchResult r = search::run_search(s, m, c, eff, so);
  if (progressed) std::cerr << '\n';
  size_t fits = 0, meets = 0;
  for (const auto& e : r.all) {
    fits += e.prediction.fits ? 1 : 0;
    meets += e.meets_sla ? 1 : 0;
  }
  std::cerr << "dayzero plan: " << with_commas(static_cast<int64_t>(r.candidates)) << " plans evaluated in "
            << fixed(r.wall_s, 2) << " s on " << r.threads << " thread(s)\n";

  // Full predictions (every rank, with reasons) for the plans we show or write.
  simulate::Simulator sim(m, c, eff);
  std::vector<size_t> shown = r.top;
  for (size_t i : r.pareto)
    if (std::find(shown.begin(), shown.end(), i) == shown.end()) shown.push_back(i);
  std::map<size_t, simulate::Prediction> full;
  for (size_t i : shown) full[i] = sim.simulate(r.all[i].plan);

  std::ostringstream out;
  if (o.json) {
    nlohmann::json j;
    j["scenario"] = s.name;
    j["plans"] = nlohmann::json::array();
    for (size_t i : shown) {
      nlohmann::json pj = plan::plan_to_json(r.all[i].plan);
      pj["prediction"] = full[i];
      j["plans"].push_back(std::move(pj));
    }
    j["pareto"] = nlohmann::json::array();
    for (size_t i : r.pareto) j["pareto"].push_back(std::find(shown.begin(), shown.end(), i) - shown.begin());
    j["top"] = nlohmann::json::array();
    for (size_t k = 0; k < r.top.size(); ++k) j["top"].push_back(k);
    j["reasons"] = r.reasons;
    j["suggestions"] = r.suggestions;
    j["plans_evaluated"] = r.candidates;
    j["plans_fitting"] = fits;
    j["plans_meeting_sla"] = meets;
    out << j.dump(2) << '\n';
  } else {
    out << "Scenario " << s.name << ": " << m.config.display_family() << " (" << billions(m.params_total())
        << " params) on " << c.name() << " (" << c.num_devices() << " x " << c.device_spec().name << ")\n";
    if (!s.description.empty()) out << "  " << s.description << '\n';
    out << "  SLA: TTFT <= " << (s.sla.max_ttft_s > 0 ? fixed(s.sla.max_ttft_s, 2) + " s" : "any") << ", TPOT <= "
        << (s.sla.max_tpot_s > 0 ? ms(s.sla.max_tpot_s) + " ms" : "any") << "; objective "
        << search::objective_name(s.objective) << '\n';
    out << "  " << with_commas(static_cast<int64_t>(r.candidates)) << " plans evaluated: " << with_commas(static_cast<int64_t>(fits))
        << " fit, " << with_commas(static_cast<int64_t>(meets)) << " also meet the SLA; " << r.pareto.size()
        << " on the Pareto front\n";
    if (!r.top.empty()) {
      out << "\nTop plans (memory: fullest device, GB = 1e9 bytes)\n";
      out << "  " << pad_right("#", 3) << pad_right("layout", 52) << pad_left("batch", 7) << pad_left("mem GB", 9)
          << pad_left("TTFT s", 9) << pad_left("TPOT ms", 9) << pad_left("tok/s", 10) << pad_left("tok/s/dev", 11) << '\n';
      for (size_t k = 0; k < r.top.size(); ++k) {
        const auto& e = r.all[r.top[k]];
        const auto& d = e.prediction;
        out << "  " << pad_right(std::to_string(k + 1), 3) << pad_right(search::layout_name(e), 52)
            << pad_left(std::to_string(e.plan.workload.batch), 7) << pad_left(fixed(static_cast<double>(e.max_memory_bytes) / 1e9, 1), 9)
            << pad_left(fixed(d.ttft_s, 3), 9) << pad_left(ms(d.tpot_s), 9) << pad_left(fixed(d.throughput_tokens_per_s, 0), 10)
            << pad_left(fixed(d.throughput_tokens_per_s_per_device, 1), 11) << '\n';
        out << "       " << r.reasons[k] << '\n';
      }
      out << "\nPareto front: throughput per device against TPOT (feasible plans)\n";
      out << "  " << pad_left("TPOT ms", 9) << pad_left("tok/s/dev", 11) << "  layout, batch\n";
      for (size_t i : r.pareto) {
        const auto& e = r.all[i];
        out << "  " << pad_left(ms(e.prediction.tpot_s), 9) << pad_left(fixed(e.prediction.throughput_tokens_per_s_per_device, 1), 11)
            << "  " << search::layout_name(e) << ", batch " << e.plan.workload.batch << '\n';
      }
    } else {
      out << "\nNo plan fits and meets the SLA. What would:\n";
      for (const auto& sug : r.suggestions) out << "  - " << sug << '\n';
    }
  }
  std::cout << out.str() << std::flush;

  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    for (size_t k = 0; k < r.top.size(); ++k) {
      char name[32];
      std::snprintf(name, sizeof name, "plan-%02zu.json", k + 1);
      const nlohmann::json prediction = full[r.top[k]];
      plan::save_plan(std::filesystem::path(o.out) / name, r.all[r.top[k]].plan, &prediction);
    }
    write_atomically(std::filesystem::path(o.out) / "evaluated.csv", csv(r));
  }
  if (r.top.empty()) throw ExitStatus{2};
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "Search the best parallel plans for a scenario (default: " +
                                                 std::string(kDefaultScenario) + "); exit 2 when none is feasible");
  cmd->add_option("scenario", opts->scenario, "Scenario JSON file, or the name of a bundled scenario in scenarios/");
  cmd->add_option("--top", opts->top, "How many plans to list (overrides the scenario)")->check(CLI::Range(1, 1000));
  cmd->add_option("--out", opts->out, "Write the top plans as Plan JSON and every evaluated plan as CSV into DIR");
  cmd->add_option("--threads", opts->threads, "Worker threads (default: every core)")->check(CLI::Range(1, 1024));
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file");
  cmd->add_flag("--json", opts->json, "Print {plans, pareto, ...} as JSON");
  cmd->callback([opts] { run_plan(*opts); });
}

void run_default_plan() { run_plan(PlanOptions{}); }

}  // namespace dayzero::cli
