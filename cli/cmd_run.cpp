// dayzero run [PLAN.json] --weights DIR [--prompt-tokens 1,2,3 | --prompt-len L]
// [--batch B] [--decode-steps K] [--out FILE] [--tp/--pp/--ep/--dp N]
// [--collective-timeout SECONDS]: runs a Plan
// on this process's ranks (one, or every rank of `mpirun -np N`), prints the
// tokens and a timing table, and writes the Measurements of all ranks (gathered
// to rank 0). Without a plan file, the --tp/--pp/--ep/--dp plan is written beside
// the results.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "cli/backends.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/run_output.h"
#include "cli/run_precision.h"
#include "cli/test_hooks.h"
#include "core/json_fields.h"
#include "executor/communicator.h"
#include "executor/deadline.h"
#include "executor/mpi_communicator.h"
#include "executor/runner.h"
#include "model/checkpoint.h"
#include "plan/measurements.h"
#include "plan/plan_json.h"

#include <nlohmann/json.hpp>

namespace dayzero::cli {

namespace {

// The same checks as `check`, before a byte is run: weights that disagree with their
// config.json (a hidden size doubled, a vocabulary of 1) are refused, not executed.
void require_matching_checkpoint(const model::Model& m, const std::string& dir) {
  const model::CheckReport r = model::check_checkpoint(m, dir);
  if (r.ok()) return;
  std::string first;
  if (!r.file_errors.empty()) first = r.file_errors.front();
  else if (!r.misshaped.empty())
    first = "tensor " + r.misshaped.front().name + " has shape " + r.misshaped.front().found + ", the config needs " +
            r.misshaped.front().expected;
  else if (!r.wrong_dtype.empty())
    first = "tensor " + r.wrong_dtype.front().name + " is " + r.wrong_dtype.front().found + ", the config needs " +
            r.wrong_dtype.front().expected;
  else if (!r.missing.empty()) first = "tensor " + r.missing.front() + " is missing";
  else first = "tensor " + r.unexpected.front() + " is not in the config's model";
  throw std::runtime_error("--weights " + dir + ": the checkpoint does not match its config.json (" + first +
                           "); `dayzero check " + dir + "` lists every difference");
}
struct RunCliOptions {
  std::string plan;
  std::string weights;
  std::vector<int64_t> prompt_tokens;
  int64_t prompt_len = 16;
  int64_t batch = 0;  // sequences; 0 = the plan's workload batch, or one per DP replica
  int64_t decode_steps = 8;
  std::string out = "measurements.json";
  int tp = 1, pp = 1, ep = 1, dp = 1;
  int iterations = 5;
  int warmup = -1;  // untimed passes before the measured run; -1: the backend's default (warmup_passes_for)
  std::string backend = "cpu";
  std::string comm = "auto";                                            // under mpirun: cli/backends.h collectives_for
  double collective_timeout_s = executor::kDefaultCollectiveTimeout_s;  // under mpirun
  std::string kv_cache_dtype;  // "": the plan file's, else fp32 (the full-precision reference)
  bool check_precision = false;
};

// A GPU backend's first calls pay its libraries' start-up (cuBLASLt's algorithm search,
// the allocator's first blocks: session 29's first H200 run measured a 2-layer
// Llama-3.1-8B prefill at 81.6 ms of which 23 ms were kernels) and the engines warm up
// before serving (vLLM's profile run and CUDA-graph capture): one untimed pass on cuda.
// The CPU has no such start-up; its runs stay single-pass.
int warmup_passes_for(int asked, const std::string& backend) {
  if (asked >= 0) return asked;
  return backend == "cuda" ? 1 : 0;
}

// The most prompt tokens a run holds (batch x prompt length): 2^24 token ids
// (128 MiB), far past what the CPU executor prefills in a day.
constexpr int64_t kMaxRunPromptTokens = int64_t{1} << 24;

// A run's sizes, before any prompt is built: the batch's prompt tokens bounded, and
// each sequence's positions within the model's.
void check_run_size(int64_t batch, int64_t prompt_len, int64_t decode_steps, int64_t max_positions) {
  if (batch > kMaxRunPromptTokens / std::max<int64_t>(1, prompt_len))
    throw std::runtime_error("--batch " + std::to_string(batch) + " x prompt length " + std::to_string(prompt_len) +
                             " tokens is more than a run holds (" + std::to_string(kMaxRunPromptTokens) + " tokens)");
  if (max_positions > 0 && prompt_len + decode_steps > max_positions)
    throw std::runtime_error("prompt length " + std::to_string(prompt_len) + " + --decode-steps " +
                             std::to_string(decode_steps) + " exceed the model's max_position_embeddings " +
                             std::to_string(max_positions));
}

// A reproducible prompt of `len` tokens (64-bit LCG, Knuth MMIX constants);
// sequence i of a batch starts from its own seed.
std::vector<int64_t> synthetic_prompt(int64_t len, int64_t vocab, uint64_t sequence = 0) {
  std::vector<int64_t> out;
  uint64_t s = 20240601 + 7919 * sequence;
  for (int64_t i = 0; i < len; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    out.push_back(static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(vocab)));
  }
  return out;
}

plan::KvDtype kv_dtype_option(const std::string& text) {
  const auto d = plan::parse_kv_dtype(text);
  if (!d) throw std::runtime_error("--kv-cache-dtype '" + text + "': unknown (bf16, fp8, fp32)");
  return *d;
}

plan::Plan local_plan(const RunCliOptions& o, const model::Model& m, int64_t prompt, int64_t decode) {
  plan::Plan p;
  p.model = m.config.source;
  p.cluster = "local";
  p.pp = o.pp;
  p.attention = {o.tp, o.dp};
  if (m.config.is_moe()) {
    const int ranks = o.tp * o.dp;
    if (ranks % o.ep != 0)
      throw std::runtime_error("--ep " + std::to_string(o.ep) +
                               " does not divide --tp x --dp = " + std::to_string(ranks));
    p.moe = {1, o.ep, ranks / o.ep};
  } else if (o.ep != 1) {
    throw std::runtime_error("--ep " + std::to_string(o.ep) + ": the model has no experts");
  }
  p.workload.input_len = prompt;
  p.workload.output_len = decode + 1;
  p.dtypes.activations = plan::ActivationDtype::fp32;  // what the CPU backend computes in
  // The full-precision reference, unless --kv-cache-dtype says.
  p.dtypes.kv_cache = o.kv_cache_dtype.empty() ? plan::KvDtype::fp32 : kv_dtype_option(o.kv_cache_dtype);
  return p;
}

void run_ranks(const RunCliOptions& o, executor::Communicator& comm);

// One line, written at once (so mpirun does not interleave the ranks' messages).
void report(int rank, const std::exception& e) {
  std::cerr << ("dayzero: rank " + std::to_string(rank) + ": error: " + e.what() + "\n") << std::flush;
}

// One rank unless launched by mpirun with more; then an error on any rank stops
// every rank, never a hang: errors the ranks agreed on (a bad plan, a missing
// shard) end each rank normally with its message; any other error aborts the
// world (MPI_Abort after the rank's one-line message). A rank that hangs or dies
// mid-run leaves its peers waiting in a collective until --collective-timeout:
// then they fail with CollectiveTimeout naming it, and abort too (never
// MPI_Finalize, which would wait for the missing rank). No Measurements are
// written: rank 0 writes them (atomically) only after the last collective.
void run_run(const RunCliOptions& o) {
  if (!executor::launched_with_many_ranks()) {
    executor::SelfCommunicator comm;
    run_ranks(o, comm);
    return;
  }
#ifdef DAYZERO_HAVE_MPI
  executor::MpiCommunicator comm(o.collective_timeout_s);
  try {
    const auto nccl = collectives_for(o.comm, o.backend, comm, o.collective_timeout_s);  // null: MPI carries them
    run_ranks(o, nccl ? *nccl : static_cast<executor::Communicator&>(comm));
  } catch (const executor::AllRanksError& e) {  // every rank has it: stop normally
    report(comm.rank(), e);
    throw ExitStatus{1};
  } catch (const executor::CollectiveTimeout& e) {
    // The peers waiting on the same missing rank time out within moments of this
    // one; a short grace before the abort lets their messages out too, so the one
    // that names the hung rank itself is printed whichever rank timed out first.
    report(comm.rank(), e);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    comm.abort(1);
  } catch (const std::exception& e) {
    report(comm.rank(), e);
    comm.abort(1);
  }
#else
  throw std::runtime_error(
      "launched on several ranks, but this dayzero was built without MPI "
      "(install libopenmpi-dev and rebuild)");
#endif
}

// Before any work: the results must have somewhere to go.
void require_out_directory(const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute(fs::path(out)).parent_path();
  if (!fs::is_directory(dir))
    throw std::runtime_error("--out '" + out + "': directory '" + dir.string() + "' does not exist");
}

// Every rank reads and checks the checkpoint; the ranks agree on the outcome before any
// stops, so each names the error (a rank that failed alone and aborted the world could
// take its peers down before they printed theirs: CI's ASan run, session 29).
model::Model load_checked_model(const std::string& weights, executor::Communicator& comm) {
  std::optional<model::Model> loaded;
  std::string load_error;
  try {
    loaded = model::load_model(weights);
    require_matching_checkpoint(*loaded, weights);
  } catch (const std::exception& e) {
    load_error = e.what();
  }
  executor::raise_on_every_rank(comm, load_error);
  return std::move(*loaded);
}

// The batch's prompts: --prompt-tokens for each sequence, else each its own pseudo-random one.
std::vector<std::vector<int64_t>> run_prompts(const RunCliOptions& o, int64_t batch, int64_t vocab) {
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t i = 0; i < batch; ++i)
    prompts.push_back(o.prompt_tokens.empty() ? synthetic_prompt(o.prompt_len, vocab, static_cast<uint64_t>(i))
                                              : o.prompt_tokens);
  return prompts;
}

// Every rank's Measurements to every rank (as JSON text), joined; rank 0 writes
// them and prints the table. Each part travels as a one-rank Measurements (world_size
// 1: its own rank).
void gather_and_write(const RunCliOptions& o, executor::Communicator& comm, const plan::Measurements& measured,
                      const std::optional<plan::PrecisionCheck>& precision) {
  plan::Measurements part = measured;
  part.world_size = 1;
  const std::string mine = plan::measurements_to_json(part).dump();
  const auto all = comm.all_gather_bytes(std::as_bytes(std::span<const char>(mine.data(), mine.size())));
  if (comm.rank() != 0) return;
  std::vector<plan::Measurements> ranks;
  for (size_t k = 0; k < all.size(); ++k) {
    const std::string part_name = "rank " + std::to_string(k) + "'s measurements";
    ranks.push_back(plan::measurements_from_json(
        core::parse_json_text(std::string_view(reinterpret_cast<const char*>(all[k].data()), all[k].size()), part_name),
        part_name));
  }
  plan::Measurements ms = plan::merge_rank_measurements(ranks);
  ms.precision_check = precision;
  plan::save_measurements(o.out, ms);
  print_run(std::cout, ms);
  if (ms.precision_check) print_precision(*ms.precision_check);
  std::cout << "measurements written to " << o.out << '\n';
}

void run_ranks(const RunCliOptions& o, executor::Communicator& comm) {
  namespace fs = std::filesystem;
  const bool lead = comm.rank() == 0;              // rank 0 writes the files and prints
  auto before_step = test_hang_hook(comm.rank());  // test-only; empty in normal use
  require_out_directory(o.out);
  const model::Model m = load_checked_model(o.weights, comm);
  plan::Plan plan;
  std::string source = o.plan;
  if (!o.plan.empty()) plan = plan::load_plan(o.plan);
  if (!o.plan.empty() && !o.kv_cache_dtype.empty()) plan.dtypes.kv_cache = kv_dtype_option(o.kv_cache_dtype);
  // Sequences: --batch, else the plan file's workload batch, else one per DP replica.
  const int64_t batch = o.batch > 0 ? o.batch : !o.plan.empty() ? plan.workload.batch : o.dp;
  const int64_t prompt_len = o.prompt_tokens.empty() ? o.prompt_len : static_cast<int64_t>(o.prompt_tokens.size());
  check_run_size(batch, prompt_len, o.decode_steps, m.config.max_position_embeddings);
  std::vector<std::vector<int64_t>> prompts = run_prompts(o, batch, m.config.vocab_size);
  if (o.plan.empty()) {
    plan = local_plan(o, m, static_cast<int64_t>(prompts[0].size()), o.decode_steps);
    plan.workload.batch = batch;
    const fs::path out(o.out);
    const fs::path plan_file = out.parent_path() / (out.stem().string() + ".plan.json");
    source = plan_file.string();
    if (lead) {
      plan::save_plan(plan_file, plan);
      std::cout << "plan written to " << source << '\n';
    }
  }
  executor::RunnerOptions ro;
  ro.timing_iterations = o.iterations;
  ro.plan_source = source;
  ro.keep_logits = o.check_precision;  // the comparison reads every row's logits
  ro.backend = o.backend;
  ro.warmup_passes = warmup_passes_for(o.warmup, o.backend);
  ro.before_step = std::move(before_step);
  executor::RunResult r;
  {  // the run, then (with --check-precision) the reference with the candidate's weights freed
    executor::Runner runner(m, plan, comm, o.weights, ro);
    if (lead) print_weight_conversions(plan, ro.backend);
    r = runner.run(prompts, o.decode_steps);
  }
  std::optional<plan::PrecisionCheck> precision;
  if (o.check_precision) precision = check_precision(m, plan, ro, o.weights, comm, prompts, o.decode_steps, r);
  gather_and_write(o, comm, r.measurements, precision);
}
}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<RunCliOptions>();
  CLI::App* cmd = app.add_subcommand("run",
                                     "Run a plan for real on this machine's CPU: prefill, greedy decode, "
                                     "per-op timing; writes Measurements JSON");
  cmd->add_option("plan", opts->plan, "Plan file (from `plan`); without it, --tp/--pp/--ep/--dp build one");
  cmd->add_option("--weights", opts->weights, "Checkpoint directory (config.json + safetensors), real or from `synth`")
      ->required();
  auto* tokens =
      cmd->add_option("--prompt-tokens", opts->prompt_tokens, "Prompt token ids, comma-separated")->delimiter(',');
  cmd->add_option("--prompt-len", opts->prompt_len, "Length of a reproducible pseudo-random prompt")
      ->check(CLI::Range(int64_t{1}, plan::kMaxSequenceTokens))
      ->excludes(tokens);
  cmd->add_option("--batch", opts->batch,
                  "Sequences run together (each the prompt, or its own pseudo-random one); default: the plan's "
                  "workload batch, or --dp")
      ->check(CLI::Range(int64_t{1}, plan::kMaxBatch));
  cmd->add_option("--decode-steps", opts->decode_steps, "Greedy decode steps after prefill")
      ->check(CLI::Range(int64_t{0}, plan::kMaxSequenceTokens));
  cmd->add_option("--out", opts->out, "Measurements JSON to write (atomically)");
  cmd->add_option("--backend", opts->backend, "Kernels to run on (`dayzero check` lists each backend's coverage)");
  cmd->add_option("--comm", opts->comm,
                  "Under mpirun, what carries the collectives: mpi (host memory; several ranks may share a GPU), "
                  "nccl (GPU to GPU; --backend cuda), auto (nccl when the backend is cuda and every rank has a GPU "
                  "of its own, else mpi)")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "KV cache element type the run stores: fp32 (the default without a plan file: the "
                  "full-precision reference), bf16 or fp8 (E4M3); overrides the plan file's dtypes.kv_cache");
  cmd->add_flag("--check-precision", opts->check_precision,
                "Also run the plan's weights at full precision (as the checkpoint stores them, fp32 KV cache) on "
                "the same prompts and report the run's logit KL divergence, top-1 agreement and max |diff| "
                "against it (Measurements: precision_check)");
  cmd->add_option("--iterations", opts->iterations, "Timed iterations per op after one warm-up (0: no per-op timing)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--warmup", opts->warmup,
                  "Untimed passes (the prompts' prefill and one decode step) before the measured run, as the "
                  "engines warm up before serving (default: 1 on cuda, 0 on cpu)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--collective-timeout", opts->collective_timeout_s,
                  "Under mpirun: seconds any one collective or transfer may wait for the other ranks before the "
                  "run stops with an error naming the missing rank (default 600, PyTorch's NCCL default)")
      ->check(CLI::Validator(
          [](std::string& text) {
            double v = 0;
            try {
              size_t used = 0;
              v = std::stod(text, &used);
              if (used != text.size()) return std::string("not a number of seconds: '" + text + "'");
            } catch (const std::exception&) {
              return std::string("not a number of seconds: '" + text + "'");
            }
            return executor::collective_timeout_problem(v);
          },
          "SECONDS", "collective timeout"));
  for (auto [flag, v] : {std::pair{"--tp", &opts->tp}, {"--pp", &opts->pp}, {"--ep", &opts->ep}, {"--dp", &opts->dp}})
    cmd->add_option(flag, *v, "Parallel size of the local plan (no plan file)")->check(CLI::PositiveNumber);
  cmd->callback([opts] { run_run(*opts); });
}

}  // namespace dayzero::cli
