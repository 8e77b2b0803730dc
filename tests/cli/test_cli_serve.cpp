// The serving commands of the dayzero binary end to end: `serve` (engines, settings,
// traces), `plan --serve-check` and `sweep` (`validate --bench` and `calibrate --bench`:
// test_cli_bench.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.h"

namespace {

using dayzero::cli::testing::Result;
using dayzero::cli::testing::run;

}  // namespace

// `serve`: a shipped plan under each engine, at a concurrency and at a rate, as JSON
// with every statistic; bad options are one-line errors.
TEST(Cli, ServeReportsLatencyPercentilesAndThroughput) {
  const std::string data = DAYZERO_DATA_DIR;
  const std::string plan = "--model Llama-3.1-8B --cluster h100x1 --plan " + data + "/plans/llama-3.1-8b-h100-tp1.json";
  for (const char* engine : {"vllm", "sglang", "trtllm"}) {
    const Result r = run("serve " + plan + " --engine " + engine + " --concurrency 8 --requests 64 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("engine"), engine);
    for (const char* key : {"ttft_s", "tpot_s", "itl_s", "e2e_s"})
      for (const char* stat : {"mean", "p50", "p90", "p99"}) EXPECT_GT(j.at(key).at(stat).get<double>(), 0) << key;
    EXPECT_GT(j.at("output_tokens_per_s").get<double>(), 0);
    EXPECT_EQ(j.at("max_running"), 8);
    EXPECT_FALSE(j.at("series").empty());
  }
  const Result rate = run("serve " + plan + " --request-rate 2 --requests 50");
  EXPECT_EQ(rate.status, 0) << rate.err;
  EXPECT_NE(rate.out.find("Poisson, 2.00 requests/s"), std::string::npos) << rate.out;
  const Result ranged = run("serve " + plan + " --concurrency 4 --requests 40 --random-range-ratio 0.8");
  EXPECT_EQ(ranged.status, 0) << ranged.err;
  EXPECT_NE(ranged.out.find("at most (each drawn from 0.80 x to 1 x)"), std::string::npos) << ranged.out;
  EXPECT_NE(run("serve " + plan + " --random-range-ratio 0").err.find("--random-range-ratio"), std::string::npos);
  // SGLang's receive interval: requests that arrive while others decode (lengths drawn
  // apart, so they do) wait for the scheduler to look, and TTFT grows.
  const std::string sglang =
      "serve " + plan + " --engine sglang --concurrency 8 --requests 64 --random-range-ratio 0.8 --json";
  const Result looks = run(sglang + " --scheduler-recv-interval 30");
  ASSERT_EQ(looks.status, 0) << looks.err;
  EXPECT_GT(nlohmann::json::parse(looks.out).at("ttft_s").at("mean").get<double>(),
            nlohmann::json::parse(run(sglang).out).at("ttft_s").at("mean").get<double>());
  EXPECT_NE(run(sglang + " --scheduler-recv-interval 0").err.find("--scheduler-recv-interval"), std::string::npos);
  const Result engine = run("serve " + plan + " --engine tgi");
  EXPECT_EQ(engine.status, 1);
  EXPECT_NE(engine.err.find("option '--engine' = \"tgi\""), std::string::npos) << engine.err;
  const Result both = run("serve " + plan + " --concurrency 4 --request-rate 2");
  EXPECT_NE(both.status, 0);
  // Issue 16: a typo'd count is refused at once, not hours of simulation.
  for (const char* huge : {" --concurrency 1000000000000", " --requests 100000000"})
    EXPECT_NE(run("serve " + plan + huge).err.find("not in range"), std::string::npos) << huge;
}

// `serve`'s engine settings: flags and a settings file over the engine's defaults, the
// flags winning; the effective settings come back in the JSON; bad values are errors.
TEST(Cli, ServeOverridesTheEnginesSettings) {
  const std::string data = DAYZERO_DATA_DIR;
  const std::string plan = "--model Llama-3.1-8B --cluster h100x1 --plan " + data + "/plans/llama-3.1-8b-h100-tp1.json";
  const std::string base = "serve " + plan + " --engine sglang --concurrency 16 --requests 64 --json";
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_engine_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "engine.json") << R"({"max_running": 4, "policy": "mixed", "memory_fraction": 0.5})";
  const Result r = run(base + " --engine-settings " + (dir / "engine.json").string() + " --token-budget 2048");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& e = j.at("engine_settings");
  EXPECT_EQ(e.at("max_running"), 4);
  EXPECT_EQ(e.at("policy"), "mixed");
  EXPECT_DOUBLE_EQ(e.at("memory_fraction").get<double>(), 0.5);
  EXPECT_EQ(e.at("token_budget"), 2048);
  EXPECT_LE(j.at("max_running").get<int64_t>(), 4);  // 16 in flight, 4 at a time: the rest queue
  const auto plain = nlohmann::json::parse(run(base).out);
  EXPECT_EQ(plain.at("engine_settings").at("policy"), "prefill_first");  // SGLang's default
  EXPECT_GT(j.at("ttft_s").at("mean").get<double>(), plain.at("ttft_s").at("mean").get<double>());
  const Result flag_wins = run(base + " --engine-settings " + (dir / "engine.json").string() + " --max-running 8");
  ASSERT_EQ(flag_wins.status, 0) << flag_wins.err;
  EXPECT_EQ(nlohmann::json::parse(flag_wins.out).at("engine_settings").at("max_running"), 8);
  std::ofstream(dir / "bad.json") << R"({"max_runing": 4})";
  const Result bad = run(base + " --engine-settings " + (dir / "bad.json").string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("bad.json"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("max_runing"), std::string::npos) << bad.err;
  // A scenario's "engine" object: its engine and settings, under the flags.
  std::ofstream(dir / "scenario.json") << R"({"schema_version": 1, "model": ")" << data
                                       << R"(/models/Llama-3.1-8B", "cluster": ")" << data
                                       << R"(/clusters/h100x1.json", "workload": {"input_len": 512, "output_len": 32,
      "concurrency": 8}, "engine": {"name": "sglang", "max_running": 2}})";
  const std::string scenario = "serve " + (dir / "scenario.json").string() + " --requests 24 --json";
  const auto from_scenario = nlohmann::json::parse(run(scenario).out);
  EXPECT_EQ(from_scenario.at("engine"), "sglang");
  EXPECT_EQ(from_scenario.at("engine_settings").at("max_running"), 2);
  const auto overridden = nlohmann::json::parse(run(scenario + " --engine trtllm --max-running 4").out);
  EXPECT_EQ(overridden.at("engine"), "trtllm");
  EXPECT_EQ(overridden.at("engine_settings").at("max_running"), 4);
  const Result policy = run(base + " --policy fifo");
  EXPECT_EQ(policy.status, 1);
  EXPECT_NE(policy.err.find("option '--policy' = \"fifo\""), std::string::npos) << policy.err;
  EXPECT_NE(run(base + " --memory-fraction 1.5").err.find("--memory-fraction"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// `serve --trace`: a trace replayed at its arrival times and lengths (and faster), its
// first K with --requests; a bad trace is a one-line error; a trace excludes the other
// clients.
// `serve --speculative`: MTP drafts on DeepSeek-V3 emit about the tokens per step the
// rates imply and cut TPOT; a method the model lacks, and rates out of range, are
// one-line errors naming the field.
TEST(Cli, ServeRunsSpeculativeDecoding) {
  const std::string base = "serve deepseek-v3-h200-2x8 --concurrency 16 --requests 64 --json";
  const Result plain = run(base);
  const Result mtp = run(base + " --speculative mtp --draft-tokens 2 --acceptance 0.9,0.6");
  ASSERT_EQ(mtp.status, 0) << mtp.err;
  const auto p = nlohmann::json::parse(plain.out), j = nlohmann::json::parse(mtp.out);
  EXPECT_TRUE(p.at("speculative").is_null());
  const auto& spec = j.at("speculative");
  EXPECT_EQ(spec.at("method"), "mtp");
  EXPECT_DOUBLE_EQ(spec.at("expected_tokens_per_step").get<double>(), 1 + 0.9 + 0.9 * 0.6);
  EXPECT_NEAR(spec.at("tokens_per_decode").get<double>(), 2.44, 0.1);
  EXPECT_LT(j.at("tpot_s").at("mean").get<double>(), p.at("tpot_s").at("mean").get<double>());
  const std::string data = DAYZERO_DATA_DIR;
  const std::string llama = "serve --model Llama-3.1-8B --cluster h100x1 --plan " + data +
                            "/plans/llama-3.1-8b-h100-tp1.json --concurrency 2 --requests 4";
  const Result no_mtp = run(llama + " --speculative mtp");
  EXPECT_EQ(no_mtp.status, 1);
  EXPECT_NE(no_mtp.err.find("speculative.method"), std::string::npos) << no_mtp.err;
  EXPECT_NE(run(llama + " --speculative eagle").err.find("acceptance"), std::string::npos);
  EXPECT_EQ(run(llama + " --speculative eagle --acceptance 0.7").status, 0);
  EXPECT_NE(run(llama + " --speculative eagle --acceptance 1.5").err.find("speculative.acceptance"), std::string::npos);
  EXPECT_NE(run(llama + " --speculative medusa").err.find("--speculative"), std::string::npos);
}

// `serve --prefill-workers / --decode-workers`: the default scenario's plan on two
// pools of 8 H200; TTFT carries the KV transfer; a deployment larger than the cluster
// is a one-line error.
TEST(Cli, ServeRunsADisaggregatedDeployment) {
  const Result r = run("serve --prefill-workers 1 --decode-workers 1 --concurrency 32 --requests 96 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("disaggregated").at("devices"), 16);
  EXPECT_GT(j.at("disaggregated").at("kv_transfer_s").get<double>(), 0);
  // The shipped calibration's handoff time (fitted to measured disaggregated runs) is in it too.
  const double handoff_s = j.at("disaggregated").at("handoff_s").get<double>();
  EXPECT_GT(handoff_s, 0);
  EXPECT_GT(j.at("ttft_s").at("mean").get<double>(),
            j.at("disaggregated").at("kv_transfer_s").get<double>() + handoff_s);
  EXPECT_EQ(j.at("e2e_s").at("count"), 96);
  const Result text = run("serve --prefill-workers 1 --decode-workers 1 --concurrency 8 --requests 16");
  EXPECT_NE(text.out.find("disaggregated: 1 prefill worker of 8 GPUs"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("after the engine's handoff of"), std::string::npos) << text.out;
  const Result big = run("serve --prefill-workers 2 --decode-workers 1 --requests 16");
  EXPECT_EQ(big.status, 1);
  EXPECT_NE(big.err.find("24 devices"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("more devices than the cluster's 16"), std::string::npos) << big.err;
}

TEST(Cli, ServeReplaysATrace) {
  const std::string data = DAYZERO_DATA_DIR;
  const std::string plan = "--model Llama-3.1-8B --cluster h100x1 --plan " + data + "/plans/llama-3.1-8b-h100-tp1.json";
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream trace(dir / "trace.csv");
  trace << "arrival_s,input_len,output_len\n";
  for (int i = 0; i < 40; ++i) trace << 0.5 * i << "," << 200 + 50 * (i % 7) << "," << 20 + i % 5 << "\n";
  trace.close();
  const std::string base = "serve " + plan + " --trace " + (dir / "trace.csv").string();
  const Result r = run(base + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("e2e_s").at("count"), 40);
  EXPECT_GT(j.at("duration_s").get<double>(), 19.5);  // the last arrives at 19.5 s
  const auto fast = nlohmann::json::parse(run(base + " --trace-speed 10 --requests 30 --json").out);
  EXPECT_EQ(fast.at("e2e_s").at("count"), 30);
  EXPECT_LT(fast.at("duration_s").get<double>(), 5.0);  // 29 x 0.05 s plus the last request
  const Result text = run(base);
  EXPECT_NE(text.out.find("client: trace, 40 requests arriving over 19.5 s (2.00 requests/s)"), std::string::npos)
      << text.out;
  std::ofstream(dir / "bad.csv") << "arrival_s,input_len,output_len\n0,100,10\n1,-5,10\n";
  const Result bad = run("serve " + plan + " --trace " + (dir / "bad.csv").string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("line 3, input_len"), std::string::npos) << bad.err;
  // Longer than the model's context (Llama-3.1: 131,072 tokens): refused before serving.
  std::ofstream(dir / "long.csv") << "arrival_s,input_len,output_len\n0,100,10\n1,3000000,10\n";
  const Result longer = run("serve " + plan + " --trace " + (dir / "long.csv").string());
  EXPECT_EQ(longer.status, 1);
  EXPECT_NE(longer.err.find("request 2 of 3000000 + 10 tokens exceeds the model's max_position_embeddings 131072"),
            std::string::npos)
      << longer.err;
  EXPECT_NE(run(base + " --concurrency 4").status, 0);
  EXPECT_NE(run(base + " --request-rate 4").status, 0);
  EXPECT_NE(run("serve " + plan + " --trace-speed 2").status, 0);  // needs a trace
  std::filesystem::remove_all(dir);
}

// A CUDA graph limit below the running batch: serve notes the decode steps past it, in
// text and JSON (counted, not priced); a negative limit is refused.
TEST(Cli, ServeNotesDecodeStepsPastTheCudaGraphLimit) {
  const Result r = run("serve qwen3-30b-a3b-h100x1 --requests 64 --cuda-graph-max-batch 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("tokens the engine captures CUDA graphs for (--max-cudagraph-capture-size)"), std::string::npos)
      << r.out;
  const Result j = run("serve qwen3-30b-a3b-h100x1 --requests 64 --cuda-graph-max-batch 1 --json");
  ASSERT_EQ(j.status, 0) << j.err;
  const auto served = nlohmann::json::parse(j.out);
  EXPECT_EQ(served.at("engine_settings").at("cuda_graph_max_batch"), 1);
  EXPECT_GT(served.at("eager_steps").get<int64_t>(), 0);
  const Result bad = run("serve qwen3-30b-a3b-h100x1 --cuda-graph-max-batch -1");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("--cuda-graph-max-batch"), std::string::npos) << bad.err;
}

// `plan --serve-check K`: the K best plans served request by request, the SLA checked
// on p90, re-ranked, and the agreement of the two orders reported, in text and JSON.
TEST(Cli, PlanServeCheckReRanksTheBestPlansByServing) {
  const Result r = run("plan qwen3-30b-a3b-h100x1 --serve-check 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Checked by the serving simulation (vllm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pairs of plans meeting the SLA both ways"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("longer than any"), std::string::npos) << r.out;
  // 32,768-token prompts: past the shipped calibration's longest, said in the plan's output.
  const Result lc = run("plan deepseek-v3-h200-2x8-long-disagg");
  ASSERT_EQ(lc.status, 0) << lc.err;
  EXPECT_NE(lc.out.find("note: prompts of 32,768 tokens are longer than any of the"), std::string::npos) << lc.out;
  const Result j = run("plan qwen3-30b-a3b-h100x1 --serve-check 3 --engine sglang --json");
  ASSERT_EQ(j.status, 0) << j.err;
  const auto check = nlohmann::json::parse(j.out).at("serve_check");
  EXPECT_EQ(check.at("engine"), "sglang");
  ASSERT_EQ(check.at("plans").size(), 3u);
  EXPECT_EQ(check.at("plans")[0].at("steady_rank"), 1);
  EXPECT_GT(check.at("plans")[0].at("tpot_s").at("p90").get<double>(), 0);
  EXPECT_EQ(check.at("plans")[0].at("eager_steps"), 0);             // within SGLang's 256 captured sequences
  EXPECT_FALSE(check.at("prompt_beyond_calibration").get<bool>());  // 1,024 tokens: within the fitted runs'
  const Result bad = run("plan qwen3-30b-a3b-h100x1 --serve-check 3 --engine tgi");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--engine"), std::string::npos) << bad.err;
}

// A scenario with search.disaggregated: the best plan is a prefill and a decode pool,
// written as a plan file that `serve --plan` serves as such; --serve-check serves the
// best of both kinds.
TEST(Cli, DisaggregatedPlansAreSearchedWrittenAndServed) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_pools_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Result r = run("plan deepseek-v3-h200-4x8-chat-disagg --top 2 --out " + dir.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("x prefill pp1"), std::string::npos) << r.out;
  const auto plan = nlohmann::json::parse(std::ifstream(dir / "plan-01.json"));
  ASSERT_TRUE(plan.contains("disaggregated")) << plan.dump(2);
  const int prefill_workers = plan.at("disaggregated").at("prefill_workers");
  const std::string data = DAYZERO_DATA_DIR;
  const Result served = run("serve --model DeepSeek-V3 --cluster " + data + "/clusters/h200-4x8.json --plan " +
                            (dir / "plan-01.json").string() + " --concurrency 64 --requests 128 --json");
  ASSERT_EQ(served.status, 0) << served.err;
  const auto j = nlohmann::json::parse(served.out);
  EXPECT_EQ(j.at("disaggregated").at("prefill_workers"), prefill_workers);
  EXPECT_GT(j.at("disaggregated").at("kv_transfer_s").get<double>(), 0);
  EXPECT_EQ(j.at("e2e_s").at("count"), 128);
  const Result sim = run("simulate --model DeepSeek-V3 --cluster " + data + "/clusters/h200-4x8.json --plan " +
                         (dir / "plan-01.json").string());
  ASSERT_EQ(sim.status, 0) << sim.err;
  EXPECT_NE(sim.out.find("  P 0-7 "), std::string::npos) << sim.out;  // one prefill worker's ranks, then a decode one's
  EXPECT_NE(sim.out.find("  D 8-"), std::string::npos) << sim.out;
  const Result check = run("plan deepseek-v3-h200-2x8-chat-disagg --serve-check 1 --json");
  ASSERT_EQ(check.status, 0) << check.err;
  const auto rows = nlohmann::json::parse(check.out).at("serve_check").at("plans");
  ASSERT_EQ(rows.size(), 2u);  // the best single pool and the best pair
  EXPECT_NE(rows[0].at("layout").get<std::string>().find("x prefill") == std::string::npos,
            rows[1].at("layout").get<std::string>().find("x prefill") == std::string::npos);
  std::filesystem::remove_all(dir);
}

// `sweep`: the default scenario's best plan at each concurrency (by default twelve, 1 to
// 2,048), as a table, JSON, CSV and, where dayzero-gui is built, a PNG chart; one axis at
// a time; --best serves each point's own best plan.
TEST(Cli, SweepServesEachPointAndWritesItsFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_sweep_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Result r = run("sweep --out " + dir.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("concurrency"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("12 points served"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(std::ifstream(dir / "sweep.json"));
  ASSERT_EQ(j.at("points").size(), 12u);
  EXPECT_EQ(j.at("points")[11].at("x"), 2048);
  EXPECT_DOUBLE_EQ(j.at("sla").at("max_tpot_s").get<double>(), 0.1);  // the scenario's SLA, for the chart's lines
  // More in flight, more tokens/s, up to the knee: while requests still reach their
  // first token within the SLA (past it the KV cache is full and vLLM preempts, which
  // may cost throughput). The knee lies past the first eight points.
  double last = 0;
  int rising = 0;
  const double max_ttft_s = j.at("sla").at("max_ttft_s").get<double>();
  for (const auto& p : j.at("points")) {
    if (p.at("ttft_s").at("mean").get<double>() > max_ttft_s) break;
    EXPECT_GE(p.at("output_tokens_per_s").get<double>(), 0.95 * last);
    last = p.at("output_tokens_per_s").get<double>();
    ++rising;
  }
  EXPECT_GE(rising, 8);
  std::ifstream csv(dir / "sweep.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("concurrency,layout,devices,ttft_s_mean", 0), 0u) << header;
  const auto gui = std::filesystem::path(DAYZERO_BIN).parent_path() / "dayzero-gui";
  if (std::filesystem::exists(gui)) {
    EXPECT_GT(std::filesystem::file_size(dir / "sweep.png"), 10'000u);
  } else {
    EXPECT_NE(r.err.find("not drawn"), std::string::npos) << r.err;
  }
  const Result rate = run("sweep --request-rate 0.5,1 --requests 60 --input-len 512 --output-len 64 --json");
  ASSERT_EQ(rate.status, 0) << rate.err;
  const auto rj = nlohmann::json::parse(rate.out);
  EXPECT_EQ(rj.at("axis"), "request_rate");
  EXPECT_EQ(rj.at("points")[1].at("e2e_s").at("count").get<int>() > 0, true);
  EXPECT_EQ(r.out.find("longer than any"), std::string::npos) << r.out;
  // Prompts past the shipped calibration's longest (8,192 tokens) are flagged.
  const Result isl = run("sweep --input-len 2048,16384 --requests 40");
  ASSERT_EQ(isl.status, 0) << isl.err;
  EXPECT_NE(isl.out.find("note: prompts of 16,384 tokens are longer than any of the vllm runs the calibration was "
                         "fitted to (at most 8,192)"),
            std::string::npos)
      << isl.out;
  const Result two = run("sweep --concurrency 1,2 --input-len 100,200");
  EXPECT_EQ(two.status, 1);
  EXPECT_NE(two.err.find("one axis at a time"), std::string::npos) << two.err;
  const Result bad = run("sweep --concurrency 1,0");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("concurrency 0"), std::string::npos) << bad.err;
  const Result best = run("sweep qwen3-30b-a3b-h100x1 --best --concurrency 4,32");
  ASSERT_EQ(best.status, 0) << best.err;
  EXPECT_NE(best.out.find("the best plan of each point"), std::string::npos) << best.out;
  std::filesystem::remove_all(dir);
}
