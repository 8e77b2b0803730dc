// export's and import's shared loading (deploy_cli.h).
#include "cli/deploy_cli.h"

#include <stdexcept>

#include "cli/format.h"
#include "core/data_dir.h"
#include "plan/plan_json.h"

namespace dayzero::cli::deploy_cli {

void add_target_options(CLI::App* cmd, TargetOptions& o) {
  cmd->add_option("plan", o.plan, "Plan JSON file (from dayzero plan --out); default: the scenario's best plan");
  cmd->add_option("--scenario", o.scenario, "Scenario whose best plan is used (default: deepseek-v3-h200-2x8)");
  cmd->add_option("--model", o.model,
                  "With a plan: config.json, model directory or bundled model (default: the plan's)");
  cmd->add_option("--cluster", o.cluster, "With a plan: cluster JSON or bundled cluster name (default: the plan's)");
  cmd->add_option("--catalog", o.catalog, "Extra device catalog JSON file");
  cmd->add_option("--engine-settings", o.engine_settings_file, "Engine settings JSON (plan/engine_settings.h)");
}

Target load_target(const TargetOptions& o) {
  serve_cli::ServeCliOptions so;
  so.scenario = o.scenario;
  so.catalog = o.catalog;
  so.engine_settings_file = o.engine_settings_file;
  if (!o.plan.empty()) {
    if (!o.scenario.empty()) throw std::runtime_error("give a plan file or --scenario, not both");
    const plan::Plan p = plan::load_plan(o.plan);
    so.plan = o.plan;
    so.model = o.model.empty() ? p.model : o.model;
    so.cluster = o.cluster.empty() ? p.cluster : o.cluster;
    if (so.model.empty()) throw std::runtime_error(o.plan + ": the plan names no model: give --model");
    if (so.cluster.empty()) throw std::runtime_error(o.plan + ": the plan names no cluster: give --cluster");
  }
  Target t;
  t.served = serve_cli::load_served(so);
  t.settings = serve_cli::engine_settings(so, t.served.session.get());
  const std::string model_path =
      t.served.session ? t.served.session->scenario.model_path.string() : resolve_model_path(so.model).string();
  t.default_model_id = deploy::hf_id_of(core::data_dir(), model_path);
  return t;
}

plan::Engine parse_engine_option(const std::string& s) {
  const auto e = plan::parse_engine(s);
  if (!e) throw std::runtime_error("--engine: \"" + s + "\" is not one of vllm, sglang, trtllm");
  return *e;
}

}  // namespace dayzero::cli::deploy_cli
