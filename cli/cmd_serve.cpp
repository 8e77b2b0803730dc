// dayzero serve [SCENARIO] | --model M --cluster C --plan P: the request-level
// serving simulation of one plan (serve/simulation.h) under an engine's scheduler,
// at a concurrency (closed loop) or a request rate (Poisson): TTFT, TPOT, ITL and
// end-to-end latency as mean, p50, p90, p99, and throughput.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "core/data_dir.h"
#include "plan/plan_json.h"
#include "search/search.h"
#include "search/session.h"
#include "serve/calibration_files.h"
#include "serve/engine_settings.h"
#include "serve/simulation.h"
#include "serve/trace.h"
#include "simulate/precisions.h"
#include "topology/device.h"

namespace dayzero::cli {

namespace {

// Bounds, so that a typo cannot start hours of simulation: a thousand times the
// 10,000 requests bench_serve serves in under a second (concurrency: a plan's
// largest batch, plan::kMaxBatch).
constexpr int64_t kMaxRequests = 10'000'000;

struct ServeCliOptions {
  std::string scenario, model, cluster, plan, catalog, engine, calibration, engine_settings_file, policy, trace;
  std::string speculative;
  int64_t draft_tokens = 0;
  std::vector<double> acceptance;
  double trace_speed = 1;
  int64_t concurrency = 0, requests = 0, input_len = 0, output_len = 0, warmup = 0, recv_interval = 0;
  int64_t token_budget = 0, max_running = 0;
  double rate = 0, range_ratio = 1.0, memory_fraction = 0;
  bool two_batch_overlap = false;
  bool json = false;
};

// What is served: a model, a cluster, the efficiency figures and one plan.
struct Served {
  std::unique_ptr<search::Session> session;  // scenario form (owns model and cluster)
  std::unique_ptr<model::Model> model;       // plan form
  std::unique_ptr<topology::Cluster> cluster;
  simulate::Efficiency efficiency;
  serve::EngineOverheadTable engines;
  plan::Plan plan;
  std::string plan_source;
  const model::Model& m() const { return session ? session->model : *model; }
  const topology::Cluster& c() const { return session ? session->cluster : *cluster; }
};

Served load_served(const ServeCliOptions& o) {
  Served s;
  serve::ServingCalibration cal = serve::load_serving_calibration(core::data_dir(), o.calibration);
  s.engines = std::move(cal.engines);
  if (!o.plan.empty()) {
    if (o.model.empty() || o.cluster.empty()) throw std::runtime_error("--plan needs --model and --cluster");
    s.model = std::make_unique<model::Model>(model::load_model(resolve_model_path(o.model)));
    topology::DeviceCatalog catalog = topology::DeviceCatalog::load_builtin(core::data_dir());
    if (!o.catalog.empty()) catalog.add_file(o.catalog);
    s.cluster = std::make_unique<topology::Cluster>(topology::Cluster::load(resolve_cluster_path(o.cluster), catalog));
    s.plan = plan::load_plan(o.plan);
    plan::validate_plan(s.plan, *s.model, s.cluster->num_devices(), o.plan);
    simulate::validate_plan_precisions(s.plan, s.cluster->device_spec(), o.plan);
    s.efficiency = cal.efficiency.for_device(s.cluster->device_spec().name);
    s.plan_source = o.plan;
    return s;
  }
  const auto file =
      search::resolve_scenario(o.scenario.empty() ? "deepseek-v3-h200-2x8" : o.scenario, core::data_dir());
  s.session = std::make_unique<search::Session>(search::load_session(file, core::data_dir(), o.catalog));
  const search::SearchResult r =
      search::run_search(s.session->scenario, s.session->model, s.session->cluster, s.session->efficiency);
  if (!r.feasible()) throw std::runtime_error(file.string() + ": no plan fits and meets the SLA (see dayzero plan)");
  s.plan = r.all[r.top.front()].plan;
  s.efficiency =
      o.calibration.empty() ? s.session->efficiency : cal.efficiency.for_device(s.session->cluster.device_spec().name);
  s.plan_source =
      "the best plan of " + s.session->scenario.name + " (" + search::layout_name(r.all[r.top.front()]) + ")";
  return s;
}

// The plan's speculative decoding (from its file, or the scenario), then the flags';
// checked as a plan file's "speculative" object is, and against the model.
void apply_speculative_flags(const ServeCliOptions& o, Served& s) {
  if (o.speculative.empty() && o.draft_tokens == 0 && o.acceptance.empty()) return;
  plan::SpeculativeDecoding& spec = s.plan.speculative;
  nlohmann::json j = plan::speculative_to_json(spec);
  if (!o.speculative.empty()) {
    if (o.speculative != plan::spec_method_name(spec.method)) j.erase("acceptance");  // another method's rates
    j["method"] = o.speculative;
    if (o.speculative != "none" && spec.draft_tokens == 0) j["draft_tokens"] = 1;
    if (o.speculative == "none") j = {{"method", "none"}};
  }
  if (o.draft_tokens > 0) j["draft_tokens"] = o.draft_tokens;
  if (!o.acceptance.empty()) j["acceptance"] = o.acceptance;
  spec =
      plan::speculative_from_json(j, "the command line (--speculative, --draft-tokens, --acceptance)", "speculative");
  plan::validate_plan(s.plan, s.m(), s.c().num_devices(), "the command line");
}

// The scenario's engine settings, then the settings file's, then the flags (each
// winning over the ones before).
serve::EngineSettings engine_settings(const ServeCliOptions& o, const search::Session* session) {
  serve::EngineSettings s = session ? session->scenario.engine : serve::EngineSettings{};
  if (!o.engine_settings_file.empty()) s.merge(plan::load_engine_settings(o.engine_settings_file));
  serve::EngineSettings flags;
  if (!o.engine.empty()) {
    flags.engine = serve::parse_engine(o.engine);
    if (!flags.engine)
      throw std::runtime_error("option '--engine' = \"" + o.engine + "\": one of vllm, sglang, trtllm");
  }
  if (o.token_budget > 0) flags.token_budget = o.token_budget;
  if (o.max_running > 0) flags.max_running = o.max_running;
  if (o.recv_interval > 0) flags.recv_interval_steps = o.recv_interval;
  if (o.memory_fraction > 0) flags.memory_fraction = o.memory_fraction;
  if (o.two_batch_overlap) flags.two_batch_overlap = true;
  if (!o.policy.empty()) {
    flags.policy = serve::parse_prefill_policy(o.policy);
    if (!flags.policy)
      throw std::runtime_error("option '--policy' = \"" + o.policy + "\": one of mixed, prefill_first");
  }
  s.merge(flags);
  return s;
}

serve::ServeOptions serve_options(const ServeCliOptions& o, const Served& s) {
  const plan::Plan& p = s.plan;
  const search::Session* session = s.session.get();
  serve::ServeOptions so;
  const serve::EngineSettings settings = engine_settings(o, session);
  const serve::Engine engine = settings.engine.value_or(serve::Engine::vllm);
  so.engine = s.engines.apply(serve::default_profile(engine, serve::deployment_of(p, s.m(), s.c().device_spec())));
  so.engine = serve::apply(so.engine, settings);
  serve::Client& c = so.client;
  c.shape = {o.input_len > 0 ? o.input_len : p.workload.input_len,
             o.output_len > 0 ? o.output_len : p.workload.output_len,
             static_cast<int64_t>(static_cast<double>(p.workload.input_len) * p.workload.prefix_hit_rate)};
  const double scenario_rate = session ? session->scenario.request_rate_per_s : 0;
  if (!o.trace.empty()) {
    c.kind = serve::ClientKind::open_loop;
    c.trace = serve::read_trace(o.trace);
    if (o.requests > 0 && o.requests < static_cast<int64_t>(c.trace.size())) c.trace.resize(o.requests);
    const int64_t context = s.m().config.max_position_embeddings;
    for (size_t i = 0; i < c.trace.size(); ++i) {
      const serve::RequestShape& r = c.trace[i].shape;
      if (context > 0 && r.input_len + r.output_len > context)
        throw std::runtime_error(o.trace + ": request " + std::to_string(i + 1) + " of " + std::to_string(r.input_len) +
                                 " + " + std::to_string(r.output_len) +
                                 " tokens exceeds the model's max_position_embeddings " + std::to_string(context));
    }
    for (auto& r : c.trace) r.arrival_s /= o.trace_speed;
    c.requests = static_cast<int64_t>(c.trace.size());
    c.warmup = o.warmup;
    c.range_ratio = 1;
    return so;
  }
  if (o.rate > 0 || (o.concurrency == 0 && scenario_rate > 0)) {
    c.kind = serve::ClientKind::open_loop;
    c.rate_per_s = o.rate > 0 ? o.rate : scenario_rate;
  } else {
    c.concurrency = o.concurrency > 0 ? o.concurrency : p.workload.batch;
  }
  c.requests = o.requests > 0 ? o.requests : std::min(std::max<int64_t>(1000, 4 * c.concurrency), kMaxRequests);
  c.warmup = o.warmup;
  c.range_ratio = o.range_ratio;
  return so;
}

nlohmann::json stats_json(const serve::LatencyStats& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"count", s.count}};
}

// The range the measurement is likely in: the prediction divided by 1 + the 90th and
// the 10th percentile of the calibration's errors on measured runs of the engine.
std::pair<double, double> likely_range(double predicted, const serve::ErrorBand& b) {
  return {predicted / (1 + b.p90), predicted / (1 + b.p10)};
}

nlohmann::json band_json(const serve::EngineOverheads& o) {
  if (o.rows == 0) return nullptr;
  return {{"runs", o.rows},
          {"ttft", {{"p10", o.ttft_band.p10}, {"p90", o.ttft_band.p90}}},
          {"tpot", {{"p10", o.tpot_band.p10}, {"p90", o.tpot_band.p90}}}};
}

nlohmann::json speculative_json(const plan::SpeculativeDecoding& spec, const serve::ServeResult& r) {
  if (!spec.on()) return nullptr;
  nlohmann::json j = plan::speculative_to_json(spec);
  j["expected_tokens_per_step"] = spec.expected_tokens_per_step();
  j["tokens_per_decode"] = r.tokens_per_decode;
  return j;
}

nlohmann::json result_json(const serve::ServeResult& r, const serve::ServeOptions& so,
                           const serve::EngineOverheads& overheads, const plan::SpeculativeDecoding& spec) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& pt : r.series)
    series.push_back(
        {{"time_s", pt.time_s}, {"waiting", pt.waiting}, {"running", pt.running}, {"kv_used", pt.kv_used}});
  const serve::EngineProfile& e = so.engine;
  const nlohmann::json profile = {{"policy", serve::prefill_policy_name(e.policy)},
                                  {"token_budget", e.token_budget},
                                  {"max_running", e.max_running},
                                  {"memory_fraction", e.memory.memory_fraction},
                                  {"chunked_prefill", e.chunked_prefill},
                                  {"prefix_caching", e.prefix_caching},
                                  {"overlap_scheduling", e.overlap_scheduling},
                                  {"two_batch_overlap", e.two_batch_overlap},
                                  {"recv_interval_steps", e.recv_interval_steps},
                                  {"kv_block_tokens", e.kv_block_tokens}};
  return {{"engine", serve::engine_name(so.engine.engine)},
          {"engine_settings", profile},
          {"speculative", speculative_json(spec, r)},
          {"ttft_s", stats_json(r.ttft_s)},
          {"tpot_s", stats_json(r.tpot_s)},
          {"itl_s", stats_json(r.itl_s)},
          {"e2e_s", stats_json(r.e2e_s)},
          {"output_tokens_per_s", r.output_tokens_per_s},
          {"total_tokens_per_s", r.total_tokens_per_s},
          {"requests_per_s", r.requests_per_s},
          {"duration_s", r.duration_s},
          {"requests_per_replica", r.requests},
          {"steps", r.steps},
          {"preemptions", r.preemptions},
          {"max_running", r.max_running},
          {"kv_free_bytes_per_rank", r.kv.free_bytes},
          {"error_band", band_json(overheads)},
          {"series", series}};
}

std::string ms(double s) { return fixed(s * 1e3, 2); }

void print_result(std::ostream& out, const Served& s, const serve::ServeOptions& so, const serve::ServeResult& r) {
  const auto& e = so.engine;
  const auto& c = so.client;
  out << "Serving " << s.m().config.display_family() << " on " << s.c().name() << " (" << s.c().num_devices() << " x "
      << s.c().device_spec().name << "): " << s.plan_source << '\n';
  out << "  engine " << serve::engine_name(e.engine) << ": " << serve::prefill_policy_name(e.policy) << " steps, "
      << e.token_budget << " tokens and " << e.max_running << " sequences per step; KV cache "
      << gb_and_gib(static_cast<int64_t>(r.kv.free_bytes)) << " per rank at memory fraction "
      << fixed(e.memory.memory_fraction, 2) << " ("
      << with_commas(r.kv.capacity_tokens(c.shape.input_len + c.shape.output_len))
      << " tokens of full requests per replica)\n";
  if (const plan::SpeculativeDecoding& spec = s.plan.speculative; spec.on()) {
    std::string rates;
    for (int i = 0; i < spec.draft_tokens; ++i) rates += (i ? ", " : "") + fixed(spec.acceptance_at(i), 2);
    out << "  speculative " << plan::spec_method_name(spec.method) << ": " << spec.draft_tokens
        << " draft tokens per step, accepted at " << rates << " -> " << fixed(r.tokens_per_decode, 2)
        << " tokens per verify step (expected " << fixed(spec.expected_tokens_per_step(), 2) << ")\n";
  }
  if (!c.trace.empty()) {
    const double span_s = c.trace.back().arrival_s;
    out << "  client: trace, " << c.trace.size() << " requests arriving over " << fixed(span_s, 1) << " s"
        << (span_s > 0 ? " (" + fixed(static_cast<double>(c.trace.size() - 1) / span_s, 2) + " requests/s)" : "")
        << " with the trace's lengths\n\n";
  } else
    out << "  client: "
        << (c.kind == serve::ClientKind::closed_loop ? "closed loop, " + std::to_string(c.concurrency) + " in flight"
                                                     : "Poisson, " + fixed(c.rate_per_s, 2) + " requests/s")
        << ", " << c.requests << " requests of " << c.shape.input_len << " + " << c.shape.output_len << " tokens"
        << (c.range_ratio < 1 ? " at most (each drawn from " + fixed(c.range_ratio, 2) + " x to 1 x)" : "") << "\n\n";
  out << "  " << pad_right("ms", 6) << pad_left("mean", 10) << pad_left("p50", 10) << pad_left("p90", 10)
      << pad_left("p99", 10) << '\n';
  for (const auto& [name, st] :
       {std::pair{"TTFT", &r.ttft_s}, {"TPOT", &r.tpot_s}, {"ITL", &r.itl_s}, {"E2E", &r.e2e_s}})
    out << "  " << pad_right(name, 6) << pad_left(ms(st->mean), 10) << pad_left(ms(st->p50), 10)
        << pad_left(ms(st->p90), 10) << pad_left(ms(st->p99), 10) << '\n';
  const serve::EngineOverheads band = s.engines.for_engine(e.engine);
  if (band.rows > 0) {
    const auto [t_lo, t_hi] = likely_range(r.ttft_s.mean, band.ttft_band);
    const auto [p_lo, p_hi] = likely_range(r.tpot_s.mean, band.tpot_band);
    out << "  likely measured: TTFT " << ms(t_lo) << " .. " << ms(t_hi) << " ms, TPOT " << ms(p_lo) << " .. "
        << ms(p_hi) << " ms (10th-90th percentile of the errors on " << band.rows << " measured "
        << serve::engine_name(e.engine) << " runs the calibration was fitted to)\n";
  }
  out << "\n  " << fixed(r.output_tokens_per_s, 0) << " output tokens/s (" << fixed(r.total_tokens_per_s, 0)
      << " with prompts), " << fixed(r.requests_per_s, 2) << " requests/s over " << fixed(r.duration_s, 1) << " s; "
      << with_commas(r.steps) << " steps per replica, " << r.preemptions << " preemptions, at most " << r.max_running
      << " sequences running\n";
}

void run_serve(const ServeCliOptions& o) {
  Served s = load_served(o);
  apply_speculative_flags(o, s);
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

}  // namespace

void add_serve_command(CLI::App& app) {
  auto opts = std::make_shared<ServeCliOptions>();
  CLI::App* cmd = app.add_subcommand("serve",
                                     "Simulate serving one plan request by request under an engine's continuous "
                                     "batching: TTFT / TPOT / ITL / E2E percentiles and throughput");
  cmd->add_option("scenario", opts->scenario, "Scenario (its best plan is served); default: deepseek-v3-h200-2x8");
  cmd->add_option("--model", opts->model, "With --cluster and --plan: serve this plan");
  cmd->add_option("--cluster", opts->cluster, "Cluster JSON file or bundled cluster name");
  cmd->add_option("--plan", opts->plan, "Plan JSON file");
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file");
  cmd->add_option("--engine", opts->engine, "vllm, sglang or trtllm (default: the scenario's engine, else vllm)");
  auto* conc = cmd->add_option("--concurrency", opts->concurrency, "Requests in flight (closed loop)")
                   ->check(CLI::Range(int64_t{1}, plan::kMaxBatch));
  auto* rate = cmd->add_option("--request-rate", opts->rate, "Requests per second (Poisson arrivals)")
                   ->check(CLI::PositiveNumber)
                   ->excludes(conc);
  auto* trace = cmd->add_option("--trace", opts->trace,
                                "Replay a request trace (open loop at its arrival times and lengths): a CSV of "
                                "arrival_s,input_len,output_len[,cached_prefix], an Azure LLM inference trace "
                                "(TIMESTAMP,ContextTokens,GeneratedTokens) or Mooncake JSON lines (serve/trace.h)")
                    ->excludes(conc)
                    ->excludes(rate);
  cmd->add_option("--trace-speed", opts->trace_speed, "Replay the trace this many times faster (default 1)")
      ->check(CLI::Range(1e-3, 1e6))
      ->needs(trace);
  cmd->add_option("--requests", opts->requests,
                  "Requests in all (default: max(1000, 4 x concurrency); with --trace, its first K)")
      ->check(CLI::Range(int64_t{1}, kMaxRequests));
  cmd->add_option("--input-len", opts->input_len, "Prompt tokens (default: the plan's workload)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxSequenceTokens));
  cmd->add_option("--output-len", opts->output_len, "Output tokens (default: the plan's workload)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxSequenceTokens));
  cmd->add_option("--random-range-ratio", opts->range_ratio,
                  "Draw each request's prompt and output length uniformly in [ratio x length, length], as "
                  "benchmark_serving's random dataset does (default 1: every request at the full lengths)")
      ->check(CLI::Range(0.01, 1.0))
      ->excludes(trace);
  cmd->add_option("--scheduler-recv-interval", opts->recv_interval,
                  "Decode steps between the scheduler's looks for new requests, as SGLang's "
                  "--scheduler-recv-interval (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  cmd->add_option("--engine-settings", opts->engine_settings_file,
                  "JSON file of engine settings over the engine's defaults and the scenario's \"engine\" object "
                  "(name, token_budget, max_running, memory_fraction, policy, chunked_prefill, prefix_caching, "
                  "overlap_scheduling, recv_interval_steps, kv_block_tokens: plan/engine_settings.h); the flags "
                  "win over it");
  cmd->add_option("--token-budget", opts->token_budget,
                  "Tokens one step may carry: vLLM's --max-num-batched-tokens, SGLang's --chunked-prefill-size, "
                  "TensorRT-LLM's max_num_tokens (default: the engine's)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxTokenBudget));
  cmd->add_option("--max-running", opts->max_running,
                  "Sequences one step may carry: --max-num-seqs, --max-running-requests, max_batch_size "
                  "(default: the engine's)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxRunning));
  cmd->add_option("--memory-fraction", opts->memory_fraction,
                  "The engine's memory share: --gpu-memory-utilization, --mem-fraction-static, "
                  "free_gpu_memory_fraction (default: the engine's)")
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--policy", opts->policy,
                  "mixed (chunked prompts inside decode steps) or prefill_first (SGLang's default) "
                  "(default: the engine's)");
  cmd->add_flag("--two-batch-overlap", opts->two_batch_overlap,
                "Two micro-batches per step, one's communication under the other's compute (SGLang "
                "--enable-two-batch-overlap, vLLM --enable-dbo; default off)");
  cmd->add_option("--speculative", opts->speculative,
                  "Speculative decoding: mtp (the model's MTP layer), eagle (a one-layer draft head) or none "
                  "(default: the plan's or the scenario's)")
      ->check(CLI::IsMember({"none", "mtp", "eagle"}));
  cmd->add_option("--draft-tokens", opts->draft_tokens, "Draft tokens per step (vLLM num_speculative_tokens)")
      ->check(CLI::Range(int64_t{1}, int64_t{plan::kMaxDraftTokens}));
  cmd->add_option("--acceptance", opts->acceptance,
                  "Acceptance rate per draft position, comma-separated, each given every earlier one was "
                  "accepted; the last repeats (mtp default: 0.85, DeepSeek-V3 report)")
      ->delimiter(',');
  cmd->add_option("--warmup", opts->warmup, "First completed requests left out of the statistics")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--calibration", opts->calibration,
                  "Efficiency table file, or a directory from `calibrate --bench` (default: the shipped fit)");
  cmd->add_flag("--json", opts->json, "Print the result as one JSON object");
  cmd->callback([opts] { run_serve(*opts); });
}

}  // namespace dayzero::cli
