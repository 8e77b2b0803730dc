// dayzero report [SCENARIO] --out DIR: the release-day memo of a scenario as one
// Markdown page with its charts — the chosen plan and the runners-up, what the model
// needs at minimum, memory per device, latency / throughput curves and the launch
// commands of every engine (report/release_report.h).
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/gui_render.h"
#include "core/data_dir.h"
#include "report/release_report.h"

namespace dayzero::cli {

namespace {

struct ReportOptions {
  std::string scenario, out, catalog, engine;
};

void run_report(const ReportOptions& o) {
  namespace fs = std::filesystem;
  const fs::path scenario_file =
      search::resolve_scenario(o.scenario.empty() ? "deepseek-v3-h200-2x8" : o.scenario, core::data_dir());
  const report::Inputs in = report::prepare(scenario_file, o.catalog, o.engine);
  const fs::path dir(o.out);
  fs::create_directories(dir);
  std::vector<std::string> args = {"--render-report", scenario_file.string(), "--out", dir.string()};
  if (!o.engine.empty()) args.insert(args.end(), {"--engine", o.engine});
  bool charts = false;
  if (o.catalog.empty()) charts = draw_with_gui(args, "report: memory.png, pareto.png, sweep.png");
  else std::cerr << "report: charts not drawn with --catalog (dayzero-gui reads the shipped catalog only)\n";
  report::write_report(in, dir, charts);
  std::cout << "wrote " << (dir / "report.md").string() << (charts ? " with memory.png, pareto.png, sweep.png" : "")
            << ", sweep.json and plan.json (" << in.search.candidates << " plans considered)\n";
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "A release-day report of a scenario: one Markdown page with charts, the chosen plan and runners-up, "
      "minimum needs, memory, curves and launch commands");
  cmd->add_option("scenario", opts->scenario, "Scenario (default: deepseek-v3-h200-2x8)");
  cmd->add_option("--out", opts->out, "Directory to write report.md and its charts to")->required();
  cmd->add_option("--engine", opts->engine, "Engine the curves are served with (default: the scenario's, else vllm)");
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file");
  cmd->callback([opts] { run_report(*opts); });
}

}  // namespace dayzero::cli
