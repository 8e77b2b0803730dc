// `dayzero serve`'s output: the result as text or JSON (serve_cli.h).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/calibration_note.h"
#include "cli/format.h"
#include "cli/serve_cli.h"

namespace dayzero::cli::serve_cli {

namespace {

nlohmann::json stats_json(const serve::LatencyStats& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"count", s.count}};
}

// The range the measurement is likely in: the prediction divided by 1 + the 90th and
// the 10th percentile of the calibration's errors on measured runs of the engine.
std::pair<double, double> likely_range(double predicted, const serve::ErrorBand& b) {
  return {predicted / (1 + b.p90), predicted / (1 + b.p10)};
}

// The longest prompt the client sends: the trace's, else every request's (a drawn
// length is at most it).
int64_t longest_prompt(const serve::Client& c) {
  int64_t n = c.trace.empty() ? c.shape.input_len : 0;
  for (const auto& r : c.trace) n = std::max(n, r.shape.input_len);
  return n;
}

nlohmann::json band_json(const serve::EngineOverheads& o) {
  if (o.rows == 0) return nullptr;
  return {{"runs", o.rows},
          {"longest_prompt_tokens", o.longest_prompt_tokens},
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

}  // namespace

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
                                  {"separate_activation_quant", e.separate_activation_quant},
                                  {"recv_interval_steps", e.recv_interval_steps},
                                  {"kv_block_tokens", e.kv_block_tokens},
                                  {"cuda_graph_max_batch", e.cuda_graph_max_batch}};
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
          {"eager_steps", r.eager_steps},
          {"max_running", r.max_running},
          {"kv_free_bytes_per_rank", r.kv.free_bytes},
          {"error_band", band_json(overheads)},
          {"prompt_beyond_calibration", prompt_beyond(longest_prompt(so.client), overheads.longest_prompt_tokens)},
          {"series", series}};
}

namespace {
// Seconds as milliseconds with two decimals.
std::string ms_2(double s) { return fixed(s * 1e3, 2); }

// Decode steps past the engine's CUDA graphs: what the engine would do with them, and
// that DayZero prices them as graph steps.
void print_eager_note(std::ostream& out, const serve::EngineProfile& e, const serve::ServeResult& r) {
  const std::string what = e.cuda_graph_counts_tokens ? " tokens" : " sequences";
  const std::string flag = e.engine == serve::Engine::vllm     ? "--max-cudagraph-capture-size"
                           : e.engine == serve::Engine::sglang ? "--cuda-graph-max-bs"
                                                               : "cuda_graph_config.max_batch_size";
  out << "  note: " << with_commas(r.eager_steps) << " of the " << with_commas(r.steps) << " steps ("
      << fixed(100.0 * static_cast<double>(r.eager_steps) / static_cast<double>(std::max<int64_t>(1, r.steps)), 1)
      << " %) decode more than the " << e.cuda_graph_max_batch << what << " the engine captures CUDA graphs for ("
      << flag << "): it runs them eagerly, which DayZero prices as graph steps (no measured run to fit an eager "
      << "decode step's cost to); raise the limit where memory allows\n";
}
}  // namespace

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
    out << "  " << pad_right(name, 6) << pad_left(ms_2(st->mean), 10) << pad_left(ms_2(st->p50), 10)
        << pad_left(ms_2(st->p90), 10) << pad_left(ms_2(st->p99), 10) << '\n';
  const serve::EngineOverheads band = s.engines.for_engine(e.engine);
  if (band.rows > 0) {
    const auto [t_lo, t_hi] = likely_range(r.ttft_s.mean, band.ttft_band);
    const auto [p_lo, p_hi] = likely_range(r.tpot_s.mean, band.tpot_band);
    out << "  likely measured: TTFT " << ms_2(t_lo) << " .. " << ms_2(t_hi) << " ms, TPOT " << ms_2(p_lo) << " .. "
        << ms_2(p_hi) << " ms (10th-90th percentile of the errors on " << band.rows << " measured "
        << serve::engine_name(e.engine) << " runs the calibration was fitted to)\n";
  }
  print_prompt_note(out, e.engine, longest_prompt(c), band.longest_prompt_tokens);
  out << "\n  " << fixed(r.output_tokens_per_s, 0) << " output tokens/s (" << fixed(r.total_tokens_per_s, 0)
      << " with prompts), " << fixed(r.requests_per_s, 2) << " requests/s over " << fixed(r.duration_s, 1) << " s; "
      << with_commas(r.steps) << " steps per replica, " << r.preemptions << " preemptions, at most " << r.max_running
      << " sequences running\n";
  if (r.eager_steps > 0) print_eager_note(out, e, r);
}

}  // namespace dayzero::cli::serve_cli
