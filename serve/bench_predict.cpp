#include "serve/bench_predict.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <utility>

#include "core/json_fields.h"
#include "core/parallel.h"
#include "model/model.h"
#include "plan/plan_json.h"
#include "serve/bench_loader.h"
#include "serve/simulation.h"
#include "serve/stats.h"
#include "simulate/precisions.h"
#include "simulate/simulator.h"
#include "topology/cluster.h"
#include "topology/device.h"

namespace dayzero::serve {

namespace {

using detail::Loader;
using detail::Rejected;
using detail::round_up;

RowPrediction predict_row(const BenchRow& r, Loader& loader, const BenchOptions& o) {
  RowPrediction out;
  out.row = &r;
  try {
    if (!r.unmeasured.empty()) throw Rejected{"not measured: " + r.unmeasured};
    if (r.disaggregated()) {
      detail::predict_disaggregated(r, loader, o, out);
      return out;
    }
    detail::check_concurrency(r, "batch_size x pp_size x attention_dp_size");
    if (!r.layout_unknown.empty()) throw Rejected{"layout unknown: " + r.layout_unknown};
    const auto engine = parse_engine(r.backend);
    if (!engine) throw Rejected{"engine " + r.backend + " is not one of vllm, sglang, trtllm"};
    const model::Model& m = loader.model(r.model_path);
    const topology::Cluster& c = loader.cluster(r.system, r.gpus());
    // InferenceX runs its aggregated recipes on one node (benchmarks/single_node/, TP and
    // EP at most the node's GPUs); the rows that multiply TP by EP are read back to the
    // recipe's layout (serve/inferencex_layouts.h), and a row still wider is no such run.
    if (r.deployer == Deployer::inferencex && r.gpus() > c.devices_per_node())
      throw Rejected{"inconsistent layout: " + std::to_string(r.gpus()) + " GPUs, more than the one node of " +
                     std::to_string(c.devices_per_node()) + " that InferenceX's aggregated recipes run on"};
    if (r.deployer == Deployer::inferencex)
      if (std::string unknown = inferencex_recipe_unknown(r); !unknown.empty()) throw Rejected{std::move(unknown)};
    plan::Plan p = detail::plan_of(r, detail::layout_of(r), r.concurrency(), m, c);
    p.speculative = inferencex_speculative(r);
    // The one published MTP acceptance is DeepSeek's (plan/speculative.h); another
    // model's drafts would be served at a rate nothing measured.
    if (p.speculative.on() && r.model_path.find("DeepSeek") == std::string::npos)
      throw Rejected{"speculative decoding at an unknown acceptance: InferenceX's MTP recipe (image " + r.image +
                     ") drafted " + std::to_string(p.speculative.draft_tokens) +
                     " tokens a step, and the row does not say how many were accepted"};
    ServeOptions so;
    so.engine = deployed_profile(*engine, deployment_of(p, m, c.device_spec()), r);
    detail::apply_fp8_scales(r, m, so.engine);
    so.engine = o.engines.apply(so.engine);
    simulate::Simulator sim(m, c, loader.efficiency().for_device(c.device_spec().name));
    simulate::SimulateOptions steady_opts{false, false, true};
    steady_opts.kernels = engine_kernels(so.engine);
    const simulate::Prediction steady = sim.simulate(p, steady_opts);
    out.steady_ttft_s = steady.ttft_s;
    out.steady_tpot_s = steady.tpot_s;
    so.client = detail::bench_client(r, o);
    so.max_points = 0;
    ServeResult s;
    try {
      s = simulate_serving(sim, p, so);
    } catch (const std::invalid_argument& e) {
      throw Rejected{std::string("does not fit: ") + e.what()};
    }
    detail::record_served(s, c.device_spec().name, m, so.engine.overlap_scheduling, out);
  } catch (const Rejected& rej) {
    out.reason = rej.reason;
  }
  return out;
}

}  // namespace

namespace detail {

Client bench_client(const BenchRow& r, const BenchOptions& o) {
  Client c;
  c.concurrency = r.concurrency();
  c.requests = (o.requests_per_slot + o.warmup_per_slot) * r.concurrency();
  c.warmup = o.warmup_per_slot * r.concurrency();
  if (r.deployer == Deployer::inferencex) {
    // InferenceX's client: benchmark_serving.py with --num-prompts 10 x concurrency
    // from an idle engine, every length drawn in [0.8, 1] x (RANDOM_RANGE_RATIO 0.8).
    c.requests = 10 * r.concurrency();
    c.warmup = 0;
    c.range_ratio = 0.8;
  }
  if (r.request_rate_per_s > 0) {  // open loop: Poisson at the run's rate, as many requests as it sent
    c.kind = ClientKind::open_loop;
    c.rate_per_s = r.request_rate_per_s;
    if (r.requests > 0) c.requests = r.requests;
    c.warmup = 0;
  }
  c.shape = {r.isl, r.osl, 0};
  return c;
}

}  // namespace detail

namespace {

// The flags of aiconfigurator's config generator (its benchmark rules, from the row's
// batch size and input length).
void generator_flags(Engine e, const BenchRow& r, EngineProfile& p) {
  switch (e) {
    case Engine::vllm:
      p.token_budget = r.batch_size + r.isl + 1500;  // max-num-batched-tokens
      break;
    case Engine::sglang:
      // A prefill step's prompt tokens are capped by max-prefill-tokens (isl + 1500)
      // and chunked-prefill-size. The gap-analysis harness's SGLang runs kept SGLang's
      // limits (chunked-prefill-size by GPU memory): the generator wrote no SGLang flags
      // before 2025-12-04, and the runs' TPOT hardly grows as the output shortens
      // (docs/ENGINE_DEFAULTS.md, "How the measured runs were deployed").
      if (r.deployer != Deployer::gap_analysis) p.token_budget = std::min(r.isl + 1500, p.token_budget);
      break;
    case Engine::trtllm:
      p.token_budget = round_up(r.batch_size + r.isl + 1500, 32);  // max_num_tokens, a multiple of tokens_per_block
      p.memory.memory_fraction = 0.8;  // kv_cache_config.free_gpu_memory_fraction, the templates' default
      break;
  }
}

}  // namespace

plan::KvDtype kv_dtype_of(const BenchRow& r) {
  if (r.deployer == Deployer::inferencex && !r.disaggregated())
    return inferencex_fp8_kv(r) ? plan::KvDtype::fp8 : plan::KvDtype::bf16;
  for (const std::string& mode : {r.gemm_quant, r.moe_quant})
    if (is_fp8_quant_mode(mode) || mode == "nvfp4") return plan::KvDtype::fp8;
  return plan::KvDtype::bf16;
}

EngineProfile deployed_profile(Engine e, const Deployment& d, const BenchRow& r) {
  EngineProfile p = default_profile(e, d);
  p.max_running = r.batch_size;  // max-num-seqs / max-running-requests / max_batch_size
  p.prefix_caching = false;      // prefix caching is enabled only for workloads with a shared prefix
  // Prefill first, SGLang's default: the generator's enable-mixed-chunk reached the
  // engine only from 2026-01-19 (aiconfigurator 07a3779: the flag was misspelt before),
  // SGLang turns it off under MTP / EAGLE speculative decoding, InferenceX's recipes do
  // not set it, and the runs behave as prefill-first (docs/ENGINE_DEFAULTS.md).
  if (e == Engine::sglang) p.policy = PrefillPolicy::prefill_first;
  if (r.deployer == Deployer::inferencex) inferencex_flags(e, r, p);
  else generator_flags(e, r, p);
  p.memory.step_tokens = p.token_budget;
  p.memory.logit_rows = std::min(p.memory.logit_rows, p.max_running);
  return p;
}

std::vector<RowPrediction> predict_bench(const std::vector<BenchRow>& rows, const BenchOptions& o) {
  Loader loader(o);
  // Models and clusters are loaded on this thread first; the rows are then served
  // on a pool of threads that only read them (one Simulator per row).
  for (const auto& r : rows) {
    // A row that cannot be mapped is rejected again, with the same reason, by predict_row.
    try {
      (void)loader.model(r.model_path);
    } catch (const Rejected&) {
    }
    try {
      (void)loader.cluster(r.system, r.gpus());
    } catch (const Rejected&) {
    }
  }
  loader.freeze();
  const std::vector<std::string> twins = conflicting_layouts(rows);
  std::vector<RowPrediction> out(rows.size());
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  core::parallel_blocks(rows.size(), threads, 1, [&](int, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (twins[i].empty()) {
        out[i] = predict_row(rows[i], loader, o);
      } else {
        out[i].row = &rows[i];
        out[i].reason = twins[i];
      }
    }
  });
  return out;
}

std::map<std::string, ErrorSummary> summarize(const std::vector<RowPrediction>& predictions) {
  struct Errors {
    std::vector<double> ttft, tpot, steady_ttft, steady_tpot;
  };
  std::map<std::string, Errors> groups;
  for (const auto& p : predictions) {
    if (!p.predicted) continue;
    for (const std::string& key : {std::string("all"), "mode:" + p.row->mode, "model:" + p.row->model_path,
                                   "system:" + p.row->system, "engine:" + p.row->backend}) {
      Errors& e = groups[key];
      e.ttft.push_back(std::abs(p.ttft_error_pct()));
      e.tpot.push_back(std::abs(p.tpot_error_pct()));
      e.steady_ttft.push_back(std::abs(p.steady_ttft_error_pct()));
      e.steady_tpot.push_back(std::abs(p.steady_tpot_error_pct()));
    }
  }
  std::map<std::string, ErrorSummary> out;
  for (const auto& [key, e] : groups) {
    ErrorSummary& s = out[key];
    s.rows = static_cast<int64_t>(e.ttft.size());
    const LatencyStats ttft = latency_stats(e.ttft), tpot = latency_stats(e.tpot),
                       steady_ttft = latency_stats(e.steady_ttft), steady_tpot = latency_stats(e.steady_tpot);
    s.ttft_median = ttft.p50;
    s.ttft_p90 = ttft.p90;
    s.tpot_median = tpot.p50;
    s.tpot_p90 = tpot.p90;
    s.steady_ttft_median = steady_ttft.p50;
    s.steady_ttft_p90 = steady_ttft.p90;
    s.steady_tpot_median = steady_tpot.p50;
    s.steady_tpot_p90 = steady_tpot.p90;
  }
  return out;
}

}  // namespace dayzero::serve
