#pragma once
// Internal to cli/: what `export` and `import` share — the plan (a Plan file, or the
// best plan of a scenario), its model and cluster, the engine settings, and the model
// id an engine loads.

#include <CLI/CLI.hpp>
#include <string>

#include "cli/serve_cli.h"
#include "deploy/launch.h"

namespace dayzero::cli::deploy_cli {

struct TargetOptions {
  std::string plan;      // a Plan file; its "model" and "cluster" name them unless given
  std::string scenario;  // else: the best plan of this scenario (default deepseek-v3-h200-2x8)
  std::string model, cluster, catalog, engine_settings_file;
};
void add_target_options(CLI::App* cmd, TargetOptions& o);

struct Target {
  serve_cli::Served served;
  plan::EngineSettings settings;  // the scenario's, then the file's
  std::string default_model_id;   // the bundled model's Hugging Face id ("" if not bundled)
};
Target load_target(const TargetOptions& o);

plan::Engine parse_engine_option(const std::string& s);

}  // namespace dayzero::cli::deploy_cli
