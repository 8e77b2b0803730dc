// The release-day report (release_report.h).
#include "report/release_report.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/data_dir.h"
#include "core/text.h"
#include "deploy/launch.h"
#include "deploy/run_job.h"
#include "plan/plan_json.h"
#include "report/served_plan.h"
#include "serve/calibration_files.h"
#include "serve/disaggregated.h"
#include "serve/engine_settings.h"
#include "simulate/simulator.h"

namespace dayzero::report {

namespace {

using core::fixed;
using core::with_commas;

std::string gb(int64_t bytes) { return fixed(static_cast<double>(bytes) / 1e9, 1); }
std::string ms(double s) { return fixed(s * 1e3, 1); }
// Text in a Markdown table cell: its pipes escaped.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The model as the scenario names it: its folder ("DayZero-3T-MoE"), else its family.
std::string model_title(const search::Session& s) {
  std::filesystem::path p = s.scenario.model_path;
  if (p.filename() == "config.json") p = p.parent_path();
  return p.empty() ? s.model.config.display_family() : p.filename().string();
}

void section_recommendation(std::ostream& out, const Inputs& in) {
  const search::Session& s = *in.session;
  const search::Evaluated& b = in.best();
  out << "## Recommendation\n\n**" << cell(search::layout_name(b)) << "** (" << b.plan.devices_used() << " of "
      << s.cluster.num_devices() << " " << s.cluster.device_spec().name << "). " << in.search.reasons.front() << "\n\n"
      << "| | TTFT mean (ms) | TTFT p90 (ms) | TPOT mean (ms) | TPOT p90 (ms) | output tok/s | per device |\n"
      << "|---|---:|---:|---:|---:|---:|---:|\n"
      << "| steady state (the search's) | " << ms(b.prediction.ttft_s) << " | | " << ms(b.prediction.tpot_s) << " | | "
      << fixed(b.prediction.throughput_tokens_per_s, 0) << " | "
      << fixed(b.prediction.throughput_tokens_per_s_per_device, 1) << " |\n"
      << "| served by " << serve::engine_name(in.engine) << "'s simulation, " << b.plan.workload.batch
      << " in flight | ";
  if (!in.served_error.empty()) {
    out << "not served: " << cell(in.served_error) << " (the engine's default memory settings; set the scenario's "
        << "\"engine\" object) | | | | | |\n\n";
    return;
  }
  out << ms(in.served.ttft_s.mean) << " | " << ms(in.served.ttft_s.p90) << " | " << ms(in.served.tpot_s.mean) << " | "
      << ms(in.served.tpot_s.p90) << " | " << fixed(in.served.output_tokens_per_s, 0) << " | "
      << fixed(in.served.output_tokens_per_s / static_cast<double>(b.plan.devices_used()), 1) << " |\n\n";
}

void section_minimum(std::ostream& out, const Inputs& in) {
  const search::Session& s = *in.session;
  struct Least {
    int64_t resident = 0, offloaded = 0, sla = 0;  // fewest devices (0: none)
    double share = 1;                              // of the routed experts on device, when offloaded
  };
  const auto fewer = [](int64_t& best, int64_t d) {
    const bool better = best == 0 || d < best;
    if (better) best = d;
    return better;
  };
  std::map<search::WeightChoice, Least> least;
  for (const search::Evaluated& e : in.search.all) {
    if (!e.prediction.fits || e.plan.disaggregated.on()) continue;
    Least& l = least[e.weights];
    const int64_t d = e.plan.devices_used();
    if (e.resident_fraction >= 1) fewer(l.resident, d);
    else if (fewer(l.offloaded, d) || (d == l.offloaded && e.resident_fraction > l.share))
      l.share = e.resident_fraction;
    if (e.meets_sla) fewer(l.sla, d);
  }
  const auto count = [](int64_t d) { return d > 0 ? std::to_string(d) : std::string("none"); };
  const model::Model& m = s.model;
  out << "## What the model needs at minimum\n\n"
      << model_title(s) << " (" << m.config.display_family()
      << " architecture): " << fixed(static_cast<double>(m.params_total()) / 1e9, 1) << " B parameters ("
      << fixed(static_cast<double>(m.params_active()) / 1e9, 1) << " B active per token), "
      << gb(m.weights_bytes(model::WeightPrecision::checkpoint)) << " GB of weights as the checkpoint stores them "
      << "(GB = 1e9 bytes). On " << s.cluster.name() << " (" << s.cluster.device_spec().name << ", "
      << gb(static_cast<int64_t>(s.cluster.device_spec().mem_bytes)) << " GB each):\n\n"
      << "| weights | fewest devices holding every weight | fewest with routed experts offloaded to host | fewest "
         "meeting the SLA |\n|---|---:|---:|---:|\n";
  for (const auto& [w, l] : least)
    out << "| " << search::weight_choice_name(w) << " | " << count(l.resident) << " | " << count(l.offloaded)
        << (l.offloaded > 0 ? " (" + fixed(100 * l.share, 0) + " % of experts on device)" : "") << " | " << count(l.sla)
        << " |\n";
  out << "\nKV cache per token of context: " << fixed(static_cast<double>(m.kv_bytes_per_token(2)) / 1e3, 1)
      << " kB at 16 bits.\n\n";
}

void section_plans(std::ostream& out, const Inputs& in, bool charts) {
  out << "## Plans compared\n\nThe search considered " << with_commas(static_cast<int64_t>(in.search.candidates))
      << " plans (" << with_commas(in.search.evaluated) << " evaluated, the rest pruned); the best of each layout, by "
      << search::objective_name(in.session->scenario.objective) << ":\n\n"
      << "| # | plan | devices | TTFT (ms) | TPOT (ms) | tok/s per device | fullest device (GB) | why |\n"
      << "|---:|---|---:|---:|---:|---:|---:|---|\n";
  for (size_t i = 0; i < std::min<size_t>(8, in.search.top.size()); ++i) {
    const search::Evaluated& e = in.search.all[in.search.top[i]];
    out << "| " << i + 1 << " | " << cell(search::layout_name(e)) << " | " << e.plan.devices_used() << " | "
        << ms(e.prediction.ttft_s) << " | " << ms(e.prediction.tpot_s) << " | "
        << fixed(e.prediction.throughput_tokens_per_s_per_device, 1) << " | " << gb(e.max_memory_bytes) << " | "
        << cell(in.search.reasons[i]) << " |\n";
  }
  if (charts) out << "\n![Pareto front: tokens/s per device against TPOT](pareto.png)\n";
  out << '\n';
}

void section_memory(std::ostream& out, const Inputs& in, bool charts) {
  const plan::Plan& p = in.best().plan;
  out << "## Memory per device of the chosen plan (GB = 1e9 bytes)\n\n"
      << "| ranks | weights | KV cache | activations | buffers | overhead | total | capacity |\n"
      << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  int64_t first = 0;
  for (const auto& r : in.best_full.ranks) {
    if (r.rank != first && r.rank % p.ranks_per_stage() != 0) continue;  // one row per stage (ranks alike)
    first = r.rank;
    out << "| " << r.rank << (p.ranks_per_stage() > 1 ? "-" + std::to_string(r.rank + p.ranks_per_stage() - 1) : "")
        << " | " << gb(r.weights_bytes) << " | " << gb(r.kv_cache_bytes) << " | " << gb(r.activation_bytes) << " | "
        << gb(r.buffer_bytes) << " | " << gb(r.overhead_bytes) << " | " << gb(r.total_bytes) << " | "
        << gb(r.capacity_bytes) << " |\n";
  }
  out << "\nThe fullest: " << in.best_full.fullest_reason << ".\n";
  if (charts) out << "\n![Memory per rank against capacity](memory.png)\n";
  out << '\n';
}

void section_curves(std::ostream& out, const Inputs& in, bool charts) {
  out << "## Latency and throughput against concurrency\n\n"
      << cell(in.sweep.title) << ", each point served request by "
      << "request (`dayzero sweep`):\n\n| in flight | TTFT mean (ms) | TTFT p90 (ms) | TPOT mean (ms) | TPOT p90 (ms) "
         "| "
      << "output tok/s | per device |\n|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const serve::SweepPoint& p : in.sweep.points) {
    if (!p.error.empty()) {
      out << "| " << fixed(p.x, 0) << " | " << p.error << " | | | | | |\n";
      continue;
    }
    const serve::ServeResult& r = p.served;
    out << "| " << fixed(p.x, 0) << " | " << ms(r.ttft_s.mean) << " | " << ms(r.ttft_s.p90) << " | "
        << fixed(r.tpot_s.mean * 1e3, 2) << " | " << fixed(r.tpot_s.p90 * 1e3, 2) << " | "
        << fixed(r.output_tokens_per_s, 0) << " | "
        << fixed(r.output_tokens_per_s / static_cast<double>(std::max<int64_t>(1, p.devices)), 1) << " |\n";
  }
  if (charts) out << "\n![TTFT, TPOT and throughput against concurrency, with the SLA](sweep.png)\n";
  out << '\n';
}

void section_launch(std::ostream& out, const Inputs& in) {
  const search::Session& s = *in.session;
  const plan::Plan& p = in.best().plan;
  out << "## Launch\n\nEvery flag below is in the engine's own argument list at the version named (captured from "
         "the engine: `scenarios/engines/`).\n\n";
  for (plan::Engine e : plan::kAllEngines) {
    const deploy::EngineArgs args = deploy::EngineArgs::pinned(e, core::data_dir());
    out << "### " << args.command() << " " << args.version() << "\n\n";
    deploy::ExportOptions o;
    o.model_id = in.model_id.empty() ? "MODEL_ID" : in.model_id;
    try {
      const deploy::Launch l = deploy::export_launch(e, p, s.model, s.cluster, s.scenario.engine, o, args);
      out << "```sh\n";
      for (const auto& f : l.files) out << "cat > " << f.name << " <<'EOF'\n" << f.text() << "EOF\n";
      for (const auto& c : l.commands)
        out << "# node " << c.node << " (" << c.host << "): " << c.comment << '\n' << c.line() << '\n';
      out << "```\n";
      for (const auto& n : l.notes) out << "\n- " << n;
      out << "\n\n";
    } catch (const deploy::Unexpressible& x) {
      out << "Not expressible: " << x.what() << "\n\n";
    }
  }
  try {
    const deploy::RunJob j = deploy::run_job(p, s.cluster, {});
    out << "### dayzero run (Slurm)\n\n```sh\n" << j.slurm << "```\n\n";
  } catch (const std::invalid_argument& x) {
    out << "### dayzero run\n\n" << x.what() << "\n\n";
  }
}

}  // namespace

Inputs prepare(const std::filesystem::path& scenario_file, const std::string& catalog, const std::string& engine) {
  auto session =
      std::make_shared<const search::Session>(search::load_session(scenario_file, core::data_dir(), catalog));
  plan::EngineSettings settings = session->scenario.engine;            // its plans must fit the engine's memory share
  if (!engine.empty()) settings.engine = serve::parse_engine(engine);  // an unknown name: the prepare below says so
  search::SearchOptions so;
  so.engine_memory = serve::engine_memory_rules(settings, session->model, session->cluster.device_spec());
  search::SearchResult result =
      search::run_search(session->scenario, session->model, session->cluster, session->efficiency, so);
  if (!result.feasible())
    throw std::runtime_error(scenario_file.string() +
                             ": no plan fits and meets the SLA (dayzero plan says what would)");
  return prepare(std::move(session), std::move(result), engine);
}

Inputs prepare(std::shared_ptr<const search::Session> session, search::SearchResult result, const std::string& engine) {
  if (!result.feasible()) throw std::runtime_error("no plan fits and meets the SLA: nothing to report");
  Inputs in;
  in.session = std::move(session);
  in.search = std::move(result);
  const search::Session& s = *in.session;
  if (!engine.empty()) {
    const auto e = serve::parse_engine(engine);
    if (!e) throw std::runtime_error("--engine: \"" + engine + "\" is not one of vllm, sglang, trtllm");
    in.engine = *e;
  } else {
    in.engine = s.scenario.engine.engine.value_or(serve::Engine::vllm);
  }
  const plan::Plan& best = in.best().plan;
  simulate::Simulator sim(s.model, s.cluster, s.efficiency);
  in.best_full = sim.simulate(best);
  const serve::ServingCalibration cal = serve::load_serving_calibration(core::data_dir(), "");
  try {
    in.served = serve_planned(sim, s, best, in.engine, cal.engines, s.scenario.engine);
  } catch (const std::invalid_argument& e) {
    in.served_error = e.what();  // the report says so; the sweep's points say it too
  }
  serve::Client base;
  base.shape = {best.workload.input_len, best.workload.output_len, 0};
  // Powers of two up to the plan's own batch (at least 2048).
  std::vector<double> values;
  for (double c = 1; c <= std::max<double>(2048, static_cast<double>(best.workload.batch)); c *= 2) values.push_back(c);
  const auto profile_of = [&](const plan::Plan& w) {
    return serve::profile_for(in.engine, w, s.model, s.cluster.device_spec(), cal.engines, s.scenario.engine);
  };
  in.sweep =
      serve::run_sweep(serve::SweepAxis::concurrency, values, base, [&](const serve::Client& c, serve::SweepPoint& p) {
        p.layout = search::layout_name(in.best());
        p.devices = best.devices_used();
        p.served = serve::serve_plan(sim, best, profile_of, c);
      });
  in.sweep.title = model_title(s) + " on " + s.cluster.name() + ", " + std::string(serve::engine_name(in.engine)) +
                   ": " + search::layout_name(in.best());
  in.sweep.max_ttft_s = s.scenario.sla.max_ttft_s;
  in.sweep.max_tpot_s = s.scenario.sla.max_tpot_s;
  in.model_id = deploy::hf_id_of(core::data_dir(), s.scenario.model_path.string());
  return in;
}

void write_report(const Inputs& in, const std::filesystem::path& dir, bool charts) {
  std::filesystem::create_directories(dir);
  core::write_file_atomically(dir / "sweep.json", serve::sweep_to_json(in.sweep).dump(2) + "\n", "the sweep JSON");
  core::write_file_atomically(dir / "plan.json", plan::plan_to_json(in.best().plan).dump(2) + "\n", "the chosen plan");
  std::ostringstream md;
  write_markdown(md, in, charts);
  core::write_file_atomically(dir / "report.md", md.str(), "the report");
}

void write_markdown(std::ostream& out, const Inputs& in, bool charts) {
  const search::Session& s = *in.session;
  const search::Scenario& sc = s.scenario;
  out << "# " << model_title(s) << " on " << s.cluster.name() << ": release-day plan\n\n";
  if (!sc.description.empty()) out << sc.description << "\n\n";
  out << "Scenario `" << sc.name << "`: up to " << sc.workload.batch << " sequences in flight, "
      << sc.workload.input_len << "-token prompts, " << sc.workload.output_len << "-token answers; SLA TTFT <= "
      << (sc.sla.max_ttft_s > 0 ? fixed(sc.sla.max_ttft_s, 2) + " s" : std::string("none"))
      << ", TPOT <= " << (sc.sla.max_tpot_s > 0 ? ms(sc.sla.max_tpot_s) + " ms" : std::string("none"))
      << ". Written by `dayzero report` on " << core::today_utc() << ".\n\n";
  section_recommendation(out, in);
  section_minimum(out, in);
  section_plans(out, in, charts);
  section_memory(out, in, charts);
  section_curves(out, in, charts);
  section_launch(out, in);
  out << "## How these figures were made\n\nMemory from the model's tensors at each precision and the engines' KV and "
         "activation rules; step times from a roofline of every op with efficiencies fitted to measured serving runs ("
      << s.efficiency_source << "); serving by an iteration-level simulation of the engine's scheduler. Their error "
      << "against measured runs, out of sample, is in DayZero's docs/FIDELITY.md.\n";
}

}  // namespace dayzero::report
