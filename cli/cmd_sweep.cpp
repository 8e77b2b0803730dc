// dayzero sweep [SCENARIO | --model M --cluster C --plan P] [--concurrency LIST |
// --request-rate LIST | --input-len LIST | --output-len LIST] [--best] [--out DIR]:
// latency curves (serve/sweep.h). One plan (the scenario's best, or the given one) is
// served request by request at each value of one axis, or with --best the search's
// best plan for each point; a table on stdout, and in DIR the sweep as CSV and JSON
// and its chart as PNG (drawn by dayzero-gui --render-sweep with the GUI's chart).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/calibration_note.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/gui_render.h"
#include "cli/serve_cli.h"
#include "core/atomic_file.h"
#include "search/search.h"
#include "serve/engine_settings.h"
#include "serve/sweep.h"

namespace dayzero::cli {

namespace {

using namespace serve_cli;

struct SweepCliOptions {
  ServeCliOptions serve;
  std::vector<double> concurrency, rate, input_len, output_len;
  bool best = false;
  std::string out;
};

// The axis: the one list of more than one value (default: concurrency 1, 2, 4 ... 2048);
// single values set the base client instead.
std::pair<serve::SweepAxis, std::vector<double>> axis_of(SweepCliOptions& o) {
  std::vector<std::pair<serve::SweepAxis, std::vector<double>*>> lists = {
      {serve::SweepAxis::concurrency, &o.concurrency},
      {serve::SweepAxis::request_rate, &o.rate},
      {serve::SweepAxis::input_len, &o.input_len},
      {serve::SweepAxis::output_len, &o.output_len}};
  std::optional<std::pair<serve::SweepAxis, std::vector<double>>> axis;
  for (auto& [a, values] : lists) {
    if (values->size() <= 1) continue;
    if (axis) throw std::runtime_error("sweep: one axis at a time (two flags list several values)");
    axis = {a, *values};
  }
  if (!o.concurrency.empty() && !o.rate.empty())
    throw std::runtime_error("sweep: --concurrency and --request-rate exclude each other");
  for (const auto& [a, values] : lists)
    if (values->size() == 1 && a != (axis ? axis->first : serve::SweepAxis::concurrency)) {
      const double v = values->front();
      if (a == serve::SweepAxis::concurrency) o.serve.concurrency = static_cast<int64_t>(v);
      if (a == serve::SweepAxis::request_rate) o.serve.rate = v;
      if (a == serve::SweepAxis::input_len) o.serve.input_len = static_cast<int64_t>(v);
      if (a == serve::SweepAxis::output_len) o.serve.output_len = static_cast<int64_t>(v);
    }
  if (axis) return *axis;
  if (o.concurrency.size() == 1) return {serve::SweepAxis::concurrency, o.concurrency};
  if (o.rate.size() == 1) return {serve::SweepAxis::request_rate, o.rate};
  std::vector<double> powers;
  for (double c = 1; c <= 2048; c *= 2) powers.push_back(c);
  return {serve::SweepAxis::concurrency, powers};
}

// The scenario with the point's value in its workload: the search's best plan there (at
// a concurrency, among the plans holding exactly that many sequences per worker).
plan::Plan best_plan_at(const Served& s, const ServeCliOptions& o, serve::SweepAxis axis, double x) {
  search::Scenario sc = s.session->scenario;
  switch (axis) {
    case serve::SweepAxis::concurrency:
      sc.workload.batch = static_cast<int64_t>(x);
      sc.space.batches = {sc.workload.batch};
      break;
    case serve::SweepAxis::request_rate: sc.request_rate_per_s = x; break;
    case serve::SweepAxis::input_len: sc.workload.input_len = static_cast<int64_t>(x); break;
    case serve::SweepAxis::output_len: sc.workload.output_len = static_cast<int64_t>(x); break;
  }
  search::SearchOptions so;  // plans the engine can hold at the point's batch
  const serve::EngineSettings settings = engine_settings(o, s.session.get());
  so.engine_memory = serve::engine_memory_rules(settings, s.m(), s.c().device_spec());
  so.kernels = serve::engine_kernels(settings);
  const search::SearchResult r = search::run_search(sc, s.m(), s.c(), s.efficiency, so);
  if (!r.feasible()) throw std::invalid_argument("no plan fits and meets the SLA here");
  return r.all[r.top.front()].plan;
}

std::string layout_of(const plan::Plan& p) {
  search::Evaluated e;
  e.plan = p;
  return search::layout_name(e);
}

void print_sweep(std::ostream& out, const serve::Sweep& sw, bool best) {
  out << sw.title << "\n  " << pad_left(std::string(serve::sweep_axis_name(sw.axis)), 13) << pad_left("TTFT ms", 11)
      << pad_left("p90", 10) << pad_left("TPOT ms", 10) << pad_left("p90", 9) << pad_left("tok/s", 10)
      << pad_left("tok/s/dev", 11) << (best ? "  plan" : "") << '\n';
  for (const serve::SweepPoint& p : sw.points) {
    out << "  " << pad_left(fixed(p.x, p.x == std::floor(p.x) ? 0 : 2), 13);
    if (!p.error.empty()) {
      out << "  " << p.error << '\n';
      continue;
    }
    const serve::ServeResult& r = p.served;
    out << pad_left(fixed(r.ttft_s.mean * 1e3, 1), 11) << pad_left(fixed(r.ttft_s.p90 * 1e3, 1), 10)
        << pad_left(fixed(r.tpot_s.mean * 1e3, 2), 10) << pad_left(fixed(r.tpot_s.p90 * 1e3, 2), 9)
        << pad_left(fixed(r.output_tokens_per_s, 0), 10)
        << pad_left(fixed(r.output_tokens_per_s / static_cast<double>(std::max<int64_t>(1, p.devices)), 1), 11)
        << (best ? "  " + p.layout : "") << '\n';
  }
  if (sw.max_ttft_s > 0 || sw.max_tpot_s > 0)
    out << "  SLA: TTFT <= " << fixed(sw.max_ttft_s * 1e3, 0) << " ms, TPOT <= " << fixed(sw.max_tpot_s * 1e3, 1)
        << " ms (0 = none)\n";
}

void run_sweep_command(SweepCliOptions& o) {
  const std::pair<serve::SweepAxis, std::vector<double>> axis_values = axis_of(o);  // the lambda captures the axis
  const serve::SweepAxis axis = axis_values.first;
  const std::vector<double>& values = axis_values.second;
  if (o.best && (!o.serve.plan.empty()))
    throw std::runtime_error("sweep: --best searches the scenario at each point; it does not take --plan");
  Served s = load_served(o.serve);
  apply_speculative_flags(o.serve, s);
  const serve::Client base = serve_options(o.serve, s).client;
  simulate::Simulator sim(s.m(), s.c(), s.efficiency);
  const auto t0 = std::chrono::steady_clock::now();
  serve::Sweep sw;
  try {
    sw = serve::run_sweep(axis, values, base, [&](const serve::Client& c, serve::SweepPoint& p) {
      const plan::Plan plan = o.best ? best_plan_at(s, o.serve, axis, p.x) : s.plan;
      p.layout = layout_of(plan);
      p.devices = plan.devices_used();
      serve::Client client = c;
      if (o.best && axis == serve::SweepAxis::concurrency && plan.disaggregated.decode_workers > 1) {
        // Each decode worker holds the point's batch: the deployment, that many times it.
        client = serve::client_at(base, axis, p.x * plan.disaggregated.decode_workers);
        p.layout += ", " + std::to_string(client.concurrency) + " in flight";
      }
      p.served = serve_with(o.serve, s, plan, sim, client);
    });
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("sweep: ") + e.what());
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const serve::Engine engine = engine_settings(o.serve, s.session.get()).engine.value_or(serve::Engine::vllm);
  sw.title = s.m().config.display_family() + " on " + s.c().name() + ", " + std::string(serve::engine_name(engine)) +
             ": " + (o.best ? "the best plan of each point" : layout_of(s.plan)) + ", " +
             std::to_string(base.shape.input_len) + " + " + std::to_string(base.shape.output_len) + " tokens";
  if (s.session) sw.max_ttft_s = s.session->scenario.sla.max_ttft_s, sw.max_tpot_s = s.session->scenario.sla.max_tpot_s;
  const nlohmann::json j = serve::sweep_to_json(sw);
  std::ostringstream text;
  if (o.serve.json) text << j.dump(2) << '\n';
  else print_sweep(text, sw, o.best);
  // Prompts past the longest the engine's calibration was fitted to (serve/engine_overheads.h).
  const int64_t longest = s.engines.for_engine(engine).longest_prompt_tokens;
  const double prompt_max = axis == serve::SweepAxis::input_len ? *std::max_element(values.begin(), values.end())
                                                                : static_cast<double>(base.shape.input_len);
  print_prompt_note(o.serve.json ? std::cerr : text, engine, static_cast<int64_t>(prompt_max), longest);
  std::cout << text.str() << std::flush;
  std::cerr << "dayzero sweep: " << sw.points.size() << " points served in " << fixed(wall_s, 2) << " s\n";
  if (o.out.empty()) return;
  const std::filesystem::path dir(o.out);
  std::filesystem::create_directories(dir);
  std::ostringstream csv;
  serve::write_sweep_csv(csv, sw);
  core::write_file_atomically(dir / "sweep.csv", csv.str(), "the sweep CSV");
  core::write_file_atomically(dir / "sweep.json", j.dump(2) + "\n", "the sweep JSON");
  draw_with_gui({"--render-sweep", (dir / "sweep.json").string(), "--out", (dir / "sweep.png").string()},
                "sweep: " + (dir / "sweep.png").string());
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto opts = std::make_shared<SweepCliOptions>();
  ServeCliOptions& so = opts->serve;
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Latency curves: TTFT, TPOT and throughput of a plan (or the best plan of each point) served at each "
      "concurrency, request rate, prompt or output length");
  cmd->add_option("scenario", so.scenario, "Scenario (its best plan is swept); default: deepseek-v3-h200-2x8");
  cmd->add_option("--model", so.model, "With --cluster and --plan: sweep this plan");
  cmd->add_option("--cluster", so.cluster, "Cluster JSON file or bundled cluster name");
  cmd->add_option("--plan", so.plan, "Plan JSON file (one pool, or a disaggregated plan's pools)");
  cmd->add_option("--catalog", so.catalog, "Extra device catalog JSON file");
  cmd->add_option("--engine", so.engine, "vllm, sglang or trtllm (default: the scenario's engine, else vllm)");
  cmd->add_option("--engine-settings", so.engine_settings_file, "Engine settings JSON (plan/engine_settings.h)");
  cmd->add_option("--calibration", so.calibration, "Directory with efficiency.json / engine-overheads.json");
  cmd->add_option("--concurrency", opts->concurrency,
                  "Requests in flight, comma-separated (the default axis: 1 .. 2048)")
      ->delimiter(',');
  cmd->add_option("--request-rate", opts->rate, "Poisson request rates per second, comma-separated")->delimiter(',');
  cmd->add_option("--input-len", opts->input_len, "Prompt tokens, comma-separated")->delimiter(',');
  cmd->add_option("--output-len", opts->output_len, "Output tokens, comma-separated")->delimiter(',');
  cmd->add_option("--requests", so.requests, "Requests per point at a request rate (default 1000)")
      ->check(CLI::Range(int64_t{1}, kMaxRequests));
  cmd->add_flag("--best", opts->best, "Search the scenario again at each point and serve its best plan");
  cmd->add_option("--out", opts->out, "Write DIR/sweep.csv, DIR/sweep.json and the chart DIR/sweep.png");
  cmd->add_flag("--json", so.json, "Print the sweep as JSON");
  cmd->callback([opts] { run_sweep_command(*opts); });
}

}  // namespace dayzero::cli
