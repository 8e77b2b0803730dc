// dayzero synth CONFIG --out DIR [--layers N] [--no-mtp] [--seed S]: a random-weight
// checkpoint at the model's real shapes, dtypes and names.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/format.h"
#include "model/synth.h"

namespace dayzero::cli {

namespace {
struct SynthCliOptions {
  std::string config;
  std::string out;
  int64_t layers = 0;
  bool no_mtp = false;
  uint64_t seed = 0;
  double shard_gb = 5.0;
};

void run_synth(const SynthCliOptions& o) {
  model::SynthOptions so;
  so.layers = o.layers;
  so.drop_mtp = o.no_mtp;
  so.seed = o.seed;
  so.max_shard_bytes = static_cast<int64_t>(o.shard_gb * 1e9);
  const auto r = model::write_synthetic_checkpoint(resolve_model_path(o.config), o.out, so);
  std::cout << "wrote " << with_commas(r.tensors) << " tensors, " << gb_and_gib(r.bytes) << ", in " << r.files.size()
            << " file(s) to " << o.out << '\n';
}
}  // namespace

void add_synth_command(CLI::App& app) {
  auto opts = std::make_shared<SynthCliOptions>();
  CLI::App* cmd = app.add_subcommand("synth",
                                     "Write a checkpoint of random weights at a model's real shapes, "
                                     "dtypes and Hugging Face names");
  cmd->add_option("config", opts->config, "config.json, a model directory, or a bundled model name")->required();
  cmd->add_option("--out", opts->out, "Output directory (created)")->required();
  cmd->add_option("--layers", opts->layers, "Keep only the first N decoder layers")->check(CLI::PositiveNumber);
  cmd->add_flag("--no-mtp", opts->no_mtp,
                "Leave the multi-token-prediction layers out (config and weights): runs without drafts");
  cmd->add_option("--seed", opts->seed, "Seed of the random values (same seed, same bytes)");
  cmd->add_option("--shard-gb", opts->shard_gb, "Largest shard in GB (1e9 bytes), as huggingface_hub's max_shard_size")
      ->check(CLI::PositiveNumber);
  cmd->callback([opts] { run_synth(*opts); });
}

}  // namespace dayzero::cli
