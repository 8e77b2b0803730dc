#include "serve/inferencex_recipes.h"

#include <algorithm>

#include "serve/bench_loader.h"
#include "serve/inferencex_rows.h"
#include "serve/inferencex_twins.h"

namespace dayzero::serve {

namespace {

using detail::fp8_row;
using detail::hopper;
using detail::names;
using detail::nvfp4_row;
using detail::round_up;

// InferenceX's recipes (SemiAnalysisAI/InferenceX: benchmarks/<name>_{docker,slurm}.sh
// to 2026-01-22, benchmarks/<name>.sh to 2026-02-19, benchmarks/single_node/<name>.sh
// after; the version in force on the run's day), by model, engine, GPU and precision:
// the step budgets, the sequences per step, SGLang's receive interval and TensorRT-LLM's
// KV share. docs/ENGINE_DEFAULTS.md lists them with their sources.
// Recipe versions that changed several flags at once, each read once here:
// minimaxm2.5_fp8_b200.sh's bddbf4031 (2026-04-03: 2 x ISL budget, FP8 KV, memory 0.90;
// the fp4 and B300 recipes had them from their first version, the Hopper ones never),
// kimik2.5_fp4_b200.sh's 6c3acebfa (2026-04-20: 2 x ISL, FP8 KV), glm5_fp4_b200.sh's
// 475cc1dbc (2026-04-09: 32,768-token chunks, FP8 KV, memory 0.9).
bool minimax_2026_04_03(const BenchRow& r) {
  return names(r.model_path, "MiniMax") && !hopper(r) && r.measured_date >= "2026-04-03";
}
bool kimi_fp4_2026_04_20(const BenchRow& r) {
  return names(r.model_path, "Kimi") && nvfp4_row(r) && r.system == "b200_sxm" && r.measured_date >= "2026-04-20";
}
bool glm5_fp4_2026_04_09(const BenchRow& r) {
  return names(r.model_path, "GLM-5") && nvfp4_row(r) && r.measured_date >= "2026-04-09";
}

}  // namespace

std::string inferencex_recipe_unknown(const BenchRow& r) {
  if (inferencex_twin_recipe(r) != TwinRecipe::either) return "";
  return "two InferenceX recipes ran this point on " + r.image + " on " + r.measured_date + " (" +
         inferencex_twin_names(r) +
         "): the database dump holds the plain recipe's run, and this run is not it, nor does the row say which "
         "recipe it is";
}

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
//    same drafts (benchmarks/single_node/qwen3.5_fp8_h200_mtp.sh; from 2026-04-06 to that
//    day it ran on the plain recipe's v0.5.9-cu129-amd64: serve/inferencex_twins.h).
// The acceptance is the published default (plan/speculative.h): the rows do not say it.
plan::SpeculativeDecoding inferencex_speculative(const BenchRow& r) {
  plan::SpeculativeDecoding s;
  if (r.deployer != Deployer::inferencex) return s;
  const bool b200 = r.system == "b200_sxm", h200 = r.system == "h200_sxm";
  const bool trtllm_mtp = b200 && r.backend == "trtllm" && names(r.model_path, "DeepSeek-R1") &&
                          r.image == "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post3";
  const bool qwen_fp8_sglang = r.backend == "sglang" && names(r.model_path, "Qwen3.5") && fp8_row(r);
  const bool sglang_mtp = qwen_fp8_sglang && ((b200 && r.image == "lmsysorg/sglang:v0.5.9-cu130") ||
                                              (h200 && r.image == "lmsysorg/sglang:v0.5.10.post1"));
  // Or an MTP twin that shared its plain recipe's image (serve/inferencex_twins.h).
  if (!trtllm_mtp && !sglang_mtp && inferencex_twin_recipe(r) != TwinRecipe::mtp) return s;
  // The drafts: TensorRT-LLM's num_nextn_predict_layers 3, or 1 under attention DP
  // (dsr1_fp{8,4}_{b200,h200}_trt{_mtp,_mtp_slurm}.sh); Qwen3.5's EAGLE over its MTP
  // layer, 3 steps, top-k 1 (qwen3.5_fp8_{b200,h200}_mtp.sh); DeepSeek-R1's on SGLang
  // EAGLE, 2 steps, 3 draft tokens, top-k 1 (dsr1_fp8_b200_mtp.sh).
  s.method = plan::SpecMethod::mtp;
  if (r.backend == "trtllm") s.draft_tokens = r.attention_dp > 1 ? 1 : 3;
  else s.draft_tokens = names(r.model_path, "Qwen3.5") ? 3 : 2;
  return s;
}

// The KV cache's dtype in InferenceX's aggregated recipes (`--kv-cache-dtype fp8[_e4m3]`,
// vLLM's `kv-cache-dtype: fp8` in config.yaml, TensorRT-LLM's kv_cache_config `dtype: fp8`;
// where a recipe sets none the engine's "auto", the model's BF16): every Llama-3.1-70B and
// DeepSeek-R1 TensorRT-LLM recipe; gpt-oss on B200 (vLLM from 2025-12-05, TensorRT-LLM
// always) but not on Hopper (`dtype: auto` on TensorRT-LLM); DeepSeek-R1 and GLM-5 on
// SGLang on Blackwell (GLM-5 fp4 from 2026-04-09) but not dsr1_fp8_h200.sh or
// glm5_fp8_h200.sh; Qwen3.5's fp8 and fp4 recipes on every GPU, not its BF16 ones; MiniMax
// fp4, and fp8 on Blackwell from 2026-04-03; Kimi-K2.5 fp4 on B200 from 2026-04-20.
bool inferencex_fp8_kv(const BenchRow& r) {
  if (names(r.model_path, "Llama")) return true;
  if (names(r.model_path, "DeepSeek")) return r.backend == "trtllm" || !hopper(r);
  if (names(r.model_path, "gpt-oss"))
    return !hopper(r) && (r.backend == "trtllm" || (r.backend == "vllm" && r.measured_date >= "2025-12-05"));
  if (names(r.model_path, "GLM-5")) return !hopper(r) && (!nvfp4_row(r) || glm5_fp4_2026_04_09(r));
  if (names(r.model_path, "Qwen3.5")) return fp8_row(r) || nvfp4_row(r);
  if (names(r.model_path, "MiniMax")) return nvfp4_row(r) || minimax_2026_04_03(r);
  if (names(r.model_path, "Kimi")) return kimi_fp4_2026_04_20(r);
  return fp8_row(r) || nvfp4_row(r);  // a model without a recipe read here: as the generator's runs
}

namespace {

void inferencex_vllm(const BenchRow& r, EngineProfile& p) {
  p.token_budget = 8192;  // max-num-batched-tokens 8192 (gpt-oss, Llama-3.1-70B), or vLLM's default
  // kimik2.5_fp4_b300.sh never set it before May, nor do the int4 recipes.
  if (minimax_2026_04_03(r) || kimi_fp4_2026_04_20(r)) p.token_budget = 2 * r.isl;  // max-num-batched-tokens 2 x ISL
  // --gpu-memory-utilization 0.95: kimik2.5_int4_*.sh, minimaxm2.5_fp8_h200.sh, and
  // minimaxm2.5_fp8_b200.sh before 2026-04-03 (bddbf4031: 0.90); the others 0.9.
  const bool kimi_int4 = names(r.model_path, "Kimi") && !nvfp4_row(r);
  const bool minimax_95 = names(r.model_path, "MiniMax") && fp8_row(r) &&
                          (r.system == "h200_sxm" || (r.system == "b200_sxm" && !minimax_2026_04_03(r)));
  p.memory.memory_fraction = kimi_int4 || minimax_95 ? 0.95 : 0.9;
}

// --mem-fraction-static of SGLang's recipes (weights and the KV pool, a share of the total
// memory): DeepSeek-R1 fp8 0.82 (0.95 at TP 4 on B200, dsr1_fp8_b200.sh), fp4 0.85; Qwen3.5
// 0.82 (BF16, and fp8 on B200), 0.85 (fp4 on B200), 0.8 (fp8 and fp4 elsewhere); GLM-5 fp8
// 0.85, fp4 0.8 to 2026-04-08 and 0.9 from 475cc1dbc (2026-04-09).
double inferencex_sglang_memory(const BenchRow& r) {
  const bool b200 = r.system == "b200_sxm";
  if (names(r.model_path, "DeepSeek")) return nvfp4_row(r) ? 0.85 : r.tp == 4 && !hopper(r) ? 0.95 : 0.82;
  if (names(r.model_path, "GLM-5")) return !nvfp4_row(r) ? 0.85 : glm5_fp4_2026_04_09(r) ? 0.9 : 0.8;
  if (names(r.model_path, "Qwen3.5")) {
    if (nvfp4_row(r)) return b200 ? 0.85 : 0.8;
    return fp8_row(r) && !b200 ? 0.8 : 0.82;
  }
  return 0;  // no recipe read: the engine's default
}

// SGLang's H200 recipes (benchmarks/single_node/dsr1_fp8_h200.sh, qwen3.5_fp8_h200.sh,
// glm5_fp8_h200.sh, 2025-10 to 2026-04) set no receive interval: the scheduler looks for
// new requests every step.
void inferencex_sglang_hopper(const BenchRow& r, EngineProfile& p) {
  if (names(r.model_path, "DeepSeek")) {
    // --chunked-prefill-size = --max-prefill-tokens 32768; --max-running-requests 512
    // at ISL = OSL = 1,024, else 256.
    p.token_budget = 32768;
    p.max_running = std::min<int64_t>(p.max_running, r.isl == 1024 && r.osl == 1024 ? 512 : 256);
  } else if (names(r.model_path, "Qwen3.5")) {
    // --chunked-prefill-size 16384 (max-prefill-tokens' default 16384), max-running 128.
    p.token_budget = 16384, p.max_running = std::min<int64_t>(p.max_running, 128);
  }
  // GLM-5: SGLang's defaults (chunked-prefill-size by GPU memory).
}

void inferencex_sglang(const BenchRow& r, EngineProfile& p) {
  if (const double share = inferencex_sglang_memory(r); share > 0) p.memory.memory_fraction = share;
  // Recipes that set neither chunked-prefill-size nor max-prefill-tokens: the defaults
  // (max-prefill-tokens 16384).
  p.token_budget = std::min<int64_t>(16384, p.token_budget);
  if (hopper(r)) return inferencex_sglang_hopper(r, p);
  // --scheduler-recv-interval 30 from 16 requests in flight, else 10.
  const int64_t recv = r.concurrency() >= 16 ? 30 : 10;
  if (names(r.model_path, "DeepSeek")) {
    if (nvfp4_row(r)) {
      p.token_budget = 16384, p.max_running = std::min<int64_t>(p.max_running, 256);
    } else if (r.tp == 4) {
      p.token_budget = 8192, p.max_running = std::min<int64_t>(p.max_running, 32);
    } else if (inferencex_twin_recipe(r) == TwinRecipe::mtp) {
      // dsr1_fp8_b200_mtp.sh: chunked-prefill-size 16384, max-running-requests 512.
      p.token_budget = 16384, p.max_running = std::min<int64_t>(p.max_running, 512);
    } else {
      p.token_budget = 32768, p.max_running = std::min<int64_t>(p.max_running, 128);
    }
    p.recv_interval_steps = r.tp == 4 && !nvfp4_row(r) ? 10 : recv;
  } else if (names(r.model_path, "Qwen3.5")) {
    const bool b300_fp8 = r.system == "b300_sxm" && fp8_row(r);
    p.token_budget = b300_fp8 ? 16384 : 32768;
    if (!b300_fp8) p.max_running = std::min<int64_t>(p.max_running, 128);
    p.recv_interval_steps = b300_fp8 ? 10 : recv;
  } else if (names(r.model_path, "GLM-5")) {
    // fp4: chunked-prefill-size 131072 and max-prefill-tokens' default 16384, both 32768
    // from 475cc1dbc (2026-04-09).
    p.token_budget = nvfp4_row(r) && !glm5_fp4_2026_04_09(r) ? 16384 : 32768;
  }
}

// TensorRT-LLM's attention-DP balancing in InferenceX's recipes under `dp-attn`
// (attention_dp_config with enable_balance: true): every DeepSeek-R1 recipe, plain and MTP,
// on B200 and H200 from 2025-09-18 (dsr1_fp{4,8}_{b200,h200}_trt{,_mtp}{,_slurm}.sh:
// batching_wait_iters 0, timeout_iters 60), and gpt-oss on B200 from 2025-09-19
// (gptoss_fp4_b200_trt{,_docker,_slurm}.sh: the engine's defaults, 50 and 10);
// gptoss_fp4_h200_trt.sh sets none.
void inferencex_adp_balance(const BenchRow& r, EngineProfile& p) {
  if (r.attention_dp < 2 || (!r.measured_date.empty() && r.measured_date < "2025-09-18")) return;
  if (names(r.model_path, "DeepSeek")) p.adp_balance = {true, 60, 0};
  else if (names(r.model_path, "gpt-oss") && !hopper(r)) p.adp_balance = {true, 50, 10};
}

// TensorRT-LLM's batch waiting in dsr1_fp8_b200_trt.sh from ec7bafaae (2026-01-29, to
// 2026-06 at least): `batch_wait_timeout_iters: 40`, `batch_wait_max_tokens_ratio: 0.8`
// at ISL 1,024 / OSL 1,024 from 64 requests in flight (DELAY_BATCHING; the engine ignores
// it under attention DP). Not the MTP recipe, nor FP4's or H200's.
void inferencex_batch_waiting(const BenchRow& r, EngineProfile& p) {
  if (names(r.model_path, "DeepSeek") && r.system == "b200_sxm" && fp8_row(r) && !nvfp4_row(r) &&
      r.measured_date >= "2026-01-29" && r.isl == 1024 && r.osl == 1024 && r.concurrency() >= 64 &&
      !inferencex_speculative(r).on())
    p.batch_waiting = {40, 0.8};
}

void inferencex_trtllm(const BenchRow& r, EngineProfile& p) {
  inferencex_adp_balance(r, p);
  inferencex_batch_waiting(r, p);
  // free_gpu_memory_fraction: 0.8 (dsr1_fp{8,4}_b200_trt.sh), 0.75 (dsr1_fp8_h200_trt.sh).
  p.memory.memory_fraction = hopper(r) ? 0.75 : 0.8;
  if (names(r.model_path, "gpt-oss")) {
    p.token_budget = 20000, p.memory.memory_fraction = 0.85;
  } else if (names(r.model_path, "Llama")) {
    p.token_budget = 16384, p.memory.memory_fraction = 0.9;
  } else {
    p.token_budget = round_up(r.concurrency() + r.isl + 64, 64);  // floored at 8192 from 2026-01-21
    if (r.measured_date >= "2026-01-21") p.token_budget = std::max<int64_t>(8192, p.token_budget);
    // The MTP recipes: max_num_tokens ((MTP + 1) x max_batch_size + ISL + 64), to 64.
    if (const plan::SpeculativeDecoding s = inferencex_speculative(r); s.on())
      p.token_budget = round_up(s.verify_width() * r.batch_size + r.isl + 64, 64);
  }
}

}  // namespace

void inferencex_flags(Engine e, const BenchRow& r, EngineProfile& p) {
  switch (e) {
    case Engine::vllm: return inferencex_vllm(r, p);
    case Engine::sglang: return inferencex_sglang(r, p);
    case Engine::trtllm: return inferencex_trtllm(r, p);
  }
}

}  // namespace dayzero::serve
