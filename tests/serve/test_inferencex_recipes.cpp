// InferenceX's recipes as the measured runs were deployed with them (serve/inferencex_recipes.h):
// each rule hand-read from the recipe script and commit docs/ENGINE_DEFAULTS.md names.
#include <gtest/gtest.h>

#include "bench_csv.h"
#include "serve/bench_predict.h"
#include "serve/inferencex_twins.h"

namespace dayzero::serve {
namespace {

using bench_test::kHeader;
using bench_test::write_csv;

// InferenceX's recipes, hand-read (docs/ENGINE_DEFAULTS.md): 64 requests of ISL 1,000
// on a 180 GiB GPU (SGLang's default chunk there: 16,384).
// An InferenceX run of 64 requests in flight, ISL = OSL = `isl`, on `system` on `day`.
BenchRow inferencex_row(const char* system, const char* day, int64_t isl) {
  BenchRow r;
  r.batch_size = 64;
  r.isl = r.osl = isl;
  r.deployer = Deployer::inferencex;
  r.measured_date = day;
  r.system = system;
  return r;
}

TEST(BenchPredict, InferencexRunsAreServedWithTheirRecipesFlags) {
  BenchRow r = inferencex_row("b200_sxm", "2026-03-01", 1000);
  const Deployment d{180.0 * (1 << 30), true, 8, 1, true};
  r.model_path = "openai/gpt-oss-120b";
  EXPECT_EQ(deployed_profile(Engine::vllm, d, r).token_budget, 8192);
  const EngineProfile t = deployed_profile(Engine::trtllm, d, r);
  EXPECT_EQ(t.token_budget, 20000);
  EXPECT_DOUBLE_EQ(t.memory.memory_fraction, 0.85);
  r.model_path = "MiniMaxAI/MiniMax-M2.5";
  EXPECT_EQ(deployed_profile(Engine::vllm, d, r).token_budget, 8192);  // before 2026-04-03
  r.measured_date = "2026-04-17";
  EXPECT_EQ(deployed_profile(Engine::vllm, d, r).token_budget, 2000);  // 2 x ISL
  r.model_path = "deepseek-ai/DeepSeek-R1";
  r.gemm_quant = r.moe_quant = "fp8_block";
  r.tp = 8;
  EngineProfile s = deployed_profile(Engine::sglang, d, r);
  EXPECT_EQ(s.token_budget, 32768);
  EXPECT_EQ(s.max_running, 64);  // max-running-requests 128, above the 64 in flight
  EXPECT_EQ(s.recv_interval_steps, 30);
  EXPECT_EQ(s.policy, PrefillPolicy::prefill_first);
  r.batch_size = 8;
  EXPECT_EQ(deployed_profile(Engine::sglang, d, r).recv_interval_steps, 10);
  EXPECT_DOUBLE_EQ(deployed_profile(Engine::sglang, d, r).memory.memory_fraction, 0.82);
  r.tp = 4;  // dsr1_fp8_b200.sh at TP 4: --mem-fraction-static 0.95
  EXPECT_DOUBLE_EQ(deployed_profile(Engine::sglang, d, r).memory.memory_fraction, 0.95);
  r.tp = 8;
  // TensorRT-LLM: concurrency + ISL + 64 rounded up to 64, at least 8,192 from 2026-01-21.
  EXPECT_EQ(deployed_profile(Engine::trtllm, d, r).token_budget, 8192);
  r.measured_date = "2025-12-01";
  EXPECT_EQ(deployed_profile(Engine::trtllm, d, r).token_budget, 1088);
  r.model_path = "zhipuai/GLM-5";
  s = deployed_profile(Engine::sglang, d, r);
  EXPECT_EQ(s.token_budget, 32768);
  EXPECT_EQ(s.recv_interval_steps, 1);
}

// dsr1_fp8_b200_trt.sh from 2026-01-29 delays batching at ISL = OSL = 1,024 from 64
// requests in flight (batch_wait_timeout_iters 40, batch_wait_max_tokens_ratio 0.8);
// not below 64, not at other lengths, not before, not FP4's recipe, not H200's.
TEST(BenchPredict, InferencexDeepSeekFp8B200TensorrtWaitsForBatches) {
  BenchRow r = inferencex_row("b200_sxm", "2026-01-29", 1024);
  const Deployment d{180.0 * (1 << 30), true, 8, 1, true};
  r.model_path = "deepseek-ai/DeepSeek-R1-0528";
  r.gemm_quant = r.moe_quant = "fp8_block";
  r.tp = 8;
  const auto waits = [&](const BenchRow& row) {
    const BatchWaiting w = deployed_profile(Engine::trtllm, d, row).batch_waiting;
    return w.timeout_iters == 40 && w.max_tokens_ratio == 0.8;
  };
  EXPECT_TRUE(waits(r));
  BenchRow other = r;
  other.batch_size = 32;
  EXPECT_FALSE(waits(other));
  other = r;
  other.isl = 8192;
  EXPECT_FALSE(waits(other));
  other = r;
  other.measured_date = "2026-01-14";
  EXPECT_FALSE(waits(other));
  other = r;
  other.gemm_quant = other.moe_quant = "nvfp4";
  EXPECT_FALSE(waits(other));
  other = r;
  other.system = "h200_sxm";
  EXPECT_FALSE(waits(other));
  EXPECT_EQ(deployed_profile(Engine::trtllm, d, other).batch_waiting.timeout_iters, 0);  // the engine's default: off
}

// The Hopper recipes set fewer flags (dsr1_fp8_h200.sh, qwen3.5_fp8_h200.sh,
// glm5_fp8_h200.sh, dsr1_fp8_h200_trt.sh, minimaxm2.5_fp8_h200.sh; docs/ENGINE_DEFAULTS.md):
// no receive interval, no 2 x ISL budget; on a 141 GiB GPU SGLang's default chunk is 8,192.
TEST(BenchPredict, InferencexHopperRunsAreServedWithTheHopperRecipes) {
  BenchRow r = inferencex_row("h200_sxm", "2026-04-17", 1024);
  r.tp = 8;
  const Deployment d{141.0 * (1 << 30), false, 8, 1, true};
  r.model_path = "deepseek-ai/DeepSeek-R1";
  r.gemm_quant = r.moe_quant = "fp8_block";
  EngineProfile s = deployed_profile(Engine::sglang, d, r);
  EXPECT_EQ(s.token_budget, 32768);
  EXPECT_EQ(s.max_running, 64);                      // max-running-requests 512, above the 64 in flight
  EXPECT_EQ(s.recv_interval_steps, 1);               // B200's recipe: 30 at 64 in flight
  EXPECT_DOUBLE_EQ(s.memory.memory_fraction, 0.82);  // --mem-fraction-static 0.82
  EXPECT_DOUBLE_EQ(deployed_profile(Engine::trtllm, d, r).memory.memory_fraction, 0.75);
  r.system = "b200_sxm";
  EXPECT_EQ(deployed_profile(Engine::sglang, d, r).recv_interval_steps, 30);
  EXPECT_DOUBLE_EQ(deployed_profile(Engine::trtllm, d, r).memory.memory_fraction, 0.8);
  r.system = "h200_sxm";
  r.model_path = "Qwen/Qwen3.5-397B-A17B-FP8";
  r.batch_size = 256;
  s = deployed_profile(Engine::sglang, d, r);
  EXPECT_EQ(s.token_budget, 16384);
  EXPECT_EQ(s.max_running, 128);
  EXPECT_EQ(s.recv_interval_steps, 1);
  r.model_path = "zhipuai/GLM-5";
  s = deployed_profile(Engine::sglang, d, r);
  EXPECT_EQ(s.token_budget, 8192);  // SGLang's default on 141 GiB; B200's recipe: 32,768
  EXPECT_EQ(s.recv_interval_steps, 1);
  r.model_path = "MiniMaxAI/MiniMax-M2.5";
  EngineProfile v = deployed_profile(Engine::vllm, d, r);
  EXPECT_EQ(v.token_budget, 8192);                   // B200 from 2026-04-03: 2 x ISL
  EXPECT_DOUBLE_EQ(v.memory.memory_fraction, 0.95);  // --gpu-memory-utilization 0.95
  r.model_path = "openai/gpt-oss-120b";
  r.gemm_quant = r.moe_quant = "nvfp4";
  EXPECT_DOUBLE_EQ(deployed_profile(Engine::vllm, d, r).memory.memory_fraction, 0.9);
  // gptoss_fp4_h200_trt.sh (626932a11, 2026-03-27; image release:gpt-oss-dev, later
  // 1.3.0rc11): max_num_tokens 20000, free_gpu_memory_fraction 0.85, KV dtype auto (BF16).
  r.backend = "trtllm";
  const EngineProfile t = deployed_profile(Engine::trtllm, d, r);
  EXPECT_EQ(t.token_budget, 20000);
  EXPECT_DOUBLE_EQ(t.memory.memory_fraction, 0.85);
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);
  r.backend.clear();
  r.gemm_quant = r.moe_quant = "fp8_block";
  r.model_path = "moonshotai/Kimi-K2.5";
  r.gemm_quant = r.moe_quant = "nvfp4";
  r.measured_date = "2026-04-21";
  r.system = "b300_sxm";
  EXPECT_EQ(deployed_profile(Engine::vllm, d, r).token_budget, 8192);  // kimik2.5_fp4_b300.sh: none
  r.system = "b200_sxm";
  EXPECT_EQ(deployed_profile(Engine::vllm, d, r).token_budget, 2048);  // kimik2.5_fp4_b200.sh: 2 x ISL
  // qwen3.5-fp8-h200-sglang-mtp ran alone on sglang:v0.5.10.post1 (from 2026-04-14).
  r.backend = "sglang";
  r.model_path = "Qwen/Qwen3.5-397B-A17B-FP8";
  r.gemm_quant = r.moe_quant = "fp8";
  r.system = "h200_sxm";
  r.image = "lmsysorg/sglang:v0.5.10.post1";
  EXPECT_EQ(inferencex_speculative(r).draft_tokens, 3);
  r.image = "lmsysorg/sglang:v0.5.9-cu129-amd64";  // the plain recipe's, and the MTP one's before
  EXPECT_FALSE(inferencex_speculative(r).on());
}

// InferenceX's KV cache dtype is the recipe's `--kv-cache-dtype` (or the engine's BF16
// "auto" where it sets none), not the checkpoint's quantization.
TEST(BenchPredict, InferencexKvCacheIsTheRecipes) {
  BenchRow r = inferencex_row("b200_sxm", "2025-11-02", 1024);
  r.mode = "agg";
  r.backend = "vllm";
  r.model_path = "openai/gpt-oss-120b";
  r.gemm_quant = r.moe_quant = "nvfp4";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);  // gptoss_fp4_b200_docker.sh before 2025-12-05
  r.measured_date = "2026-02-25";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::fp8);  // kv-cache-dtype: fp8
  r.system = "h100_sxm";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);  // gptoss_fp4_h100.sh sets none
  r.backend = "sglang";
  r.model_path = "deepseek-ai/DeepSeek-R1";
  r.gemm_quant = r.moe_quant = "fp8_block";
  r.system = "h200_sxm";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);  // dsr1_fp8_h200.sh sets none
  r.system = "b200_sxm";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::fp8);  // --kv-cache-dtype fp8_e4m3
  r.model_path = "Qwen/Qwen3.5-397B-A17B";
  r.gemm_quant = r.moe_quant = "";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);  // qwen3.5_bf16_b200.sh sets none
  r.backend = "vllm";
  r.model_path = "MiniMaxAI/MiniMax-M2.5";
  r.gemm_quant = r.moe_quant = "fp8_block";
  r.measured_date = "2026-03-28";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);  // minimaxm2.5_fp8_b200.sh before 2026-04-03
  r.measured_date = "2026-04-08";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::fp8);
  r.mode = "disagg";  // the multi-node recipes are not read here: as the generator's runs
  r.measured_date = "2026-03-28";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::fp8);
}

// InferenceX's MTP recipes are told apart by the image the row records (bench_predict.cpp):
// DeepSeek-R1 on TensorRT-LLM 1.2.0rc6.post3 drafts 3 tokens (1 under attention DP) and
// its step budget grows to (3 + 1) x batch + ISL + 64, to 64; the same row on post2 (the
// plain recipe's image), another GPU or a generator run drafts nothing.
TEST(BenchPredict, InferencexMtpRecipesAreKnownByTheirImage) {
  const std::string h = std::string(kHeader) + ",silicon_data_source\n";
  const auto rows = read_bench_csv(write_csv(
      "image", h + "a,trtllm,,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1000,1000,fp8_block,fp8_block,8,8,1,1,,,50,10," +
                   "source_file=2026-03-25.csv; model=DeepSeek-R1; measured=2026-02-05T19:55:05Z; wip=False; " +
                   "image=nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc6.post3\n" +
                   "b,trtllm,,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1000,1000,fp8_block,fp8_block,8,8,1,1,,,50,10," +
                   "source_file=2026-03-25.csv; image=nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post2 \n"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].image, "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post3");
  EXPECT_EQ(rows[1].image, "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post2");
  BenchRow r = rows[0];
  plan::SpeculativeDecoding s = inferencex_speculative(r);
  EXPECT_EQ(s.method, plan::SpecMethod::mtp);
  EXPECT_EQ(s.draft_tokens, 3);
  const Deployment d{180.0 * (1 << 30), true, 8, 1, true};
  EXPECT_EQ(deployed_profile(Engine::trtllm, d, r).token_budget, 1152);  // 4 x 8 + 1000 + 64 = 1096 -> 1152
  r.attention_dp = 8;
  r.tp = 1;
  EXPECT_EQ(inferencex_speculative(r).draft_tokens, 1);
  EXPECT_FALSE(inferencex_speculative(rows[1]).on());
  r = rows[0];
  r.system = "h100_sxm";
  EXPECT_FALSE(inferencex_speculative(r).on());
  r = rows[0];
  r.deployer = Deployer::generator;
  EXPECT_FALSE(inferencex_speculative(r).on());
  // Qwen3.5 FP8 on SGLang: EAGLE over its MTP layer, 3 steps, under v0.5.9-cu130 only.
  r = rows[0];
  r.backend = "sglang";
  r.model_path = "Qwen/Qwen3.5-397B-A17B";
  r.image = "lmsysorg/sglang:v0.5.9-cu130";
  EXPECT_EQ(inferencex_speculative(r).draft_tokens, 3);
  BenchOptions o = bench_test::shipped_options();
  const auto p = predict_bench({r}, o);  // no published acceptance for its drafts: rejected
  EXPECT_EQ(p[0].reason.rfind("speculative decoding at an unknown acceptance: InferenceX's MTP recipe (image "
                              "lmsysorg/sglang:v0.5.9-cu130) drafted 3 tokens a step",
                              0),
            0u)
      << p[0].reason;
  r.image = "lmsysorg/sglang:v0.5.9-cu130-amd64";
  EXPECT_FALSE(inferencex_speculative(r).on());
}

// dsr1-fp8-b200-sglang and its MTP twin ran one image (sglang:v0.5.9-cu130) from
// 2026-03-25: a point only the MTP recipe's search space holds is its run (EAGLE, 2 drafts,
// 512 sequences, 16,384-token chunks); where both ran it, the database dump's run is the
// plain recipe's (and so is another export's copy of it) and any other is refused.
TEST(BenchPredict, InferencexPlainAndMtpRecipesOnOneImageAreToldApartBySearchSpace) {
  const std::string h = std::string(kHeader) + ",silicon_data_source\n";
  const std::string r1 = "sglang,0.5.9,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,";
  const std::string q = ",fp8,fp8_block,";
  const std::string dump =
      "db-dump/2026-04-27; config_id=87; measured=2026-03-25T00:00:00.000Z; "
      "lmsysorg/sglang:v0.5.9-cu130\n";
  const std::string exported =
      "source_file=2026-03-25.csv; measured=2026-03-25T16:34:14Z; "
      "image=lmsysorg/sglang:v0.5.9-cu130\n";
  const auto rows = read_bench_csv(
      write_csv("recipes", h + "dump," + r1 + "1024,1024" + q + "16,8,1,1,8,1,402.452385,13.180321," + dump + "copy," +
                               r1 + "1024,1024" + q + "16,8,1,1,8,1,402.45238500000001,13.180321," + exported +
                               "twin," + r1 + "1024,1024" + q + "16,8,1,1,8,1,586.3,11.71," + exported + "mtp," + r1 +
                               "1024,1024" + q + "256,8,1,1,8,1,2100.9,42.55," + exported + "long," + r1 + "8192,1024" +
                               q + "8,8,1,1,8,1,606.6,10.27," + exported + "tp4," + r1 + "8192,1024" + q +
                               "16,4,1,1,4,1,997.3,22.26," + exported));
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_TRUE(rows[0].in_database_dump);
  EXPECT_TRUE(rows[1].in_database_dump);  // the same run, exported too
  EXPECT_FALSE(rows[2].in_database_dump);
  EXPECT_EQ(inferencex_recipe_unknown(rows[0]), "");  // the dump's rows record no image= key
  EXPECT_EQ(inferencex_recipe_unknown(rows[1]), "");
  EXPECT_FALSE(inferencex_speculative(rows[1]).on());
  EXPECT_NE(inferencex_recipe_unknown(rows[2]).find("two InferenceX recipes ran this point"), std::string::npos);
  for (size_t i : {3u, 4u}) {  // outside the plain recipe's 4 to 64 (ISL 1,024) and 4 (ISL 8,192)
    EXPECT_EQ(inferencex_recipe_unknown(rows[i]), "") << rows[i].id;
    const plan::SpeculativeDecoding s = inferencex_speculative(rows[i]);
    EXPECT_EQ(s.method, plan::SpecMethod::mtp) << rows[i].id;
    EXPECT_EQ(s.draft_tokens, 2) << rows[i].id;
  }
  const Deployment d{180.0 * (1 << 30), true, 8, 1, true};
  const EngineProfile mtp = deployed_profile(Engine::sglang, d, rows[3]);
  EXPECT_EQ(mtp.token_budget, 16384);
  EXPECT_EQ(mtp.max_running, 256);  // the client's 256 under the recipe's 512
  const EngineProfile plain = deployed_profile(Engine::sglang, d, rows[1]);
  EXPECT_EQ(plain.token_budget, 32768);
  EXPECT_EQ(plain.max_running, 16);
  EXPECT_EQ(inferencex_recipe_unknown(rows[5]), "");  // the MTP recipe runs TP 8 only
  EXPECT_FALSE(inferencex_speculative(rows[5]).on());
  BenchOptions o = bench_test::shipped_options();
  const auto p = predict_bench({rows[2]}, o);
  EXPECT_FALSE(p[0].predicted);
  EXPECT_EQ(p[0].reason.rfind("two InferenceX recipes ran this point on lmsysorg/sglang:v0.5.9-cu130", 0), 0u)
      << p[0].reason;
}

// TensorRT-LLM's DeepSeek-R1 recipes and their MTP twins on release:1.1.0rc2.post2
// (bf3456727, 2026-01-15): H200's from 2026-01-14 to 2026-05-18, B200's to the day each
// plain recipe moved on, after which the image served the MTP recipe alone.
TEST(BenchPredict, InferencexTensorrtMtpTwinsOnThePlainImageAreToldApart) {
  BenchRow r = inferencex_row("h200_sxm", "2026-03-01", 1024);
  r.backend = "trtllm";
  r.model_path = "deepseek-ai/DeepSeek-R1";
  r.gemm_quant = r.moe_quant = "fp8_block";
  r.image = "nvcr.io/nvidia/tensorrt-llm/release:1.1.0rc2.post2";
  r.tp = 1, r.attention_dp = 8, r.moe_ep = 8, r.batch_size = 32;  // 256 in flight, attention DP
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::mtp);
  EXPECT_EQ(inferencex_speculative(r).draft_tokens, 1);  // one draft under attention DP
  const Deployment d{141.0 * (1 << 30), true, 8, 1, true};
  EXPECT_EQ(deployed_profile(Engine::trtllm, d, r).token_budget, 1152);  // (1 + 1) x 32 + 1024 + 64 -> 64s
  r.tp = 8, r.attention_dp = 1, r.batch_size = 32;                       // TP 8 EP 8 at 32: both recipes ran it
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::either);
  EXPECT_NE(inferencex_recipe_unknown(r).find("dsr1-fp8-h200-trt and dsr1-fp8-h200-trt-mtp"), std::string::npos);
  r.in_database_dump = true;
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::plain);
  EXPECT_FALSE(inferencex_speculative(r).on());
  r.in_database_dump = false;
  r.osl = 8192, r.batch_size = 128;  // only the MTP recipe went past 64 at 1K / 8K
  EXPECT_EQ(inferencex_speculative(r).draft_tokens, 3);
  r.measured_date = "2026-01-13";  // before the MTP recipe existed
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::none);
  r.measured_date = "2026-05-18";  // both moved to 1.3.0rc14 that day
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::none);
  // B200 fp8: the plain recipe left the image on 2026-01-29; the MTP one kept it to 02-05.
  r.system = "b200_sxm";
  r.osl = 1024, r.batch_size = 8;
  r.measured_date = "2026-01-20";
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::either);
  r.measured_date = "2026-02-01";
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::mtp);
  r.measured_date = "2026-02-05";
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::none);
  // B200 fp4, TP 4 EP 4 at 16 in flight: only the MTP recipe's space (the plain one: TP 4
  // without EP to 32, with EP from 64).
  r.gemm_quant = r.moe_quant = "nvfp4";
  r.measured_date = "2026-01-14";
  r.tp = 4, r.moe_ep = 4, r.batch_size = 16;
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::mtp);
  r.moe_ep = 1, r.batch_size = 8;  // TP 4 without EP: both to 8 in flight
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::either);
  r.batch_size = 32;  // and the plain recipe alone to 32
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::plain);
}

// qwen3.5-fp8-h200-sglang-mtp ran on its plain twin's sglang:v0.5.9-cu129-amd64 from
// 2026-04-06 (51e31df4a) to 2026-04-16: past 64 in flight only it did, and its drafts have
// no published acceptance, so such a run is refused rather than served without them.
TEST(BenchPredict, InferencexQwenMtpTwinOnHopperIsToldApartAndRefused) {
  BenchRow r = inferencex_row("h200_sxm", "2026-04-10", 1024);
  r.backend = "sglang";
  r.model_path = "Qwen/Qwen3.5-397B-A17B";
  r.gemm_quant = r.moe_quant = "fp8";
  r.image = "lmsysorg/sglang:v0.5.9-cu129-amd64";
  r.tp = 8, r.moe_ep = 8, r.batch_size = 128;
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::mtp);
  EXPECT_EQ(inferencex_speculative(r).draft_tokens, 3);
  BenchOptions o = bench_test::shipped_options();
  EXPECT_EQ(predict_bench({r}, o)[0].reason.rfind("speculative decoding at an unknown acceptance", 0), 0u);
  r.batch_size = 32;
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::either);
  EXPECT_NE(predict_bench({r}, o)[0].reason.find("qwen3.5-fp8-h200-sglang and qwen3.5-fp8-h200-sglang-mtp"),
            std::string::npos);
  r.measured_date = "2026-04-05";  // the day before the MTP recipe
  EXPECT_EQ(inferencex_twin_recipe(r), TwinRecipe::none);
}

}  // namespace
}  // namespace dayzero::serve
