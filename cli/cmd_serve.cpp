// dayzero serve [SCENARIO] | --model M --cluster C --plan P: the request-level
// serving simulation of one plan (serve/simulation.h) under an engine's scheduler,
// at a concurrency (closed loop) or a request rate (Poisson): TTFT, TPOT, ITL and
// end-to-end latency as mean, p50, p90, p99, and throughput.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/serve_cli.h"
#include "topology/cluster_config.h"

namespace dayzero::cli {

namespace {

using namespace serve_cli;

void run_serve(const ServeCliOptions& o) {
  Served s = load_served(o);
  apply_speculative_flags(o, s);
  if (wants_disaggregated(o, s.plan)) return run_disaggregated(o, s);
  const serve::ServeOptions so = serve_options(o, s);
  simulate::Simulator sim(s.m(), s.c(), s.efficiency);
  serve::ServeResult r;
  try {
    r = serve::simulate_serving(sim, s.plan, so);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("serve: ") + e.what());
  }
  std::ostringstream out;
  if (o.json) out << result_json(r, so, s.engines.for_engine(so.engine.engine), s.plan.speculative).dump(2) << '\n';
  else print_result(out, s, so, r);
  std::cout << out.str() << std::flush;
}

// What is served: a scenario's best plan, or a plan file on a model and a cluster.
void add_plan_options(CLI::App* cmd, ServeCliOptions& o) {
  cmd->add_option("scenario", o.scenario, "Scenario (its best plan is served); default: deepseek-v3-h200-2x8");
  cmd->add_option("--model", o.model, "With --cluster and --plan: serve this plan");
  cmd->add_option("--cluster", o.cluster, "Cluster JSON file or bundled cluster name");
  cmd->add_option("--plan", o.plan, "Plan JSON file");
  cmd->add_option("--catalog", o.catalog, "Extra device catalog JSON file");
  cmd->add_option("--engine", o.engine, "vllm, sglang or trtllm (default: the scenario's engine, else vllm)");
}

// The requests: a closed loop, Poisson arrivals or a trace, and their lengths.
void add_load_options(CLI::App* cmd, ServeCliOptions& o) {
  auto* conc = cmd->add_option("--concurrency", o.concurrency, "Requests in flight (closed loop)")
                   ->check(CLI::Range(int64_t{1}, plan::kMaxBatch));
  auto* rate = cmd->add_option("--request-rate", o.rate, "Requests per second (Poisson arrivals)")
                   ->check(CLI::PositiveNumber)
                   ->excludes(conc);
  auto* trace = cmd->add_option("--trace", o.trace,
                                "Replay a request trace (open loop at its arrival times and lengths): a CSV of "
                                "arrival_s,input_len,output_len[,cached_prefix], an Azure LLM inference trace "
                                "(TIMESTAMP,ContextTokens,GeneratedTokens) or Mooncake JSON lines (serve/trace.h)")
                    ->excludes(conc)
                    ->excludes(rate);
  cmd->add_option("--trace-speed", o.trace_speed, "Replay the trace this many times faster (default 1)")
      ->check(CLI::Range(1e-3, 1e6))
      ->needs(trace);
  cmd->add_option("--requests", o.requests,
                  "Requests in all (default: max(1000, 4 x concurrency); with --trace, its first K)")
      ->check(CLI::Range(int64_t{1}, kMaxRequests));
  cmd->add_option("--input-len", o.input_len, "Prompt tokens (default: the plan's workload)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxSequenceTokens));
  cmd->add_option("--output-len", o.output_len, "Output tokens (default: the plan's workload)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxSequenceTokens));
  cmd->add_option("--random-range-ratio", o.range_ratio,
                  "Draw each request's prompt and output length uniformly in [ratio x length, length], as "
                  "benchmark_serving's random dataset does (default 1: every request at the full lengths)")
      ->check(CLI::Range(0.01, 1.0))
      ->excludes(trace);
}

// The engine's scheduler and memory, over its defaults.
void add_engine_options(CLI::App* cmd, ServeCliOptions& o) {
  cmd->add_option("--scheduler-recv-interval", o.recv_interval,
                  "Decode steps between the scheduler's looks for new requests, as SGLang's "
                  "--scheduler-recv-interval (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  cmd->add_option(
      "--engine-settings", o.engine_settings_file,
      "JSON file of engine settings over the engine's defaults and the scenario's \"engine\" object "
      "(name, token_budget, max_running, memory_fraction, policy, chunked_prefill, prefix_caching, "
      "overlap_scheduling, two_batch_overlap, separate_activation_quant, recv_interval_steps, kv_block_tokens, "
      "cuda_graph_max_batch, ...: "
      "plan/engine_settings.h); the flags "
      "win over it");
  cmd->add_option("--token-budget", o.token_budget,
                  "Tokens one step may carry: vLLM's --max-num-batched-tokens, SGLang's --chunked-prefill-size, "
                  "TensorRT-LLM's max_num_tokens (default: the engine's)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxTokenBudget));
  cmd->add_option("--max-running", o.max_running,
                  "Sequences one step may carry: --max-num-seqs, --max-running-requests, max_batch_size "
                  "(default: the engine's)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxRunning));
  cmd->add_option("--memory-fraction", o.memory_fraction,
                  "The engine's memory share: --gpu-memory-utilization, --mem-fraction-static, "
                  "free_gpu_memory_fraction (default: the engine's)")
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--policy", o.policy,
                  "mixed (chunked prompts inside decode steps) or prefill_first (SGLang's default) "
                  "(default: the engine's)");
  cmd->add_option("--cuda-graph-max-batch", o.cuda_graph_max_batch,
                  "The largest step run as a captured CUDA graph: sequences (SGLang --cuda-graph-max-bs, "
                  "TensorRT-LLM cuda_graph_config.max_batch_size) or tokens (vLLM --max-cudagraph-capture-size); "
                  "0: graphs off (default: the engine's). Larger steps are counted and reported, not priced")
      ->check(CLI::Range(int64_t{0}, plan::kMaxTokenBudget));
  cmd->add_flag("--two-batch-overlap", o.two_batch_overlap,
                "Two micro-batches per step, one's communication under the other's compute (SGLang "
                "--enable-two-batch-overlap, vLLM --enable-dbo; default off)");
}

// Speculative decoding: the draft, its length and how often its tokens are accepted.
void add_speculative_options(CLI::App* cmd, ServeCliOptions& o) {
  cmd->add_option("--speculative", o.speculative,
                  "Speculative decoding: mtp (the model's MTP layer), eagle (a one-layer draft head) or none "
                  "(default: the plan's or the scenario's)")
      ->check(CLI::IsMember({"none", "mtp", "eagle"}));
  cmd->add_option("--draft-tokens", o.draft_tokens, "Draft tokens per step (vLLM num_speculative_tokens)")
      ->check(CLI::Range(int64_t{1}, int64_t{plan::kMaxDraftTokens}));
  cmd->add_option("--acceptance", o.acceptance,
                  "Acceptance rate per draft position, comma-separated, each given every earlier one was "
                  "accepted; the last repeats (mtp default: 0.85, DeepSeek-V3 report)")
      ->delimiter(',');
}

// Prefill and decode on pools of workers of their own.
void add_disaggregation_options(CLI::App* cmd, ServeCliOptions& o) {
  cmd->add_option("--prefill-workers", o.prefill_workers,
                  "Disaggregated serving: prefill workers (of the --prefill-plan layout, default the plan's "
                  "prefill pool, else its own layout); the decode pool is --decode-workers of the plan's layout, "
                  "on the devices after them. A plan with a \"disaggregated\" object is served so without them")
      ->check(CLI::Range(int64_t{1}, int64_t{topology::kMaxDevices}));
  cmd->add_option("--decode-workers", o.decode_workers,
                  "Disaggregated serving: decode workers (default: the plan's, else 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{topology::kMaxDevices}));
  cmd->add_option("--prefill-plan", o.prefill_plan,
                  "Disaggregated serving: a plan JSON file whose layout and batch the prefill workers take "
                  "(precisions are the plan's)");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto opts = std::make_shared<ServeCliOptions>();
  CLI::App* cmd = app.add_subcommand("serve",
                                     "Simulate serving one plan request by request under an engine's continuous "
                                     "batching: TTFT / TPOT / ITL / E2E percentiles and throughput");
  add_plan_options(cmd, *opts);
  add_load_options(cmd, *opts);
  add_engine_options(cmd, *opts);
  add_speculative_options(cmd, *opts);
  add_disaggregation_options(cmd, *opts);
  cmd->add_option("--warmup", opts->warmup, "First completed requests left out of the statistics")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--calibration", opts->calibration,
                  "Efficiency table file, or a directory from `calibrate --bench` (default: the shipped fit)");
  cmd->add_flag("--json", opts->json, "Print the result as one JSON object");
  cmd->callback([opts] { run_serve(*opts); });
}

}  // namespace dayzero::cli
