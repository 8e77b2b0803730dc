// dayzero run [PLAN.json] --weights DIR [--prompt-tokens 1,2,3 | --prompt-len L]
// [--decode-steps K] [--out FILE] [--tp/--pp/--ep/--dp N]: runs a Plan on this
// process's ranks (one, or every rank of `mpirun -np N` for attention TP), prints the tokens and a timing table, and writes
// the Measurements. Without a plan file, the --tp/--pp/--ep/--dp plan is written
// beside the results.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/format.h"
#include "executor/communicator.h"
#include "executor/mpi_communicator.h"
#include "executor/runner.h"
#include "simulate/plan_json.h"

namespace dayzero::cli {

namespace {
struct RunCliOptions {
  std::string plan;
  std::string weights;
  std::vector<int64_t> prompt_tokens;
  int64_t prompt_len = 16;
  int64_t decode_steps = 8;
  std::string out = "measurements.json";
  int tp = 1, pp = 1, ep = 1, dp = 1;
  int iterations = 5;
};

// A reproducible prompt of `len` tokens (64-bit LCG, Knuth MMIX constants).
std::vector<int64_t> synthetic_prompt(int64_t len, int64_t vocab) {
  std::vector<int64_t> out;
  uint64_t s = 20240601;
  for (int64_t i = 0; i < len; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back(static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(vocab)));
  }
  return out;
}

simulate::Plan local_plan(const RunCliOptions& o, const model::Model& m, int64_t prompt, int64_t decode) {
  simulate::Plan p;
  p.model = m.config.source;
  p.cluster = "local";
  p.pp = o.pp;
  p.attention = {o.tp, o.dp};
  if (m.config.is_moe()) {
    const int ranks = o.tp * o.dp;
    if (ranks % o.ep != 0)
      throw std::runtime_error("--ep " + std::to_string(o.ep) + " does not divide --tp x --dp = " + std::to_string(ranks));
    p.moe = {1, o.ep, ranks / o.ep};
  } else if (o.ep != 1) {
    throw std::runtime_error("--ep " + std::to_string(o.ep) + ": the model has no experts");
  }
  p.workload.input_len = prompt;
  p.workload.output_len = decode + 1;
  p.dtypes.kv_cache = "bf16";  // recorded; the CPU backend keeps float32
  return p;
}

std::string us(double s) { return fixed(s * 1e6, 1); }

void print_table(const executor::RunResult& r) {
  const auto& ms = r.measurements;
  std::cout << "generated tokens:";
  for (int64_t t : r.tokens) std::cout << ' ' << t;
  std::cout << "\nprefill " << fixed(ms.prefill_s * 1e3, 3) << " ms (" << ms.prompt.size() << " tokens), decode "
            << fixed(ms.decode_step_mean_s() * 1e3, 3) << " ms/step (" << ms.decode_step_s.size() << " steps)\npeak "
            << with_commas(ms.memory.peak_bytes()) << " bytes (weights " << with_commas(ms.memory.weights_bytes)
            << " + KV " << with_commas(ms.memory.kv_bytes) << " + workspace " << with_commas(ms.memory.workspace_bytes)
            << "); process RSS high-water " << with_commas(ms.memory.rss_hwm_bytes) << " bytes\n";
  if (ms.ops.empty()) return;
  std::vector<const executor::OpMeasurement*> ops;
  for (const auto& o : ms.ops) ops.push_back(&o);
  auto total = [](const executor::OpMeasurement* o) { return o->min_s * static_cast<double>(o->calls); };
  std::stable_sort(ops.begin(), ops.end(), [&](auto* a, auto* b) { return total(a) > total(b); });
  if (ops.size() > 12) ops.resize(12);
  std::cout << "\nops by total time (min x calls; " << ms.timing_iterations << " timed iterations after 1 warm-up):\n"
            << pad_right("phase", 8) << pad_right("op", 22) << pad_right("kind:variant", 26) << pad_right("shape", 12)
            << pad_left("calls", 6) << pad_left("mean us", 10) << pad_left("min us", 10) << pad_left("GFLOP/s", 9)
            << pad_left("GB/s", 8) << '\n';
  for (const auto* o : ops)
    std::cout << pad_right(o->phase, 8) << pad_right(o->name, 22) << pad_right(o->kind + ":" + o->variant, 26)
              << pad_right(executor::shape_string(o->shape), 12) << pad_left(std::to_string(o->calls), 6)
              << pad_left(us(o->mean_s), 10) << pad_left(us(o->min_s), 10) << pad_left(fixed(o->gflops(), 2), 9)
              << pad_left(fixed(o->gbps(), 2), 8) << '\n';
  if (ms.collectives.empty()) return;
  std::cout << "\ncollectives (nccl-tests sizes and bus factors; min of " << ms.timing_iterations
            << " timed iterations after 1 warm-up):\n"
            << pad_right("collective", 16) << pad_left("ranks", 6) << pad_left("bytes", 12) << pad_left("calls", 6)
            << pad_left("mean us", 10) << pad_left("min us", 10) << pad_left("algbw GB/s", 12) << pad_left("busbw GB/s", 12)
            << '\n';
  for (const auto& c : ms.collectives)
    std::cout << pad_right(c.collective, 16) << pad_left(std::to_string(c.ranks), 6)
              << pad_left(with_commas(c.size_bytes), 12) << pad_left(std::to_string(c.calls), 6)
              << pad_left(us(c.mean_s), 10) << pad_left(us(c.min_s), 10) << pad_left(fixed(c.algbw_GBps(), 3), 12)
              << pad_left(fixed(c.busbw_GBps(), 3), 12) << '\n';
}

void run_ranks(const RunCliOptions& o, executor::Communicator& comm);

// One rank unless launched by mpirun with more; then an error on any rank stops
// every rank (MPI_Abort after the one-line message), never a hang.
void run_run(const RunCliOptions& o) {
  if (!executor::launched_with_many_ranks()) {
    executor::SelfCommunicator comm;
    run_ranks(o, comm);
    return;
  }
#ifdef DAYZERO_HAVE_MPI
  executor::MpiCommunicator comm;
  try {
    run_ranks(o, comm);
  } catch (const std::exception& e) {
    std::cerr << "dayzero: rank " << comm.rank() << ": error: " << e.what() << std::endl;
    comm.abort(1);
  }
#else
  throw std::runtime_error("launched on several ranks, but this dayzero was built without MPI "
                           "(install libopenmpi-dev and rebuild)");
#endif
}

void run_ranks(const RunCliOptions& o, executor::Communicator& comm) {
  namespace fs = std::filesystem;
  const bool lead = comm.rank() == 0;  // rank 0 writes the files and prints
  const model::Model m = model::load_model(o.weights);
  const std::vector<int64_t> prompt =
      o.prompt_tokens.empty() ? synthetic_prompt(o.prompt_len, m.config.vocab_size) : o.prompt_tokens;
  simulate::Plan plan;
  std::string source = o.plan;
  if (!o.plan.empty()) {
    plan = simulate::load_plan(o.plan);
  } else {
    plan = local_plan(o, m, static_cast<int64_t>(prompt.size()), o.decode_steps);
    const fs::path out(o.out);
    const fs::path plan_file = out.parent_path() / (out.stem().string() + ".plan.json");
    source = plan_file.string();
    if (lead) {
      simulate::save_plan(plan_file, plan);
      std::cout << "plan written to " << source << '\n';
    }
  }
  executor::RunnerOptions ro;
  ro.timing_iterations = o.iterations;
  ro.plan_source = source;
  executor::Runner runner(m, plan, comm, o.weights, ro);
  const executor::RunResult r = runner.run(prompt, o.decode_steps);
  if (!lead) return;  // every rank holds the same tokens and logits; rank 0's measurements are written
  executor::save_measurements(o.out, r.measurements);
  print_table(r);
  std::cout << "measurements written to " << o.out << '\n';
}
}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunCliOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a plan for real on this machine's CPU: prefill, greedy decode, "
                                            "per-op timing; writes Measurements JSON");
  cmd->add_option("plan", opts->plan, "Plan file (from `plan`); without it, --tp/--pp/--ep/--dp build one");
  cmd->add_option("--weights", opts->weights, "Checkpoint directory (config.json + safetensors), real or from `synth`")
      ->required();
  auto* tokens = cmd->add_option("--prompt-tokens", opts->prompt_tokens, "Prompt token ids, comma-separated")
                     ->delimiter(',');
  cmd->add_option("--prompt-len", opts->prompt_len, "Length of a reproducible pseudo-random prompt")
      ->check(CLI::PositiveNumber)
      ->excludes(tokens);
  cmd->add_option("--decode-steps", opts->decode_steps, "Greedy decode steps after prefill")->check(CLI::NonNegativeNumber);
  cmd->add_option("--out", opts->out, "Measurements JSON to write (atomically)");
  cmd->add_option("--iterations", opts->iterations, "Timed iterations per op after one warm-up (0: no per-op timing)")
      ->check(CLI::NonNegativeNumber);
  for (auto [flag, v] : {std::pair{"--tp", &opts->tp}, {"--pp", &opts->pp}, {"--ep", &opts->ep}, {"--dp", &opts->dp}})
    cmd->add_option(flag, *v, "Parallel size of the local plan (no plan file)")->check(CLI::PositiveNumber);
  cmd->callback([opts] { run_run(*opts); });
}

}  // namespace dayzero::cli
