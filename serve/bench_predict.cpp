#include "serve/bench_predict.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

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
    if (r.disaggregated()) {
      detail::predict_disaggregated(r, loader, o, out);
      return out;
    }
    detail::check_concurrency(r, "batch_size x pp_size x attention_dp_size");
    const auto engine = parse_engine(r.backend);
    if (!engine) throw Rejected{"engine " + r.backend + " is not one of vllm, sglang, trtllm"};
    const model::Model& m = loader.model(r.model_path);
    const topology::Cluster& c = loader.cluster(r.system, r.gpus());
    // InferenceX runs its aggregated recipes on one node (benchmarks/single_node/, TP and
    // EP at most the node's GPUs); rows of more GPUs carry the product of the recipe's TP
    // and EP sizes (tp_size 64 with moe_tp 8 x moe_ep 8), a layout no such run had.
    if (r.deployer == Deployer::inferencex && r.gpus() > c.devices_per_node())
      throw Rejected{"inconsistent layout: " + std::to_string(r.gpus()) + " GPUs, more than the one node of " +
                     std::to_string(c.devices_per_node()) + " that InferenceX's aggregated recipes run on"};
    plan::Plan p = detail::plan_of(r, detail::layout_of(r), r.concurrency(), m, c);
    p.speculative = inferencex_speculative(r);
    // The one published MTP acceptance is DeepSeek's (plan/speculative.h); another
    // model's drafts would be served at a rate nothing measured.
    if (p.speculative.on() && r.model_path.find("DeepSeek") == std::string::npos)
      throw Rejected{"speculative decoding at an unknown acceptance: InferenceX's MTP recipe (image " + r.image +
                     ") drafted " + std::to_string(p.speculative.draft_tokens) +
                     " tokens a step, and the row does not say how many were accepted"};
    simulate::Simulator sim(m, c, loader.efficiency().for_device(c.device_spec().name));
    const simulate::Prediction steady = sim.simulate(p, {false, false, true});
    out.steady_ttft_s = steady.ttft_s;
    out.steady_tpot_s = steady.tpot_s;
    ServeOptions so;
    so.engine = deployed_profile(*engine, deployment_of(p, m, c.device_spec()), r);
    so.engine = o.engines.apply(so.engine);
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
      // and chunked-prefill-size.
      p.token_budget = std::min(r.isl + 1500, p.token_budget);
      break;
    case Engine::trtllm:
      p.token_budget = round_up(r.batch_size + r.isl + 1500, 32);  // max_num_tokens, a multiple of tokens_per_block
      p.memory.memory_fraction = 0.8;  // kv_cache_config.free_gpu_memory_fraction, the templates' default
      break;
  }
}

// InferenceX's recipes (SemiAnalysisAI/InferenceX: benchmarks/<name>_{docker,slurm}.sh
// to 2026-01-22, benchmarks/<name>.sh to 2026-02-19, benchmarks/single_node/<name>.sh
// after; the version in force on the run's day), by model, engine, GPU and precision:
// the step budgets, the sequences per step, SGLang's receive interval and TensorRT-LLM's
// KV share. docs/ENGINE_DEFAULTS.md lists them with their sources.
bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }
bool fp4(const BenchRow& r) { return r.gemm_quant == "nvfp4" || r.moe_quant == "nvfp4"; }
bool fp8(const BenchRow& r) { return has(r.gemm_quant, "fp8") || has(r.moe_quant, "fp8"); }

}  // namespace

// InferenceX's MTP recipes that measured runs name by their image alone (the CSV has no
// column for speculative decoding; each image below served only the MTP recipe of its
// model, engine, GPU and precision in .github/configs/nvidia-master.yaml's history,
// SemiAnalysisAI/InferenceX, 2025-10 to 2026-04; docs/ENGINE_DEFAULTS.md):
//  - dsr1-fp8-b200-trt-mtp (5d517074c, 2026-02-05) and dsr1-fp4-b200-trt-mtp
//    (0aae52d4c, 2026-02-06), release:1.2.0rc6.post3: speculative_config MTP with
//    num_nextn_predict_layers 3, or 1 under attention DP
//    (benchmarks/dsr1_fp{8,4}_b200_trt_mtp.sh);
//  - qwen3.5-fp8-b200-sglang-mtp (35d4bb367, 2026-03-20), sglang:v0.5.9-cu130:
//    --speculative-algorithm EAGLE over the model's MTP layer, 3 steps, top-k 1
//    (benchmarks/single_node/qwen3.5_fp8_b200_mtp.sh);
//  - qwen3.5-fp8-h200-sglang-mtp (6cb829125, 2026-04-14), sglang:v0.5.10.post1: the
//    same drafts (benchmarks/single_node/qwen3.5_fp8_h200_mtp.sh; before that day it ran
//    on the plain recipe's v0.5.9-cu129-amd64, and such rows are served without drafts).
// The acceptance is the published default (plan/speculative.h): the rows do not say it.
plan::SpeculativeDecoding inferencex_speculative(const BenchRow& r) {
  plan::SpeculativeDecoding s;
  if (r.deployer != Deployer::inferencex) return s;
  const bool b200 = r.system == "b200_sxm", h200 = r.system == "h200_sxm";
  const bool trtllm_mtp = b200 && r.backend == "trtllm" && has(r.model_path, "DeepSeek-R1") &&
                          r.image == "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post3";
  const bool qwen_fp8_sglang = r.backend == "sglang" && has(r.model_path, "Qwen3.5") && fp8(r);
  const bool sglang_mtp = qwen_fp8_sglang && ((b200 && r.image == "lmsysorg/sglang:v0.5.9-cu130") ||
                                              (h200 && r.image == "lmsysorg/sglang:v0.5.10.post1"));
  if (trtllm_mtp || sglang_mtp) {
    s.method = plan::SpecMethod::mtp;
    s.draft_tokens = trtllm_mtp && r.attention_dp > 1 ? 1 : 3;
  }
  return s;
}

namespace {

// The recipes are chosen by GPU too, and the Hopper ones (`*_h100.sh`, `*_h200.sh`) set
// fewer flags than the Blackwell ones the rules below were first read from.
bool hopper(const BenchRow& r) { return r.system == "h100_sxm" || r.system == "h200_sxm"; }

// The KV cache's dtype in InferenceX's aggregated recipes (`--kv-cache-dtype fp8[_e4m3]`,
// vLLM's `kv-cache-dtype: fp8` in config.yaml, TensorRT-LLM's kv_cache_config `dtype: fp8`;
// where a recipe sets none the engine's "auto", the model's BF16): every Llama-3.1-70B and
// DeepSeek-R1 TensorRT-LLM recipe; gpt-oss on B200 (vLLM from 2025-12-05, TensorRT-LLM
// always) but not on Hopper (`dtype: auto` on TensorRT-LLM); DeepSeek-R1 and GLM-5 on
// SGLang on Blackwell (GLM-5 fp4 from 2026-04-09) but not dsr1_fp8_h200.sh or
// glm5_fp8_h200.sh; Qwen3.5's fp8 and fp4 recipes on every GPU, not its BF16 ones; MiniMax
// fp4, and fp8 on Blackwell from 2026-04-03; Kimi-K2.5 fp4 on B200 from 2026-04-20.
bool inferencex_fp8_kv(const BenchRow& r) {
  const std::string& day = r.measured_date;
  if (has(r.model_path, "Llama")) return true;
  if (has(r.model_path, "DeepSeek")) return r.backend == "trtllm" || !hopper(r);
  if (has(r.model_path, "gpt-oss"))
    return !hopper(r) && (r.backend == "trtllm" || (r.backend == "vllm" && day >= "2025-12-05"));
  if (has(r.model_path, "GLM-5")) return !hopper(r) && (!fp4(r) || day >= "2026-04-09");
  if (has(r.model_path, "Qwen3.5")) return fp8(r) || fp4(r);
  if (has(r.model_path, "MiniMax")) return fp4(r) || (!hopper(r) && day >= "2026-04-03");
  if (has(r.model_path, "Kimi")) return fp4(r) && r.system == "b200_sxm" && day >= "2026-04-20";
  return fp8(r) || fp4(r);  // a model without a recipe read here: as the generator's runs
}

void inferencex_vllm(const BenchRow& r, EngineProfile& p) {
  p.token_budget = 8192;  // max-num-batched-tokens 8192 (gpt-oss, Llama-3.1-70B), or vLLM's default
  // minimaxm2.5_fp8_b200.sh from 2026-04-03, the fp4 and B300 recipes from their first
  // version; minimaxm2.5_fp8_h100.sh and _h200.sh keep the default.
  const bool minimax = has(r.model_path, "MiniMax") && r.measured_date >= "2026-04-03" && !hopper(r);
  // kimik2.5_fp4_b200.sh from 2026-04-20 (6c3acebfa); kimik2.5_fp4_b300.sh never did
  // before May, nor do the int4 recipes.
  const bool kimi = has(r.model_path, "Kimi") && fp4(r) && r.measured_date >= "2026-04-20" && r.system == "b200_sxm";
  if (minimax || kimi) p.token_budget = 2 * r.isl;  // max-num-batched-tokens 2 x ISL
}

// SGLang's H200 recipes (benchmarks/single_node/dsr1_fp8_h200.sh, qwen3.5_fp8_h200.sh,
// glm5_fp8_h200.sh, 2025-10 to 2026-04) set no receive interval: the scheduler looks for
// new requests every step.
void inferencex_sglang_hopper(const BenchRow& r, EngineProfile& p) {
  if (has(r.model_path, "DeepSeek")) {
    // --chunked-prefill-size = --max-prefill-tokens 32768; --max-running-requests 512
    // at ISL = OSL = 1,024, else 256.
    p.token_budget = 32768;
    p.max_running = std::min<int64_t>(p.max_running, r.isl == 1024 && r.osl == 1024 ? 512 : 256);
  } else if (has(r.model_path, "Qwen3.5")) {
    // --chunked-prefill-size 16384 (max-prefill-tokens' default 16384), max-running 128.
    p.token_budget = 16384, p.max_running = std::min<int64_t>(p.max_running, 128);
  }
  // GLM-5: SGLang's defaults (chunked-prefill-size by GPU memory).
}

void inferencex_sglang(const BenchRow& r, EngineProfile& p) {
  if (hopper(r)) {
    p.token_budget = std::min<int64_t>(16384, p.token_budget);
    return inferencex_sglang_hopper(r, p);
  }
  const int64_t c = r.concurrency();
  // --scheduler-recv-interval 30 from 16 requests in flight, else 10.
  const int64_t recv = c >= 16 ? 30 : 10;
  // Recipes that set neither chunked-prefill-size nor max-prefill-tokens: the defaults
  // (max-prefill-tokens 16384).
  p.token_budget = std::min<int64_t>(16384, p.token_budget);
  if (has(r.model_path, "DeepSeek")) {
    if (fp4(r)) {
      p.token_budget = 16384, p.max_running = std::min<int64_t>(p.max_running, 256);
    } else if (r.tp == 4) {
      p.token_budget = 8192, p.max_running = std::min<int64_t>(p.max_running, 32);
    } else {
      p.token_budget = 32768, p.max_running = std::min<int64_t>(p.max_running, 128);
    }
    p.recv_interval_steps = r.tp == 4 && !fp4(r) ? 10 : recv;
  } else if (has(r.model_path, "Qwen3.5")) {
    const bool b300_fp8 = r.system == "b300_sxm" && fp8(r);
    p.token_budget = b300_fp8 ? 16384 : 32768;
    if (!b300_fp8) p.max_running = std::min<int64_t>(p.max_running, 128);
    p.recv_interval_steps = b300_fp8 ? 10 : recv;
  } else if (has(r.model_path, "GLM-5")) {
    p.token_budget = fp4(r) ? 16384 : 32768;  // fp4: chunked-prefill-size 131072, max-prefill-tokens 16384
  }
}

void inferencex_trtllm(const BenchRow& r, EngineProfile& p) {
  // free_gpu_memory_fraction: 0.8 (dsr1_fp{8,4}_b200_trt.sh), 0.75 (dsr1_fp8_h200_trt.sh).
  p.memory.memory_fraction = hopper(r) ? 0.75 : 0.8;
  if (has(r.model_path, "gpt-oss")) {
    p.token_budget = 20000, p.memory.memory_fraction = 0.85;
  } else if (has(r.model_path, "Llama")) {
    p.token_budget = 16384, p.memory.memory_fraction = 0.9;
  } else {
    p.token_budget = round_up(r.concurrency() + r.isl + 64, 64);  // floored at 8192 from 2026-01-21
    if (r.measured_date >= "2026-01-21") p.token_budget = std::max<int64_t>(8192, p.token_budget);
    // The MTP recipes: max_num_tokens ((MTP + 1) x max_batch_size + ISL + 64), to 64.
    if (const plan::SpeculativeDecoding s = inferencex_speculative(r); s.on())
      p.token_budget = round_up(s.verify_width() * r.batch_size + r.isl + 64, 64);
  }
}

void inferencex_flags(Engine e, const BenchRow& r, EngineProfile& p) {
  switch (e) {
    case Engine::vllm: return inferencex_vllm(r, p);
    case Engine::sglang: return inferencex_sglang(r, p);
    case Engine::trtllm: return inferencex_trtllm(r, p);
  }
}

}  // namespace

plan::KvDtype kv_dtype_of(const BenchRow& r) {
  if (r.deployer == Deployer::inferencex && !r.disaggregated())
    return inferencex_fp8_kv(r) ? plan::KvDtype::fp8 : plan::KvDtype::bf16;
  for (const std::string& mode : {r.gemm_quant, r.moe_quant})
    if (mode == "fp8" || mode == "fp8_block" || mode == "nvfp4") return plan::KvDtype::fp8;
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
