// Measured serving runs: the CSV reader's checks, and rows mapped to plans,
// engines and workloads (or rejected with the reason, never guessed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "serve/bench_predict.h"

namespace dayzero::serve {
namespace {

namespace fs = std::filesystem;

const char* const kHeader =
    "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,"
    "tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms";

fs::path write_csv(const std::string& name, const std::string& body) {
  const fs::path f = fs::temp_directory_path() / ("dayzero_bench_" + std::to_string(::getpid()) + "_" + name + ".csv");
  std::ofstream(f) << body;
  return f;
}

std::string error_of(const std::string& body) {
  try {
    read_bench_csv(write_csv("bad", body));
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(BenchRows, ReadsTheWorkerAndTheWorkload) {
  const auto rows = read_bench_csv(
      write_csv("ok", std::string(kHeader) +
                          "\nr1,vllm,0.11.0,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,16,2,1,4,,0,"
                          "120.5,12.25\n"));
  ASSERT_EQ(rows.size(), 1u);
  const BenchRow& r = rows[0];
  EXPECT_EQ(r.id, "r1");
  EXPECT_EQ(r.line, 2);
  EXPECT_EQ(r.concurrency(), 16 * 4);  // batch size per attention-DP rank
  EXPECT_EQ(r.gpus(), 8);
  EXPECT_EQ(r.moe_ep, 1);  // 0: none
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.1205);
  EXPECT_DOUBLE_EQ(r.tpot_s, 0.01225);
  // Integers written as floats (pandas writes "16.0" in a column with gaps) read as integers;
  // a fraction is still an error.
  const auto floats = read_bench_csv(write_csv(
      "floats", std::string(kHeader) +
                    "\nr2,vllm,0.11.0,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000.0,200.00,,,16.0,2.0,1.0,4.0,,"
                    "0.0,120.5,12.25\n"));
  EXPECT_EQ(floats.at(0).concurrency(), 64);
  EXPECT_EQ(floats.at(0).isl, 1000);
  EXPECT_NE(error_of(std::string(kHeader) +
                     "\nr3,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,16.5,2,1,4,,0,120.5,12.25\n")
                .find("row 2 (r3) batch_size' = \"16.5\": expected an integer"),
            std::string::npos);
}

// The publisher's tool records the closed loop's concurrency in silicon_data_source;
// rows where it disagrees with batch_size x pp x attention_dp (TensorRT-LLM 1.3.0rc1
// runs on GB200 list c8 beside batch 4 on tp 2) are rejected, not guessed at.
TEST(BenchRows, RecordedConcurrencyMustAgreeWithTheBatch) {
  const std::string h = std::string(kHeader) + ",silicon_data_source\n";
  const std::string row = ",vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,4,2,1,1,,,50,10,";
  const auto rows = read_bench_csv(write_csv("conc", h + "same" + row + "db; silicon_concurrency=4; run=1\n" +
                                                         "differ" + row + "db; silicon_concurrency=8; run=1\n" +
                                                         "none" + row + "source_file=x.csv\n"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].recorded_concurrency, 4);
  EXPECT_EQ(rows[1].recorded_concurrency, 8);
  EXPECT_EQ(rows[2].recorded_concurrency, 0);
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
  const auto p = predict_bench(rows, o);
  EXPECT_TRUE(p[0].predicted) << p[0].reason;
  EXPECT_EQ(p[1].reason,
            "inconsistent concurrency: silicon_data_source records silicon_concurrency=8, batch_size x pp_size x "
            "attention_dp_size is 4");
  EXPECT_TRUE(p[2].predicted) << p[2].reason;
  EXPECT_NE(error_of(h + "x" + row + "silicon_concurrency=; y\n").find("must be a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of(h + "x" + row + "silicon_concurrency=99999999999999999999\n").find("implausibly large"),
            std::string::npos);
}

// The generator names a run's concurrency in its id ("_agg_4000x1000_c224_tp4_"); 12 of its
// aggregated runs leave that field empty and record no silicon_concurrency, and batch_size
// is no stand-in (the same pipeline's runs that name it kept 2-32x batch_size in flight;
// these show 17-54 s TTFTs at "batch" 28-384): rejected, not guessed at. A
// "_c_" elsewhere in an id, or an empty field beside a recorded concurrency, is not that.
TEST(BenchRows, AnUnnamedConcurrencyIsRejected) {
  const std::string h = std::string(kHeader) + ",silicon_data_source\n";
  // Four runs (their TTFTs differ: none repeats another).
  const auto row = [](int ttft_ms) {
    return ",vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,4,2,1,1,,," + std::to_string(ttft_ms) +
           ",10,";
  };
  const auto rows = read_bench_csv(write_csv(
      "unnamed", h + "m_agg_4000x1000_c_tp2_1" + row(50) + "source_file=x.csv\n" + "m_agg_4000x1000_c4_tp2_2" +
                     row(51) + "source_file=x.csv\n" + "m_c_agg_4000x1000_c4_tp2_3" + row(52) + "x\n" +
                     "m_agg_4000x1000_c_tp2_4" + row(53) + "db; silicon_concurrency=4; run=1\n"));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_TRUE(rows[0].concurrency_unnamed);
  EXPECT_FALSE(rows[1].concurrency_unnamed);
  EXPECT_FALSE(rows[2].concurrency_unnamed);
  EXPECT_FALSE(rows[3].concurrency_unnamed);
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
  const auto p = predict_bench(rows, o);
  EXPECT_FALSE(p[0].predicted);
  EXPECT_EQ(p[0].reason.rfind("concurrency not recorded: the id leaves it empty", 0), 0u) << p[0].reason;
  for (size_t i = 1; i < 4; ++i) EXPECT_TRUE(p[i].predicted) << i << ": " << p[i].reason;
}

// Who deployed a run is read from silicon_data_source: InferenceX's database dump and
// its dated exports; anything else is aiconfigurator's generator. The day comes from
// "measured=".
TEST(BenchRows, DeployerAndDayComeFromTheSource) {
  const std::string h = std::string(kHeader) + ",silicon_data_source\n";
  const std::string row = ",vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,4,2,1,1,,,50,10,";
  const auto rows = read_bench_csv(write_csv(
      "deployer", h + "dump" + row + "db-dump/2026-04-27; config_id=7; measured=2026-04-17T00:00:00Z\n" + "dated" +
                      row + "source_file=2026-03-25.csv; model=GLM-5; measured=2026-04-03T16:51Z\n" + "gap" + row +
                      "source_file=/data/h100_sxm/vllm/0.12.0/q.csv; measured=2026-01-23\n" + "odd" + row +
                      "source_file=2026-3-25.csv; measured=soon\n" + "none" + row + "\n"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].deployer, Deployer::inferencex);
  EXPECT_EQ(rows[0].measured_date, "2026-04-17");
  EXPECT_EQ(rows[1].deployer, Deployer::inferencex);
  EXPECT_EQ(rows[1].measured_date, "2026-04-03");
  EXPECT_EQ(rows[2].deployer, Deployer::generator);
  EXPECT_EQ(rows[2].measured_date, "2026-01-23");
  EXPECT_EQ(rows[3].deployer, Deployer::generator);
  EXPECT_EQ(rows[3].measured_date, "");
  EXPECT_EQ(rows[4].deployer, Deployer::generator);
  // InferenceX's aggregated runs are single-node: 16 H100s is not a layout it ran.
  const auto wide = read_bench_csv(
      write_csv("wide", h + "x,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,4,16,1,1,,,50,10," +
                            "db-dump/2026-04-27; measured=2026-04-17\n" +
                            "y,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg," +
                            "1000,200,,,4,2,1,1,,,51,11,db-dump/2026-04-27; measured=2026-04-17\n"));
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
  const auto p = predict_bench(wide, o);
  EXPECT_EQ(p[0].reason,
            "inconsistent layout: 16 GPUs, more than the one node of 8 that InferenceX's aggregated recipes run on");
  EXPECT_TRUE(p[1].predicted) << p[1].reason;
}

TEST(BenchRows, BadRowsNameTheRowAndTheField) {
  EXPECT_NE(error_of("id,backend\nx,vllm\n").find("field 'backend_version': missing column"), std::string::npos);
  const std::string h = std::string(kHeader) + "\n";
  EXPECT_NE(error_of(h + "r9,vllm,,m,h100_sxm,,agg,1000,200,,,16,1,1,1,1,1,-3,10\n")
                .find("field 'row 2 (r9) silicon_ttft_ms' = \"-3\": a latency must be positive"),
            std::string::npos);
  EXPECT_NE(error_of(h + "r9,vllm,,m,h100_sxm,,agg,1k,200,,,16,1,1,1,1,1,3,10\n").find("row 2 (r9) isl"),
            std::string::npos);
  EXPECT_NE(error_of(h + "r9,vllm,,m,h100_sxm,,agg,1000,200\n").find("the header has 19"), std::string::npos);
  EXPECT_NE(error_of(h + "r9,vllm,,m,h100_sxm,,mixed,1000,200,,,16,1,1,1,1,1,3,10\n").find("expected agg or disagg"),
            std::string::npos);
  EXPECT_NE(error_of("").find("expected a header row"), std::string::npos);
}

// A disaggregated run with both pools described is served by both pools: 1 prefill
// worker and 2 decode workers of one H100 each, 8 sequences per decode worker (16 in
// flight); the same run recorded at another concurrency is rejected.
TEST(BenchPredict, DisaggregatedRowsAreServedByTheirPools) {
  const std::string h =
      "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
      "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_batch_size,"
      "prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,"
      "prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,"
      "decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";
  const std::string pools = ",,,,,,1,1,1,1,1,,,8,2,1,1,1,,,";
  const auto rows = read_bench_csv(write_csv(
      "disagg", h + "d1,silicon_concurrency=16,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,disagg,1000,200,,," +
                    pools + "80,9\n" +
                    "d2,silicon_concurrency=32,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,disagg,1000,200,,," +
                    pools + "80,9\n"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].concurrency(), 16);
  EXPECT_EQ(rows[0].gpus(), 3);
  EXPECT_EQ(rows[0].decode.workers, 2);
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
  const auto p = predict_bench(rows, o);
  ASSERT_TRUE(p[0].predicted) << p[0].reason;
  EXPECT_GT(p[0].ttft_s, 0);
  EXPECT_GT(p[0].tpot_s, 0);
  EXPECT_NE(p[1].reason.find("inconsistent concurrency"), std::string::npos) << p[1].reason;
  const auto s = summarize(p);
  EXPECT_EQ(s.at("mode:disagg").rows, 1);
  EXPECT_EQ(s.count("mode:agg"), 0u);
}

TEST(BenchPredict, RowsBecomePlansOrAreRejectedWithTheReason) {
  const std::string h = std::string(kHeader) + "\n";
  const auto rows = read_bench_csv(write_csv(
      "map",
      h + "ok,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,8,1,1,1,,,50,10\n"
          "eng,tgi,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,8,1,1,1,,,50,10\n"
          "gpu,vllm,,meta-llama/Llama-3.1-8B-Instruct,mi999,,agg,1000,200,,,8,1,1,1,,,50,10\n"
          "mod,vllm,,someone/Unknown-1B,h100_sxm,,agg,1000,200,,,8,1,1,1,,,54,10\n"
          "fp4,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,fp4,agg,1000,200,nvfp4,nvfp4,8,1,1,1,,,51,10\n"
          "lay,sglang,,deepseek-ai/DeepSeek-V3,h100_sxm,fp8,agg,1000,200,fp8_block,fp8_block,8,8,1,1,3,1,50,10\n"
          "dis,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,disagg,1000,200,,,,1,1,1,,,52,10\n"
          "tw1,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,8,1,1,1,,,60,12\n"
          "tw2,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,8,2,1,1,,,60,12\n"
          "rep,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,8,1,1,1,,,50,10\n"
          "bit,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,8,1,1,1,,,50.000000000000007,10\n"
          "v3a,sglang,,deepseek-ai/DeepSeek-V3,h200_sxm,fp8,agg,1000,200,fp8_block,fp8_block,8,8,1,1,1,8,70,9\n"
          "r1a,sglang,,deepseek-ai/DeepSeek-R1,h200_sxm,fp8,agg,1000,200,fp8_block,fp8_block,8,8,1,1,1,8,70,9\n"));
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
  const auto p = predict_bench(rows, o);
  ASSERT_EQ(p.size(), 13u);
  EXPECT_TRUE(p[0].predicted) << p[0].reason;
  EXPECT_GT(p[0].ttft_s, 0);
  EXPECT_GT(p[0].tpot_s, 0);
  EXPECT_GT(p[0].steady_tpot_s, 0);
  EXPECT_EQ(p[1].reason, "engine tgi is not one of vllm, sglang, trtllm");
  EXPECT_EQ(p[2].reason, "GPU system mi999 has no cluster in scenarios/fidelity/systems.json");
  EXPECT_NE(p[3].reason.find("someone/Unknown-1B is not among the bundled models"), std::string::npos);
  // NVFP4 needs FP4 tensor cores: an H100 has none.
  EXPECT_EQ(p[4].reason.rfind("unsupported precision: ", 0), 0u) << p[4].reason;
  EXPECT_NE(p[4].reason.find("nvfp4"), std::string::npos) << p[4].reason;
  EXPECT_NE(p[5].reason.find("inconsistent layout"), std::string::npos) << p[5].reason;
  EXPECT_EQ(p[6].reason.rfind("the prefill pool's workers and batch size are not given", 0), 0u) << p[6].reason;
  // One measurement filed under TP 1 and TP 2: neither row is believed.
  for (size_t i : {7u, 8u}) {
    EXPECT_FALSE(p[i].predicted);
    EXPECT_NE(p[i].reason.find("one measurement under 2 layouts"), std::string::npos) << p[i].reason;
    EXPECT_NE(p[i].reason.find("tp2 pp1"), std::string::npos) << p[i].reason;
  }
  // "ok" again, same layout and figures: one run imported twice, counted once (the first).
  EXPECT_FALSE(p[9].predicted);
  EXPECT_EQ(p[9].reason.rfind("the same measurement as ok (", 0), 0u) << p[9].reason;
  // Another export of it, whose TTFT differs in the last bit of the double: still once.
  EXPECT_FALSE(p[10].predicted);
  EXPECT_EQ(p[10].reason.rfind("the same measurement as ok (", 0), 0u) << p[10].reason;
  // One run filed under two names of one architecture (a dump's DeepSeek-R1 as V3): once.
  EXPECT_TRUE(p[11].predicted) << p[11].reason;
  EXPECT_FALSE(p[12].predicted);
  EXPECT_EQ(p[12].reason.rfind("the same measurement as v3a (", 0), 0u) << p[12].reason;
  EXPECT_NE(p[12].reason.find("there filed as deepseek-ai/DeepSeek-V3"), std::string::npos) << p[12].reason;
  const auto s = summarize(p);
  EXPECT_EQ(s.at("all").rows, 2);
  EXPECT_EQ(s.count("engine:vllm"), 1u);
}

// Hand-computed from the deployment generator's rules (docs/ENGINE_DEFAULTS.md):
// batch 64, ISL 1000 on an 80 GiB GPU.
TEST(BenchPredict, RowsAreServedWithTheSettingsTheyWereDeployedWith) {
  BenchRow r;
  r.batch_size = 64;
  r.isl = 1000;
  r.osl = 200;
  const Deployment d{80.0 * (1 << 30), false, 1, 1, false};
  const EngineProfile v = deployed_profile(Engine::vllm, d, r);
  EXPECT_EQ(v.token_budget, 64 + 1000 + 1500);  // max-num-batched-tokens
  EXPECT_EQ(v.max_running, 64);                 // max-num-seqs
  EXPECT_EQ(v.memory.step_tokens, 2564);
  EXPECT_FALSE(v.prefix_caching);
  const EngineProfile t = deployed_profile(Engine::trtllm, d, r);
  EXPECT_EQ(t.token_budget, 2592);  // 2564 rounded up to a multiple of 32
  EXPECT_DOUBLE_EQ(t.memory.memory_fraction, 0.8);
  EXPECT_FALSE(t.chunked_prefill);
  const EngineProfile s = deployed_profile(Engine::sglang, d, r);
  EXPECT_EQ(s.policy, PrefillPolicy::prefill_first);  // as the runs behave (deployed_profile)
  EXPECT_EQ(s.token_budget, 2500);                    // max-prefill-tokens = ISL + 1500 < chunked-prefill-size
  r.isl = 9000;
  EXPECT_EQ(deployed_profile(Engine::sglang, d, r).token_budget, 8192);  // chunked-prefill-size on 80 GiB
  r.gemm_quant = "fp8_block";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::fp8);
  r.gemm_quant = r.moe_quant = "int4_wo";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);
}

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
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
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
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
  const auto p = predict_bench({rows[2]}, o);
  EXPECT_FALSE(p[0].predicted);
  EXPECT_EQ(p[0].reason.rfind("two InferenceX recipes ran this point on lmsysorg/sglang:v0.5.9-cu130", 0), 0u)
      << p[0].reason;
}

}  // namespace
}  // namespace dayzero::serve
