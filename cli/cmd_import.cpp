// dayzero import --engine E [--scenario S | --cluster C] -- <the engine's command line>:
// the Plan an existing deployment is (deploy/launch.h), simulated and served as the
// engine would run it, against the best plan the search finds on the same GPUs for
// the same workload, with that plan's command.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/deploy_cli.h"
#include "cli/format.h"
#include "core/atomic_file.h"
#include "core/data_dir.h"
#include "core/input_file.h"
#include "plan/plan_json.h"
#include "report/served_plan.h"
#include "search/search.h"
#include "search/session.h"
#include "serve/calibration_files.h"
#include "serve/engine_settings.h"
#include "simulate/precisions.h"

namespace dayzero::cli {

namespace {

struct ImportCliOptions {
  std::string engine, scenario, model, cluster, catalog, yaml, out, weights;
  int64_t input_len = 0, output_len = 0;
  double max_ttft_s = 0, max_tpot_s = 0;
  std::vector<std::string> command;
  bool json = false, no_compare = false;
};

// The session the deployment is judged in: a scenario's, or one made of the model, the
// cluster and the workload flags.
search::Session session_for(const ImportCliOptions& o, const std::string& model_id) {
  search::Scenario s;
  if (!o.scenario.empty()) {
    s = search::load_scenario(search::resolve_scenario(o.scenario, core::data_dir()));
  } else {
    if (o.cluster.empty())
      throw std::runtime_error("import needs the GPUs the deployment runs on: --cluster or --scenario");
    s.name = "import";
    std::string model = o.model;
    if (model.empty()) model = deploy::bundled_model_of(core::data_dir(), model_id);
    if (model.empty())
      throw std::runtime_error("the command's model \"" + model_id +
                               "\" is not a bundled model: give its config.json with --model");
    s.model_path = resolve_model_path(model);
    s.cluster_path = resolve_cluster_path(o.cluster);
    s.workload.input_len = 2048;
    s.workload.output_len = 512;
  }
  if (o.input_len > 0) s.workload.input_len = o.input_len;
  if (o.output_len > 0) s.workload.output_len = o.output_len;
  if (o.max_ttft_s > 0) s.sla.max_ttft_s = o.max_ttft_s;
  if (o.max_tpot_s > 0) s.sla.max_tpot_s = o.max_tpot_s;
  return search::make_session(std::move(s), core::data_dir(), o.catalog);
}

// Seconds as "12.3 ms".
std::string ms_label(double s) { return fixed(s * 1e3, 1) + " ms"; }

void print_served(std::ostream& out, const std::string& title, const plan::Plan& p, const serve::ServeResult& r) {
  out << "  " << pad_right(title, 16) << pad_left(std::to_string(p.devices_used()), 5) << " GPUs  batch "
      << pad_left(std::to_string(p.workload.batch), 5) << "   TTFT mean " << pad_left(ms_label(r.ttft_s.mean), 10)
      << " p90 " << pad_left(ms_label(r.ttft_s.p90), 10) << "   TPOT mean " << pad_left(ms_label(r.tpot_s.mean), 9)
      << " p90 " << pad_left(ms_label(r.tpot_s.p90), 9) << "   "
      << fixed(r.output_tokens_per_s / static_cast<double>(p.devices_used()), 0) << " tok/s per GPU\n";
}

// The deployment's command line as a plan on the session's cluster, at the workload of
// `base`, checked as a plan file would be.
deploy::Imported import_deployment(const ImportCliOptions& o, plan::Engine engine, const deploy::EngineArgs& args,
                                   const search::Session& session, const plan::Plan& base) {
  std::optional<std::string> yaml;
  if (!o.yaml.empty()) yaml = core::read_input_file(o.yaml);
  deploy::Imported im = deploy::import_launch(engine, o.command, base, session.model, session.cluster, args, yaml);
  if (!o.weights.empty()) {
    // The command loads a quantized checkpoint the bundled config does not describe.
    const auto w = search::parse_weight_choice(o.weights);
    if (!w) throw std::runtime_error("--weights: \"" + o.weights + "\" is not a weight choice (fp8, int8, nvfp4, ...)");
    search::apply_weight_choice(im.plan, *w);
  }
  plan::validate_plan(im.plan, session.model, session.cluster.num_devices(), "the command line");
  simulate::validate_plan_precisions(im.plan, session.cluster.device_spec(), "the command line");
  return im;
}

nlohmann::json served_json(const serve::ServeResult& r) {
  return {{"ttft_s", r.ttft_s.mean}, {"tpot_s", r.tpot_s.mean}, {"output_tokens_per_s", r.output_tokens_per_s}};
}

// The imported plan in words: its layout, precisions and batch, and the flags kept as the engine's.
void describe_deployment(std::ostream& out, plan::Engine engine, const deploy::Imported& im,
                         const search::Session& session) {
  out << "Your deployment (" << engine_name(engine) << ", " << im.model_id << ") is the plan: pp " << im.plan.pp
      << ", attention tp " << im.plan.attention.tp << " x dp " << im.plan.attention.dp;
  if (session.model.config.is_moe())
    out << ", experts tp " << im.plan.moe.tp << " x ep " << im.plan.moe.ep << " x dp " << im.plan.moe.dp;
  out << "; KV " << plan::kv_dtype_name(im.plan.dtypes.kv_cache) << ", weights "
      << (im.plan.dtypes.experts == model::WeightPrecision::checkpoint
              ? std::string("as the checkpoint stores them")
              : std::string(model::precision_name(im.plan.dtypes.experts)))
      << ", batch " << im.plan.workload.batch << '\n';
  if (!im.other.empty()) {
    out << "  kept as the engine's (not modelled):";
    for (const auto& f : im.other) out << ' ' << f;
    out << '\n';
  }
}

// The best plan's launch lines and files, or why the engine cannot express it.
void print_best_launch(std::ostream& out, plan::Engine engine, const plan::Plan& best, const search::Session& session,
                       const std::string& model_id, const deploy::EngineArgs& args) {
  deploy::ExportOptions eo;
  eo.model_id = model_id;
  try {
    const deploy::Launch l =
        deploy::export_launch(engine, best, session.model, session.cluster, session.scenario.engine, eo, args);
    for (const auto& c : l.commands) out << "  [node " << c.node << "] " << c.line() << '\n';
    for (const auto& f : l.files) out << "  " << f.name << ":\n" << f.text();
  } catch (const deploy::Unexpressible& e) {
    out << "  " << e.what() << '\n';
  }
}

// The best plan the search finds on the same GPUs, served beside the deployment (`mine`),
// with its launch; into j["best"] too.
void compare_with_best(std::ostream& out, nlohmann::json& j, plan::Engine engine, const deploy::EngineArgs& args,
                       const std::string& model_id, const search::Session& session, simulate::Simulator& sim,
                       const serve::ServingCalibration& cal, const deploy::Imported& im,
                       const serve::ServeResult& mine) {
  search::SearchOptions so;  // plans the engine can hold at their batch
  plan::EngineSettings searched = session.scenario.engine;
  searched.engine = engine;
  so.engine_memory = serve::engine_memory_rules(searched, session.model, session.cluster.device_spec());
  so.kernels = serve::engine_kernels(searched);
  const search::SearchResult r =
      search::run_search(session.scenario, session.model, session.cluster, session.efficiency, so);
  if (!r.feasible()) {
    out << "  the search finds no plan that fits and meets the SLA on " << session.cluster.name() << '\n';
    return;
  }
  const search::Evaluated& best = r.all[r.top.front()];
  const serve::ServeResult theirs =
      report::serve_planned(sim, session, best.plan, engine, cal.engines, session.scenario.engine);
  print_served(out, "best plan", best.plan, theirs);
  const int64_t copies = im.plan.devices_used() / best.plan.devices_used();
  if (copies > 1)
    out << "  (the best plan takes " << best.plan.devices_used() << " of your " << im.plan.devices_used()
        << " GPUs: " << copies << " copies of it serve "
        << fixed(theirs.output_tokens_per_s * static_cast<double>(copies), 0) << " tok/s where your deployment serves "
        << fixed(mine.output_tokens_per_s, 0) << ")\n";
  out << "\nBest plan on the same GPUs: " << search::layout_name(best) << "; its " << engine_name(engine)
      << " launch:\n";
  print_best_launch(out, engine, best.plan, session, model_id, args);
  j["best"] = {
      {"layout", search::layout_name(best)}, {"plan", plan::plan_to_json(best.plan)}, {"served", served_json(theirs)}};
}

void run_import(const ImportCliOptions& o) {
  const plan::Engine engine = deploy_cli::parse_engine_option(o.engine);
  if (o.command.empty()) throw std::runtime_error("give the engine's command line after --");
  const deploy::EngineArgs args = deploy::EngineArgs::pinned(engine, core::data_dir());
  const std::string model_id = deploy::model_id_of(engine, o.command, args);
  search::Session session = session_for(o, model_id);
  plan::Plan base;
  base.model = session.scenario.model_path.string();
  base.cluster = session.cluster.name();
  base.workload = session.scenario.workload;
  const deploy::Imported im = import_deployment(o, engine, args, session, base);

  std::ostringstream out;
  if (!o.out.empty()) {
    core::write_file_atomically(o.out, plan::plan_to_json(im.plan).dump(2) + "\n", "the imported plan");
    out << "wrote " << o.out << '\n';
  }
  const serve::ServingCalibration cal = serve::load_serving_calibration(core::data_dir(), "");
  simulate::Simulator sim(session.model, session.cluster, session.efficiency);
  plan::EngineSettings settings = session.scenario.engine;
  settings.merge(im.settings);
  const serve::ServeResult mine = report::serve_planned(sim, session, im.plan, engine, cal.engines, settings);
  nlohmann::json j = {{"plan", plan::plan_to_json(im.plan)},
                      {"model_id", im.model_id},
                      {"other_flags", im.other},
                      {"served", served_json(mine)}};
  describe_deployment(out, engine, im, session);
  out << "\nServed by DayZero's " << engine_name(engine) << " simulation at each plan's batch (ISL "
      << base.workload.input_len << ", OSL " << base.workload.output_len << ", on " << session.cluster.name() << "):\n";
  print_served(out, "your deployment", im.plan, mine);
  if (!o.no_compare) compare_with_best(out, j, engine, args, model_id, session, sim, cal, im, mine);
  if (o.json) std::cout << j.dump(2) << '\n' << std::flush;
  else std::cout << out.str() << std::flush;
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto opts = std::make_shared<ImportCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "The plan an existing vLLM / SGLang / TensorRT-LLM launch is, served, and compared with the best "
      "plan on the same GPUs: dayzero import --engine vllm --cluster h100x8 -- vllm serve MODEL ...");
  cmd->add_option("--engine", opts->engine, "vllm, sglang or trtllm")->required();
  cmd->add_option("--scenario", opts->scenario, "Scenario giving the model, cluster, workload and SLA");
  cmd->add_option("--model", opts->model, "config.json, model directory or bundled model (default: the command's)");
  cmd->add_option("--cluster", opts->cluster, "Cluster JSON or bundled cluster name the deployment runs on");
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file");
  cmd->add_option("--weights", opts->weights,
                  "The precision of the checkpoint the command loads, when it is a quantized copy of the model "
                  "(fp8, int8, int8_w8a16, int4, nvfp4): the plan's weights");
  cmd->add_option("--yaml", opts->yaml, "TensorRT-LLM extra-options YAML (default: the file its flag names)");
  cmd->add_option("--input-len", opts->input_len, "Prompt tokens (default: the scenario's, else 2048)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxSequenceTokens));
  cmd->add_option("--output-len", opts->output_len, "Output tokens (default: the scenario's, else 512)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxSequenceTokens));
  cmd->add_option("--max-ttft", opts->max_ttft_s, "SLA on TTFT for the best plan, seconds")->check(CLI::PositiveNumber);
  cmd->add_option("--max-tpot", opts->max_tpot_s, "SLA on TPOT for the best plan, seconds")->check(CLI::PositiveNumber);
  cmd->add_option("--out", opts->out, "Write the imported Plan JSON here");
  cmd->add_flag("--no-compare", opts->no_compare, "Only import and serve the deployment (no search)");
  cmd->add_flag("--json", opts->json, "JSON output");
  cmd->add_option("command", opts->command, "The engine's command line, after --")->expected(-1);
  cmd->callback([opts] { run_import(*opts); });
}

}  // namespace dayzero::cli
