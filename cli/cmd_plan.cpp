// dayzero plan [SCENARIO] [--top N] [--out DIR] [--json]: the best plans for a
// scenario, ranked and explained, with the Pareto front. Output on stdout is a
// function of the scenario alone (timings and progress go to stderr).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/plan_serve_check.h"
#include "core/atomic_file.h"
#include "core/data_dir.h"
#include "core/json_fields.h"
#include "plan/plan_json.h"
#include "search/search.h"
#include "search/session.h"
#include "serve/engine_settings.h"
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
  int serve_check = 0;  // plans to check with the serving simulation
  std::string engine;   // empty: the scenario's, else vllm
  bool json = false;
};

// Seconds as milliseconds with one decimal (names unique across cli/: a unity build).
std::string ms_1(double s) { return fixed(s * 1e3, 1); }

std::string csv(const search::SearchResult& r) {
  std::ostringstream o;
  o << "index,devices,pp,tp,dp,ep,expert_tp,weights,kv_cache,resident_experts,batch,fits,meets_sla,"
       "max_memory_bytes,ttft_s,tpot_s,tokens_per_s,tokens_per_s_per_device,prefill_workers,decode_workers,prefill_pp,"
       "prefill_tp,prefill_dp,prefill_ep,prefill_expert_tp,prefill_batch\n";
  for (size_t i = 0; i < r.all.size(); ++i) {
    const auto& e = r.all[i];
    const auto& p = e.plan;
    const auto& d = e.prediction;
    o << i << ',' << p.devices_used() << ',' << p.pp << ',' << p.attention.tp << ',' << p.attention.dp << ','
      << p.moe.ep << ',' << p.moe.tp << ',' << search::weight_choice_name(e.weights) << ','
      << plan::kv_dtype_name(p.dtypes.kv_cache) << ',' << p.offload.resident_experts << ',' << p.workload.batch << ','
      << (d.fits ? 1 : 0) << ',' << (e.meets_sla ? 1 : 0) << ',' << e.max_memory_bytes << ',';
    if (d.fits)
      o << d.ttft_s << ',' << d.tpot_s << ',' << d.throughput_tokens_per_s << ','
        << d.throughput_tokens_per_s_per_device;
    else o << ",,,";
    const plan::Disaggregation& g = p.disaggregated;  // one pool: empty
    if (g.on())
      o << ',' << g.prefill_workers << ',' << g.decode_workers << ',' << g.prefill.pp << ',' << g.prefill.attention.tp
        << ',' << g.prefill.attention.dp << ',' << g.prefill.moe.ep << ',' << g.prefill.moe.tp << ','
        << g.prefill.batch;
    else o << ",,,,,,,,";
    o << '\n';
  }
  return o.str();
}

// What the report shows: the top plans, then the Pareto plans not among them,
// each fully re-simulated (every rank, with its explanation); and the counts.
struct Report {
  std::vector<size_t> shown;
  std::map<size_t, simulate::Prediction> full;
  size_t fits = 0, meets = 0;
};

Report report_of(const search::Session& session, const search::SearchResult& r) {
  Report rep;
  for (const auto& e : r.all) {
    rep.fits += e.prediction.fits ? 1 : 0;
    rep.meets += e.meets_sla ? 1 : 0;
  }
  simulate::Simulator sim(session.model, session.cluster, session.efficiency);
  rep.shown = r.top;
  for (size_t i : r.pareto)
    if (std::find(rep.shown.begin(), rep.shown.end(), i) == rep.shown.end()) rep.shown.push_back(i);
  for (size_t i : rep.shown) rep.full[i] = sim.simulate(r.all[i].plan);
  return rep;
}

void print_json(std::ostream& out, const search::Scenario& s, const search::SearchResult& r, const Report& rep) {
  nlohmann::json j;
  j["scenario"] = s.name;
  j["plans"] = nlohmann::json::array();
  for (size_t i : rep.shown) {
    nlohmann::json pj = plan::plan_to_json(r.all[i].plan);
    pj["prediction"] = rep.full.at(i);
    j["plans"].push_back(std::move(pj));
  }
  j["pareto"] = nlohmann::json::array();
  for (size_t i : r.pareto) j["pareto"].push_back(std::find(rep.shown.begin(), rep.shown.end(), i) - rep.shown.begin());
  j["top"] = nlohmann::json::array();
  for (size_t k = 0; k < r.top.size(); ++k) j["top"].push_back(k);
  j["reasons"] = r.reasons;
  j["suggestions"] = r.suggestions;
  j["plans_considered"] = r.candidates;
  j["space_layouts"] = r.space_layouts;
  j["plans_pruned"] = {
      {"memory", r.pruned.memory}, {"ttft", r.pruned.ttft}, {"tpot", r.pruned.tpot}, {"bound", r.pruned.bound}};
  j["plans_evaluated"] = r.evaluated;
  j["search_wall_s"] = r.wall_s;
  j["plans_fitting"] = rep.fits;
  j["plans_meeting_sla"] = rep.meets;
  out << j.dump(2) << '\n';
}

void print_plans(std::ostream& out, const search::SearchResult& r) {
  size_t width = 52;
  bool pools = false;
  for (size_t i : r.top) {
    width = std::max(width, search::layout_name(r.all[i]).size() + 1);
    pools = pools || r.all[i].plan.disaggregated.on();
  }
  out << "\nTop plans (memory: fullest device, GB = 1e9 bytes" << (pools ? "; pools: batch per decode worker" : "")
      << ")\n";
  out << "  " << pad_right("#", 3) << pad_right("layout", width) << pad_left("batch", 7) << pad_left("mem GB", 9)
      << pad_left("TTFT s", 9) << pad_left("TPOT ms", 9) << pad_left("tok/s", 10) << pad_left("tok/s/dev", 11) << '\n';
  for (size_t k = 0; k < r.top.size(); ++k) {
    const auto& e = r.all[r.top[k]];
    const auto& d = e.prediction;
    out << "  " << pad_right(std::to_string(k + 1), 3) << pad_right(search::layout_name(e), width)
        << pad_left(std::to_string(e.plan.workload.batch), 7)
        << pad_left(fixed(static_cast<double>(e.max_memory_bytes) / 1e9, 1), 9) << pad_left(fixed(d.ttft_s, 3), 9)
        << pad_left(ms_1(d.tpot_s), 9) << pad_left(fixed(d.throughput_tokens_per_s, 0), 10)
        << pad_left(fixed(d.throughput_tokens_per_s_per_device, 1), 11) << '\n';
    out << "       " << r.reasons[k] << '\n';
  }
  out << "\nPareto front: throughput per device against TPOT (feasible plans)\n";
  out << "  " << pad_left("TPOT ms", 9) << pad_left("tok/s/dev", 11) << "  layout, batch\n";
  for (size_t i : r.pareto) {
    const auto& e = r.all[i];
    out << "  " << pad_left(ms_1(e.prediction.tpot_s), 9)
        << pad_left(fixed(e.prediction.throughput_tokens_per_s_per_device, 1), 11) << "  " << search::layout_name(e)
        << ", batch " << e.plan.workload.batch << '\n';
  }
}

// What "fits" meant: the device's memory, and the KV room the serving engine leaves at
// its memory share (SearchOptions::engine_memory), with the best plan's figures.
void print_memory_rule(std::ostream& out, const search::SearchResult& r, serve::Engine engine) {
  if (r.top.empty()) return;
  const simulate::EngineKvCheck& k = r.all[r.top.front()].prediction.engine_kv;
  if (!k.checked) return;
  out << "  memory: a plan fits when the device holds it and " << serve::engine_name(engine) << " at memory fraction "
      << fixed(k.memory_fraction, 2) << " of the " << (k.share_of_free ? "memory left free" : "device's memory")
      << " leaves KV room for its whole batch (best plan: " << fixed(static_cast<double>(k.free_bytes) / 1e9, 1)
      << " GB of room for " << fixed(static_cast<double>(k.needed_bytes) / 1e9, 1)
      << " GB of KV per rank; --engine, or the scenario's \"engine\", sets it)\n";
}

void print_text(std::ostream& out, const search::Session& session, const search::SearchResult& r, const Report& rep,
                serve::Engine engine) {
  const auto& s = session.scenario;
  const auto& m = session.model;
  const auto& c = session.cluster;
  out << "Scenario " << s.name << ": " << m.config.display_family() << " (" << billions(m.params_total())
      << " params) on " << c.name() << " (" << c.num_devices() << " x " << c.device_spec().name << ")\n";
  if (!s.description.empty()) out << "  " << s.description << '\n';
  out << "  SLA: TTFT <= " << (s.sla.max_ttft_s > 0 ? fixed(s.sla.max_ttft_s, 2) + " s" : "any")
      << ", TPOT <= " << (s.sla.max_tpot_s > 0 ? ms_1(s.sla.max_tpot_s) + " ms" : "any") << "; objective "
      << search::objective_name(s.objective) << '\n';
  out << "  " << with_commas(static_cast<int64_t>(r.candidates)) << " plans in the "
      << search::space_kind_name(s.space.kind) << " space (" << with_commas(r.space_layouts)
      << " layouts): " << with_commas(r.pruned.total()) << " pruned (memory " << with_commas(r.pruned.memory)
      << ", TTFT " << with_commas(r.pruned.ttft) << ", TPOT " << with_commas(r.pruned.tpot) << ", bound "
      << with_commas(r.pruned.bound) << "), " << with_commas(r.evaluated) << " evaluated, of which "
      << with_commas(static_cast<int64_t>(rep.fits)) << " fit and " << with_commas(static_cast<int64_t>(rep.meets))
      << " also meet the SLA; " << r.pareto.size() << " on the Pareto front\n";
  print_memory_rule(out, r, engine);
  if (!r.top.empty()) {
    print_plans(out, r);
  } else {
    out << "\nNo plan fits and meets the SLA. What would:\n";
    for (const auto& sug : r.suggestions) out << "  - " << sug << '\n';
  }
}

// The top plans as Plan JSON (with their predictions) and every plan as CSV, each
// written atomically.
void write_outputs(const std::filesystem::path& dir, const search::SearchResult& r, const Report& rep) {
  std::filesystem::create_directories(dir);
  for (size_t k = 0; k < r.top.size(); ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "plan-%02zu.json", k + 1);
    const nlohmann::json prediction = rep.full.at(r.top[k]);
    plan::save_plan(dir / name, r.all[r.top[k]].plan, &prediction);
  }
  core::write_file_atomically(dir / "evaluated.csv", csv(r), "the evaluated plans");
}

search::SearchResult search_with_progress(const search::Session& session, int threads,
                                          const plan::EngineSettings& engine) {
  search::SearchOptions so;
  so.threads = threads;
  so.engine_memory = serve::engine_memory_rules(engine, session.model, session.cluster.device_spec());
  so.kernels = serve::engine_kernels(engine);
  const bool tty = ::isatty(2) != 0;
  bool progressed = false;
  so.progress = [&](size_t done, size_t total, double elapsed) {
    if (!tty || elapsed < 1.0) return;
    std::cerr << "\rsearching: " << with_commas(static_cast<int64_t>(done)) << " / "
              << with_commas(static_cast<int64_t>(total)) << " plans (" << fixed(elapsed, 1) << " s)" << std::flush;
    progressed = true;
  };
  search::SearchResult r = search::run_search(session.scenario, session.model, session.cluster, session.efficiency, so);
  if (progressed) std::cerr << '\n';
  const double per_s = r.wall_s > 0 ? static_cast<double>(r.candidates) / r.wall_s : 0;
  std::cerr << "dayzero plan: " << with_commas(static_cast<int64_t>(r.candidates)) << " plans considered ("
            << with_commas(r.evaluated) << " evaluated, " << with_commas(r.pruned.total()) << " pruned) in "
            << fixed(r.wall_s, 2) << " s on " << r.threads
            << " thread(s): " << with_commas(static_cast<int64_t>(std::llround(per_s))) << " plans/s\n";
  return r;
}

void run_plan(const PlanOptions& o) {
  const auto file = search::resolve_scenario(o.scenario.empty() ? kDefaultScenario : o.scenario, core::data_dir());
  search::Session session = search::load_session(file, core::data_dir(), o.catalog);
  if (o.top > 0) session.scenario.space.top = o.top;
  // The engine whose memory rule the search applies and --serve-check serves with.
  plan::EngineSettings engine_settings = session.scenario.engine;
  if (!o.engine.empty()) {
    engine_settings.engine = serve::parse_engine(o.engine);
    if (!engine_settings.engine)
      throw std::runtime_error("option '--engine' = \"" + o.engine + "\": one of vllm, sglang, trtllm");
  }
  const serve::Engine engine = engine_settings.engine.value_or(serve::Engine::vllm);
  const search::SearchResult r = search_with_progress(session, o.threads, engine_settings);
  const Report rep = report_of(session, r);
  std::ostringstream out;
  if (o.serve_check > 0) {
    const ServeCheck check = check_with_serving(session, r, o.serve_check, engine);
    if (o.json) {
      std::ostringstream j;
      print_json(j, session.scenario, r, rep);
      nlohmann::json all = core::parse_json_text(j.str(), "plan --json output");
      all["serve_check"] = serve_check_json(check, r);
      out << all.dump(2) << '\n';
    } else {
      print_text(out, session, r, rep, engine);
      print_serve_check(out, check, r);
    }
  } else if (o.json) {
    print_json(out, session.scenario, r, rep);
  } else {
    print_text(out, session, r, rep, engine);
    print_prompt_note(out, engine, session.scenario.workload.input_len, longest_fitted_prompt(engine),
                      ", which favours plans with more prefill capacity");
  }
  std::cout << out.str() << std::flush;
  if (!o.out.empty()) write_outputs(o.out, r, rep);
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
  cmd->add_option("--serve-check", opts->serve_check,
                  "Serve the K best plans request by request, check the SLA on p90 and re-rank them")
      ->check(CLI::Range(1, 100));
  cmd->add_option(
      "--engine", opts->engine,
      "vllm, sglang or trtllm: the engine whose memory share (KV room) a plan must fit, and that --serve-check "
      "serves with (default: the scenario's engine, else vllm)");
  cmd->add_flag("--json", opts->json, "Print {plans, pareto, ...} as JSON");
  cmd->callback([opts] { run_plan(*opts); });
}

void run_default_plan() { run_plan(PlanOptions{}); }

}  // namespace dayzero::cli
