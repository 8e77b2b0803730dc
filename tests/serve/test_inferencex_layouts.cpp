// The layouts InferenceX's rows write, read back to the ones their engines ran
// (serve/inferencex_layouts.h): each case one recipe, export and script hand-read from
// SemiAnalysisAI/InferenceX (docs/ENGINE_DEFAULTS.md, "The layouts InferenceX's rows write").
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "bench_csv.h"
#include "serve/bench_rows.h"
#include "serve/inferencex_layouts.h"

namespace dayzero::serve {
namespace {

// An InferenceX aggregated row of `model` on `system` measured on `day`, written as
// tp, attention_dp, moe_tp, moe_ep with `batch` sequences per attention-DP rank.
BenchRow row(const char* backend, const char* model, const char* system, const char* day, int64_t tp, int64_t dp,
             int64_t moe_tp, int64_t moe_ep, int64_t batch) {
  BenchRow r;
  r.backend = backend, r.model_path = model, r.system = system, r.measured_date = day, r.mode = "agg";
  r.deployer = Deployer::inferencex;
  r.gemm_quant = r.moe_quant = "fp8";
  r.tp = tp, r.attention_dp = dp, r.moe_tp = moe_tp, r.moe_ep = moe_ep, r.batch_size = batch;
  return r;
}

void expect_layout(const BenchRow& r, int64_t tp, int64_t dp, int64_t moe_tp, int64_t moe_ep, int64_t batch) {
  EXPECT_EQ(r.tp, tp);
  EXPECT_EQ(r.attention_dp, dp);
  EXPECT_EQ(r.moe_tp, moe_tp);
  EXPECT_EQ(r.moe_ep, moe_ep);
  EXPECT_EQ(r.batch_size, batch);
}

TEST(InferencexLayouts, TheSourcesThatMultiplyTpByEp) {
  EXPECT_TRUE(inferencex_layout_multiplied("db-dump/2026-04-27; config_id=735; silicon_concurrency=512"));
  EXPECT_TRUE(inferencex_layout_multiplied("source_file=2026-04-06.csv; model=MiniMax-M2.5"));
  EXPECT_FALSE(inferencex_layout_multiplied("source_file=2026-03-25.csv; model=MiniMax-M2.5"));
  EXPECT_FALSE(inferencex_layout_multiplied("source_file=kimi-k2.5-gap-analysis.csv"));
  EXPECT_FALSE(inferencex_layout_multiplied(""));
}

// minimaxm2.5-fp8-b300-vllm `{ tp: 2, ep: 2 }` at 512 in flight (config 735): the dump
// writes tp 2, attention_dp 2, moe_ep 4 (four GPUs, 256 a rank); minimaxm2.5_fp8_b300.sh
// launched `--tensor-parallel-size=2 --enable-expert-parallel` on two.
TEST(InferencexLayouts, VllmRowsOfTheDumpAreTheirTpWorkers) {
  BenchRow r = row("vllm", "MiniMaxAI/MiniMax-M2.5", "b300_sxm", "2026-04-21", 2, 2, 1, 4, 256);
  read_inferencex_layout(r, true);
  expect_layout(r, 2, 1, 1, 2, 512);
  EXPECT_NE(r.layout_note.find("the row writes tp 2, attention_dp 2, moe_tp 1, moe_ep 4"), std::string::npos)
      << r.layout_note;
  EXPECT_TRUE(r.layout_unknown.empty());
  // `{ tp: 4, ep: 4 }`: 16 GPUs as written, four as run.
  r = row("vllm", "MiniMaxAI/MiniMax-M2.5", "b200_sxm", "2026-04-21", 4, 4, 1, 16, 64);
  read_inferencex_layout(r, true);
  expect_layout(r, 4, 1, 1, 4, 256);
  // The 2026-03-25 export wrote the same run as the engine ran it: nothing to change.
  r = row("vllm", "MiniMaxAI/MiniMax-M2.5", "b200_sxm", "2026-04-21", 4, 1, 1, 4, 256);
  read_inferencex_layout(r, false);
  expect_layout(r, 4, 1, 1, 4, 256);
  EXPECT_TRUE(r.layout_note.empty());
}

// One row as written and as its engine ran it: {tp, attention_dp, moe_tp, moe_ep, batch}.
struct Case {
  const char *backend, *model, *system, *day;
  bool multiplied;
  int64_t in[5], out[5];
  const char* why;
};

const Case kCases[] = {
    // kimik2.5_fp4_b200.sh passes no expert-parallel flag: `{ tp: 4, ep: 4 }` ran TP 4 experts.
    {"vllm", "moonshotai/Kimi-K2.5", "b200_sxm", "2026-04-03", true, {4, 4, 1, 16, 4}, {4, 1, 4, 1, 16}, "kimi dump"},
    {"vllm", "moonshotai/Kimi-K2.5", "b200_sxm", "2026-03-20", false, {4, 1, 1, 4, 16}, {4, 1, 4, 1, 16}, "kimi"},
    // minimaxm2.5_fp8_b200.sh before bddbf4031 (2026-04-03) tested EP_SIZE >= 1: always EP.
    {"vllm", "MiniMaxAI/MiniMax-M2.5", "b200_sxm", "2026-03-20", false, {2, 1, 2, 1, 8}, {2, 1, 1, 2, 8}, "-ge 1"},
    {"vllm", "MiniMaxAI/MiniMax-M2.5", "b200_sxm", "2026-04-03", false, {2, 1, 2, 1, 8}, {2, 1, 2, 1, 8}, "-gt 1"},
    // minimaxm2.5_fp8_h200.sh: always EP from 2026-03-13 to 2026-05-26, never before.
    {"vllm", "MiniMaxAI/MiniMax-M2.5", "h200_sxm", "2026-04-10", true, {4, 1, 4, 1, 8}, {4, 1, 1, 4, 8}, "h200 EP"},
    {"vllm", "MiniMaxAI/MiniMax-M2.5", "h200_sxm", "2026-03-05", false, {4, 1, 1, 4, 8}, {4, 1, 4, 1, 8}, "no EP"},
    // SGLang's dsr1_fp8_h200.sh passes no --ep-size: `{ tp: 8, ep: 8 }` split the experts by TP.
    {"sglang", "deepseek-ai/DeepSeek-R1", "h200_sxm", "2026-04-10", true, {64, 1, 8, 8, 32}, {8, 1, 8, 1, 32}, "h200"},
    // A dense model keeps no expert sizes.
    {"vllm", "Qwen/Qwen3-32B", "h200_sxm", "2026-04-10", true, {4, 1, 1, 1, 8}, {4, 1, 1, 1, 8}, "dense"},
    // dsr1-fp8-b200-sglang `{ tp: 8, ep: 8 }`: tp 64, moe_tp 8, moe_ep 8 in the dump.
    {"sglang", "deepseek-ai/DeepSeek-R1", "b200_sxm", "2026-04-03", true, {64, 1, 8, 8, 32}, {8, 1, 1, 8, 32}, "sgl"},
    // qwen3.5-fp4-b300-sglang `{ tp: 2, ep: 2 }`: tp 4, moe_tp 2, moe_ep 2.
    {"sglang", "Qwen/Qwen3.5-397B-A17B", "b300_sxm", "2026-04-21", true, {4, 1, 2, 2, 32}, {2, 1, 1, 2, 32}, "qwen"},
    // dsr1-fp4-b200-trt `{ tp: 8, ep: 8, dp-attn: true }` at 256 in flight: attention_dp 64
    // of 4 sequences in the dump, 8 ranks of 32 as run.
    {"trtllm", "deepseek-ai/DeepSeek-R1", "b200_sxm", "2026-04-03", true, {1, 64, 8, 8, 4}, {1, 8, 1, 8, 32}, "dep"},
    // gptoss-fp4-b200-trt `{ tp: 2, ep: 2, dp-attn: true }` at 256 in flight.
    {"trtllm", "openai/gpt-oss-120b", "b200_sxm", "2026-04-03", true, {1, 4, 2, 2, 64}, {1, 2, 1, 2, 128}, "gptoss"},
    // `{ tp: 4, dp-attn: true }` (EP 1) reads the same either way.
    {"trtllm", "openai/gpt-oss-120b", "b200_sxm", "2026-04-03", true, {1, 4, 4, 1, 16}, {1, 4, 4, 1, 16}, "ep 1"},
};

TEST(InferencexLayouts, EachRecipeAsItsScriptRanIt) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.why);
    BenchRow r = row(c.backend, c.model, c.system, c.day, c.in[0], c.in[1], c.in[2], c.in[3], c.in[4]);
    read_inferencex_layout(r, c.multiplied);
    expect_layout(r, c.out[0], c.out[1], c.out[2], c.out[3], c.out[4]);
    const bool same = std::equal(std::begin(c.in), std::end(c.in), std::begin(c.out));
    EXPECT_EQ(r.layout_note.empty(), same) << r.layout_note;
    EXPECT_TRUE(r.layout_unknown.empty()) << r.layout_unknown;
  }
}

TEST(InferencexLayouts, WhatTheRowCannotTellIsSaid) {
  // minimaxm2.5_fp4_b300.sh turns dp-attn into vLLM's DP, and the recipe ran TP 2 / EP 2
  // with and without it: the dump writes both as tp 2, attention_dp 2, moe_ep 4.
  BenchRow r = row("vllm", "MiniMaxAI/MiniMax-M2.5", "b300_sxm", "2026-04-21", 2, 2, 1, 4, 128);
  r.gemm_quant = r.moe_quant = "nvfp4";
  read_inferencex_layout(r, true);
  expect_layout(r, 2, 2, 1, 4, 128);
  EXPECT_NE(r.layout_unknown.find("TP 2 and EP 2"), std::string::npos) << r.layout_unknown;
  // Its TP 4 / EP 4 line had no dp-attn twin.
  r = row("vllm", "MiniMaxAI/MiniMax-M2.5", "b300_sxm", "2026-04-21", 4, 4, 1, 16, 16);
  r.gemm_quant = r.moe_quant = "nvfp4";
  read_inferencex_layout(r, true);
  expect_layout(r, 4, 1, 1, 4, 64);
  EXPECT_TRUE(r.layout_unknown.empty());
  // Another deployer's rows, a disaggregated row, and a layout in neither form: as written.
  r = row("vllm", "MiniMaxAI/MiniMax-M2.5", "b300_sxm", "2026-04-21", 2, 2, 1, 4, 128);
  r.deployer = Deployer::generator;
  read_inferencex_layout(r, true);
  expect_layout(r, 2, 2, 1, 4, 128);
  r = row("sglang", "deepseek-ai/DeepSeek-R1", "b200_sxm", "2026-04-03", 64, 1, 8, 8, 32);
  r.mode = "disagg";
  read_inferencex_layout(r, true);
  expect_layout(r, 64, 1, 8, 8, 32);
  r = row("sglang", "deepseek-ai/DeepSeek-R1", "b200_sxm", "2026-04-03", 8, 1, 2, 2, 32);
  read_inferencex_layout(r, true);
  expect_layout(r, 8, 1, 2, 2, 32);
}

// Read from a file: the two exports of one run now agree on its layout, and it is counted
// once instead of being rejected as one measurement under two layouts.
TEST(InferencexLayouts, OneRunInBothExportsIsOneLayout) {
  const std::string head = std::string(bench_test::kHeader) + ",silicon_data_source\n";
  const std::string run = ",vllm,0.19.0,MiniMaxAI/MiniMax-M2.5,b200_sxm,fp8,agg,1024,1024,fp8,fp8,";
  const auto path = bench_test::write_csv(
      "ix_layouts", head + "a" + run + "4,2,1,1,1,2,74.2,9.5,source_file=2026-03-25.csv; measured=2026-04-03\n" + "b" +
                        run + "2,2,1,2,1,4,74.2,9.5,source_file=2026-04-06.csv; measured=2026-04-03\n");
  const std::vector<BenchRow> rows = read_bench_csv(path);
  std::filesystem::remove(path);
  ASSERT_EQ(rows.size(), 2u);
  expect_layout(rows[1], 2, 1, 1, 2, 4);
  const std::vector<std::string> reasons = conflicting_layouts(rows);
  EXPECT_TRUE(reasons[0].empty()) << reasons[0];
  EXPECT_EQ(reasons[1].rfind("the same measurement as a (", 0), 0u) << reasons[1];
}

}  // namespace
}  // namespace dayzero::serve
