// Measured serving runs: the CSV reader's checks, and rows mapped to plans,
// engines and workloads (or rejected with the reason, never guessed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "bench_csv.h"
#include "core/error.h"
#include "model/model.h"
#include "serve/bench_predict.h"

namespace dayzero::serve {
namespace {

using bench_test::kHeader;
using bench_test::write_csv;

std::string error_of(const std::string& body) {
  try {
    read_bench_csv(write_csv("bad", body));
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

// A CSV saved by a spreadsheet starts with a UTF-8 byte order mark: the header's `id` is still `id`.
TEST(BenchRows, AByteOrderMarkAndSpacesAroundFieldsAreSkipped) {
  const auto rows =
      parse_bench_csv(std::string("\xEF\xBB\xBF") + kHeader +
                          "\nr1,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,16,2,1,1,,,"
                          "120.5,12.25\n",
                      "bom.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, "r1");
  // Nor are spaces after the commas of a hand-edited file part of the fields.
  std::string spaced = std::string(kHeader) +
                       "\nr2,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,16,2,1,1,,,120.5,12.25\n";
  for (size_t i = 0; (i = spaced.find(',', i)) != std::string::npos; i += 2) spaced.insert(i + 1, " ");
  const auto spaced_rows = parse_bench_csv(spaced, "spaced.csv");
  ASSERT_EQ(spaced_rows.size(), 1u);
  EXPECT_EQ(spaced_rows[0].backend, "vllm");
  EXPECT_EQ(spaced_rows[0].batch_size, 16);
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
  // a fractional batch is rounded up and marked (the row needs its recorded concurrency:
  // BenchPredict.FractionalBatchesTakeTheRecordedConcurrency); any other fraction is an error.
  const auto floats = read_bench_csv(write_csv(
      "floats", std::string(kHeader) +
                    "\nr2,vllm,0.11.0,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000.0,200.00,,,16.0,2.0,1.0,4.0,,"
                    "0.0,120.5,12.25\n"));
  EXPECT_EQ(floats.at(0).concurrency(), 64);
  EXPECT_EQ(floats.at(0).isl, 1000);
  const auto half = read_bench_csv(write_csv(
      "half", std::string(kHeader) +
                  "\nr3,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,16.5,2,1,4,,0,120.5,12.25\n"));
  EXPECT_EQ(half.at(0).batch_size, 17);
  EXPECT_EQ(half.at(0).batch_fractional, "batch_size 16.5");
  EXPECT_NE(error_of(std::string(kHeader) +
                     "\nr4,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200.5,,,16,2,1,4,,0,120.5,12.25\n")
                .find("row 2 (r4) osl' = \"200.5\": expected an integer"),
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
  BenchOptions o = bench_test::shipped_options();
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
  BenchOptions o = bench_test::shipped_options();
  const auto p = predict_bench(rows, o);
  EXPECT_FALSE(p[0].predicted);
  EXPECT_EQ(p[0].reason.rfind("concurrency not recorded: the id leaves it empty", 0), 0u) << p[0].reason;
  for (size_t i = 1; i < 4; ++i) EXPECT_TRUE(p[i].predicted) << i << ": " << p[i].reason;
}

// Who deployed a run is read from silicon_data_source: InferenceX's database dump and
// its dated exports; aiconfigurator's gap-analysis harness by its data folder; anything
// else is aiconfigurator's generator. The day comes from "measured=".
TEST(BenchRows, DeployerAndDayComeFromTheSource) {
  const std::string h = std::string(kHeader) + ",silicon_data_source\n";
  const std::string row = ",vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,1000,200,,,4,2,1,1,,,50,10,";
  const auto rows = read_bench_csv(write_csv(
      "deployer", h + "dump" + row + "db-dump/2026-04-27; config_id=7; measured=2026-04-17T00:00:00Z\n" + "dated" +
                      row + "source_file=2026-03-25.csv; model=GLM-5; measured=2026-04-03T16:51Z\n" + "gen" + row +
                      "source_file=/data/h100_sxm/vllm/0.12.0/q.csv; measured=2026-01-23\n" + "odd" + row +
                      "source_file=2026-3-25.csv; measured=soon\n" + "none" + row + "\n" + "gap" + row +
                      "source_file=/u/aic-auto-gap-analysis/data/h100_sxm/sglang/0.5.1.post1/q.csv; c=16\n" + "late" +
                      row + "source_file=q.csv; note=/aic-auto-gap-analysis/ after the file\n"));
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[5].deployer, Deployer::gap_analysis);
  EXPECT_EQ(rows[6].deployer, Deployer::generator);
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
  BenchOptions o = bench_test::shipped_options();
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
  const std::string h = bench_test::kDisaggHeader;
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
  BenchOptions o = bench_test::shipped_options();
  const auto p = predict_bench(rows, o);
  ASSERT_TRUE(p[0].predicted) << p[0].reason;
  EXPECT_GT(p[0].ttft_s, 0);
  EXPECT_GT(p[0].tpot_s, 0);
  EXPECT_NE(p[1].reason.find("inconsistent concurrency"), std::string::npos) << p[1].reason;
  const auto s = summarize(p);
  EXPECT_EQ(s.at("mode:disagg").rows, 1);
  EXPECT_EQ(s.count("mode:agg"), 0u);
}

// A decode batch that is not a whole number (a concurrency of 11 over 9 decode workers)
// is rounded up and the recorded concurrency is the client's; without a recorded one the
// row alone is rejected, and the rest of the file is read.
TEST(BenchPredict, FractionalBatchesTakeTheRecordedConcurrency) {
  const std::string h = bench_test::kDisaggHeader;
  const std::string row = ",vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,disagg,1000,200,,,,,,,,,1,1,1,1,1,,,";
  const auto rows = read_bench_csv(
      write_csv("fractional", h + "f1,silicon_concurrency=11" + row + "1.2222222222222223,9,1,1,1,,,80,9\n" + "f2," +
                                  row + "1.2222222222222223,9,1,1,1,,,81,9\n" + "f3,silicon_concurrency=18" + row +
                                  "2.0,9,1,1,1,,,82,9\n"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].decode.batch_size, 2);
  EXPECT_EQ(rows[0].concurrency(), 11);
  EXPECT_EQ(rows[0].batch_fractional, "decode_batch_size 1.2222222222222223");
  EXPECT_EQ(rows[2].concurrency(), 18);
  EXPECT_TRUE(rows[2].batch_fractional.empty());
  BenchOptions o = bench_test::shipped_options();
  const auto p = predict_bench(rows, o);
  EXPECT_TRUE(p[0].predicted) << p[0].reason;
  EXPECT_FALSE(p[1].predicted);
  EXPECT_NE(p[1].reason.find("not a whole number"), std::string::npos) << p[1].reason;
  EXPECT_TRUE(p[2].predicted) << p[2].reason;
}

// A run the file holds no measurement for (empty or "nan", as pandas writes one) is
// rejected alone with the reason; the rows beside it are predicted.
TEST(BenchPredict, UnmeasuredRowsAreRejectedAlone) {
  const std::string h = std::string(kHeader) + "\n";
  const auto rows =
      read_bench_csv(write_csv("unmeasured", h + "u1,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,"
                                                 "1000,200,,,8,1,1,1,,,,10\n"
                                                 "u2,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,"
                                                 "1000,200,,,8,1,1,1,,,50,nan\n"
                                                 "u3,vllm,,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,"
                                                 "1000,200,,,16,1,1,1,,,50,10\n"));
  ASSERT_EQ(rows.size(), 3u);
  BenchOptions o = bench_test::shipped_options();
  const auto p = predict_bench(rows, o);
  EXPECT_EQ(p[0].reason, "not measured: silicon_ttft_ms is empty");
  EXPECT_EQ(p[1].reason, "not measured: silicon_tpot_ms is nan");
  EXPECT_TRUE(p[2].predicted) << p[2].reason;
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
  BenchOptions o = bench_test::shipped_options();
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

// Every id the table names reaches a bundled config; a vendor's re-quantized release of a
// bundled architecture is served as that architecture at the row's own precision.
TEST(BenchPredict, EveryModelIdReachesABundledConfig) {
  const std::filesystem::path dir = std::filesystem::path(DAYZERO_DATA_DIR) / "models";
  std::ifstream in(dir / "hf_ids.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_GT(j.at("models").size(), 40u);
  std::set<std::string> folders;
  for (const auto& [id, folder] : j.at("models").items()) {
    EXPECT_TRUE(std::filesystem::exists(dir / folder.get<std::string>() / "config.json")) << id;
    folders.insert(folder.get<std::string>());
  }
  // And each config reads: a row naming any of the ids is predicted, not refused for its config.
  for (const std::string& folder : folders) EXPECT_NO_THROW((void)model::load_model(dir / folder)) << folder;
}

// Every GPU system a row may name (scenarios/fidelity/systems.json) has a cluster whose
// device the catalog holds: a small model on one GPU is predicted on each, A100 and L40S
// (aiconfigurator's a100_sxm and l40s) included.
TEST(BenchPredict, EverySystemServesARow) {
  const std::filesystem::path file = std::filesystem::path(DAYZERO_DATA_DIR) / "fidelity" / "systems.json";
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  std::string csv = std::string(kHeader) + "\n";
  int n = 0;
  for (const auto& [system, cluster] : j.at("systems").items()) {
    ++n;
    csv += system + ",vllm,,meta-llama/Llama-3.1-8B-Instruct," + system + ",,agg,1000,200,,,8,1,1,1,,," +
           std::to_string(40 + n) + "," + std::to_string(8 + n) + "\n";
  }
  EXPECT_GE(n, 8);
  const auto p = predict_bench(read_bench_csv(write_csv("systems", csv)), bench_test::shipped_options());
  ASSERT_EQ(p.size(), static_cast<size_t>(n));
  for (const auto& x : p) EXPECT_TRUE(x.predicted) << x.row->system << ": " << x.reason;
}

// aiconfigurator's quantization names (GEMMQuantMode, MoEQuantMode): bf16 spelled out is
// the empty column, per-tensor FP8 (static or out of the box) is FP8, int8_wo and sq are the
// two INT8 precisions; a mode DayZero has no precision for is refused by name.
TEST(BenchPredict, AiconfiguratorsQuantizationNamesReadAsTheirPrecisions) {
  const std::string h = std::string(kHeader) + "\n";
  const std::string q = ",vllm,,Qwen/Qwen3-32B,h100_sxm,,agg,1000,200,";
  const auto rows = read_bench_csv(
      write_csv("quant", h + "e" + q + ",,8,2,1,1,,,50,10\n" +  //
                             "bf" + q + "bfloat16,,8,2,1,1,,,51,11\n" + "f8" + q + "fp8,,8,2,1,1,,,52,12\n" + "fs" + q +
                             "fp8_static,,8,2,1,1,,,53,13\n" + "wo" + q + "int8_wo,,8,2,1,1,,,54,14\n" + "sq" + q +
                             "sq,,8,2,1,1,,,55,15\n" + "w4" + q + "w4afp8,,8,2,1,1,,,56,16\n"));
  const auto p = predict_bench(rows, bench_test::shipped_options());
  ASSERT_EQ(p.size(), 7u);
  for (size_t i = 0; i < 6; ++i) ASSERT_TRUE(p[i].predicted) << p[i].row->id << ": " << p[i].reason;
  EXPECT_DOUBLE_EQ(p[0].tpot_s, p[1].tpot_s);
  EXPECT_DOUBLE_EQ(p[2].tpot_s, p[3].tpot_s);
  EXPECT_LT(p[2].tpot_s, p[0].tpot_s);  // half the bytes a decode step streams
  EXPECT_LT(p[4].tpot_s, p[0].tpot_s);
  EXPECT_NE(p[4].tpot_s, p[5].tpot_s);  // W8A16 and W8A8 are priced apart
  EXPECT_FALSE(p[6].predicted);
  EXPECT_NE(p[6].reason.find("w4afp8 is not modelled yet"), std::string::npos) << p[6].reason;
}

TEST(BenchPredict, AVendorsCheckpointIsServedAsItsArchitecture) {
  const std::string h = std::string(kHeader) + "\n";
  const auto rows = read_bench_csv(write_csv(
      "alias",
      h + "r1,trtllm,,deepseek-ai/DeepSeek-R1,b200_sxm,fp4,agg,1000,200,nvfp4,nvfp4,8,8,1,1,1,8,70,9\n"
          "nv,trtllm,,nvidia/DeepSeek-R1-0528-FP4-V2,b200_sxm,fp4,agg,1000,200,nvfp4,nvfp4,8,8,1,1,1,8,71,8\n"
          "q,sglang,,Qwen/Qwen3.5-397B-A17B,b200_sxm,fp8,agg,1000,200,fp8,fp8,8,8,1,1,1,8,60,9\n"
          "qf,sglang,,Qwen/Qwen3.5-397B-A17B-FP8,b200_sxm,fp8,agg,1000,200,fp8,fp8,8,8,1,1,1,8,61,8\n"
          "l,vllm,,meta-llama/Llama-3.1-70B,h100_sxm,fp8,agg,1000,200,fp8,,8,4,1,1,1,1,60,9\n"
          "lm,vllm,,meta-llama/Meta-Llama-3.1-70B-Instruct,h100_sxm,fp8,agg,1000,200,fp8,,8,4,1,1,1,1,61,8\n"));
  BenchOptions o = bench_test::shipped_options();
  const auto p = predict_bench(rows, o);
  ASSERT_EQ(p.size(), 6u);
  for (const auto& x : p) ASSERT_TRUE(x.predicted) << x.reason;
  EXPECT_DOUBLE_EQ(p[0].ttft_s, p[1].ttft_s);
  EXPECT_DOUBLE_EQ(p[0].tpot_s, p[1].tpot_s);
  EXPECT_DOUBLE_EQ(p[2].ttft_s, p[3].ttft_s);
  EXPECT_DOUBLE_EQ(p[2].tpot_s, p[3].tpot_s);
  EXPECT_DOUBLE_EQ(p[4].ttft_s, p[5].ttft_s);  // Meta's earlier name of the same model (aiconfigurator's)
  EXPECT_DOUBLE_EQ(p[4].tpot_s, p[5].tpot_s);
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
  r.deployer = Deployer::gap_analysis;                // SGLang's own limits; the other engines as the generator's
  EXPECT_EQ(deployed_profile(Engine::sglang, d, r).token_budget, 8192);  // chunked-prefill-size on 80 GiB
  EXPECT_EQ(deployed_profile(Engine::vllm, d, r).token_budget, 2564);
  EXPECT_EQ(deployed_profile(Engine::trtllm, d, r).token_budget, 2592);
  r.deployer = Deployer::generator;
  r.isl = 9000;
  EXPECT_EQ(deployed_profile(Engine::sglang, d, r).token_budget, 8192);  // chunked-prefill-size on 80 GiB
  r.gemm_quant = "fp8_block";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::fp8);
  r.gemm_quant = r.moe_quant = "int4_wo";
  EXPECT_EQ(kv_dtype_of(r), plan::KvDtype::bf16);
}

}  // namespace
}  // namespace dayzero::serve
