// dayzero export [PLAN.json | --scenario S] --engine vllm|sglang|trtllm: the launch of
// a plan for an engine (deploy/launch.h) — every node's command, the files they read
// and what the user must still supply — printed, or written as a directory. With
// --run-job instead: `dayzero run` of the plan as a Slurm job or an mpirun over a host
// file (deploy/run_job.h).
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/deploy_cli.h"
#include "core/atomic_file.h"
#include "core/data_dir.h"
#include "deploy/run_job.h"
#include "plan/plan_json.h"

namespace dayzero::cli {

namespace {

struct ExportCliOptions {
  deploy_cli::TargetOptions target;
  std::string engine, out;
  deploy::ExportOptions launch;
  deploy::RunJobOptions job;
  bool run_job = false;
  bool json = false;
};

// `dayzero run` of the plan as a Slurm job and as a plain mpirun over a host file.
void export_run_job(const ExportCliOptions& o, const deploy_cli::Target& t) {
  const deploy::RunJob j = deploy::run_job(t.served.plan, t.served.c(), o.job);
  std::ostringstream out;
  if (o.out.empty()) {
    out << j.slurm << "\n# Without Slurm: this host file, then\n# " << j.mpirun << "\n";
    std::istringstream hosts(j.hostfile);
    for (std::string line; std::getline(hosts, line);) out << "#   " << line << '\n';
  } else {
    namespace fs = std::filesystem;
    const fs::path dir(o.out);
    fs::create_directories(dir);
    core::write_file_atomically(dir / "run.sbatch", j.slurm, "the Slurm script");
    core::write_file_atomically(dir / "hostfile", j.hostfile, "the MPI host file");
    core::write_file_atomically(dir / "mpirun.sh", "#!/bin/bash\n" + j.mpirun + "\n", "the mpirun script");
    core::write_file_atomically(dir / "plan.json", plan::plan_to_json(t.served.plan).dump(2) + "\n", "the plan");
    out << "wrote " << (dir / "run.sbatch").string() << " (" << j.nodes << " node(s) x " << j.ranks_per_node
        << " rank(s)), hostfile, mpirun.sh and plan.json\n";
  }
  std::cout << out.str() << std::flush;
}

nlohmann::json launch_json(const deploy::Launch& l) {
  nlohmann::json cmds = nlohmann::json::array();
  for (const auto& c : l.commands)
    cmds.push_back({{"node", c.node}, {"host", c.host}, {"role", c.role}, {"comment", c.comment}, {"line", c.line()}});
  nlohmann::json files = nlohmann::json::object();
  for (const auto& f : l.files) files[f.name] = f.text();
  return {{"engine", plan::engine_name(l.engine)},
          {"engine_version", l.engine_version},
          {"commands", cmds},
          {"files", files},
          {"notes", l.notes}};
}

void run_export(const ExportCliOptions& o) {
  if (o.run_job == !o.engine.empty())
    throw std::runtime_error("export needs --engine (an engine's launch) or --run-job (dayzero run's), one of them");
  const deploy_cli::Target t = deploy_cli::load_target(o.target);
  if (o.run_job) return export_run_job(o, t);
  const plan::Engine engine = deploy_cli::parse_engine_option(o.engine);
  deploy::ExportOptions eo = o.launch;
  if (eo.model_id.empty()) eo.model_id = t.default_model_id;
  const deploy::EngineArgs args = deploy::EngineArgs::pinned(engine, core::data_dir());
  const deploy::Launch l =
      deploy::export_launch(engine, t.served.plan, t.served.m(), t.served.c(), t.settings, eo, args);
  std::ostringstream out;
  if (!o.out.empty()) {
    namespace fs = std::filesystem;
    const fs::path dir(o.out);
    l.write_to(dir);
    core::write_file_atomically(dir / "plan.json", plan::plan_to_json(t.served.plan).dump(2) + "\n", "the plan");
    core::write_file_atomically(dir / "launch.json", launch_json(l).dump(2) + "\n", "the launch as JSON");
    out << "wrote " << (dir / "launch.sh").string() << " (" << l.commands.size() << " command(s))";
    for (const auto& f : l.files) out << ", " << (dir / f.name).string();
    out << ", plan.json and launch.json\n";
  } else if (o.json) {
    out << launch_json(l).dump(2) << '\n';
  } else {
    out << "# " << t.served.plan_source << "\n";
    out << l.script();
  }
  std::cout << out.str() << std::flush;
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto opts = std::make_shared<ExportCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("export",
                         "The launch commands of a plan for vLLM, SGLang or TensorRT-LLM: every node's command line, "
                         "checked against the engine's own argument list");
  deploy_cli::add_target_options(cmd, opts->target);
  cmd->add_option("--engine", opts->engine, "vllm, sglang or trtllm");
  cmd->add_flag("--run-job", opts->run_job,
                "Instead: a Slurm script and an mpirun host file running the plan with `dayzero run`");
  cmd->add_option("--weights", opts->job.weights, "--run-job: the checkpoint directory the ranks read");
  cmd->add_option("--backend", opts->job.backend, "--run-job: dayzero run's backend (default cpu)");
  cmd->add_option("--model-id", opts->launch.model_id,
                  "What the engine loads (Hugging Face id or checkpoint path); default: the bundled model's id");
  cmd->add_option("--draft-model-id", opts->launch.draft_model_id, "The draft model of an EAGLE plan");
  cmd->add_option("--head-addr", opts->launch.head_addr, "Address of the first node (default: its cluster name)");
  cmd->add_option("--port", opts->launch.port, "Serving port (workers on one node count up)")
      ->check(CLI::Range(1, 65000));
  cmd->add_flag("--prequantized", opts->launch.prequantized,
                "The model id is a checkpoint already stored at the plan's precisions");
  cmd->add_option("--out", opts->out, "Write launch.sh, its files, plan.json and launch.json to this directory");
  cmd->add_flag("--json", opts->json, "The launch as JSON");
  cmd->callback([opts] { run_export(*opts); });
}

}  // namespace dayzero::cli
