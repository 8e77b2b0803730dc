// The dayzero binary end to end: exit statuses, one-line errors, JSON shape.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.h"

namespace {

using dayzero::cli::testing::Result;
using dayzero::cli::testing::run;
using dayzero::cli::testing::slurp;

std::string model(const std::string& name) { return std::string(DAYZERO_DATA_DIR) + "/models/" + name; }

}  // namespace

TEST(Cli, DefaultRunsPlanOfTheDefaultScenario) {
  const Result r = run("");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Scenario deepseek-v3-h200-2x8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Top plans"), std::string::npos);
  EXPECT_EQ(run("plan").out, r.out);
}

TEST(Cli, InspectBundledModel) {
  const Result r = run("inspect DeepSeek-V3");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("671,026,419,200"), std::string::npos);
}

// Qwen3.5: 15 of 60 layers cache K and V (30,720 bytes per token); a 128K request holds
// 131,072 x 30,720 = 4.03 GB of KV and 0.19 GB of linear state, where attention in all 60
// layers would need 4 x 4.03 = 16.11 GB.
TEST(Cli, InspectShowsWhatLinearAttentionSaves) {
  const Result r = run("inspect Qwen3.5-397B-A17B");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("one 128K-token request at bf16: KV 4.03 GB (3.75 GiB) + state 0.19 GB (0.18 GiB); with "
                       "attention in all 60 layers its KV would be 16.11 GB (15.00 GiB)"),
            std::string::npos)
      << r.out;
}

TEST(Cli, HelpOnEverySubcommand) {
  for (const char* args : {"--help", "inspect --help", "check --help", "synth --help", "topo --help", "simulate --help",
                           "plan --help", "run --help", "calibrate --help", "validate --help", "serve --help"}) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 0) << args;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args << ": " << r.out;
  }
}

TEST(Cli, InspectJsonHasRequiredKeys) {
  const Result r = run("inspect " + model("Llama-3.1-8B") + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("architecture"), "LlamaForCausalLM");
  EXPECT_EQ(j.at("num_layers"), 32);
  EXPECT_TRUE(j.at("params_total").is_number_integer());
  EXPECT_EQ(j.at("params_total").get<int64_t>(), 8'030'261'248);
  EXPECT_EQ(j.at("params_active").get<int64_t>(), 8'030'261'248);
  EXPECT_EQ(j.at("params_embedding").get<int64_t>(), 525'336'576);
  for (const char* k : {"bf16", "fp8", "int8", "int8_w8a16", "int4", "nvfp4", "checkpoint"})
    EXPECT_TRUE(j.at("weights_bytes").at(k).is_number_integer()) << k;
  EXPECT_EQ(j.at("weights_bytes").at("checkpoint").get<int64_t>(), 16'060'522'496);
  // Layers at 1 B per weight + a scale per output row (1,376,256 rows: F32 for W8A8,
  // BF16 for W8A16) or at NVFP4 (6,979,321,856 x 9/16 + 4 B x 224 matrices), with the
  // BF16 embedding, head (1,050,673,152 B each) and norms (532,480 B):
  EXPECT_EQ(j.at("weights_bytes").at("int8").get<int64_t>(), 9'086'705'664);
  EXPECT_EQ(j.at("weights_bytes").at("int8_w8a16").get<int64_t>(), 9'083'953'152);
  EXPECT_EQ(j.at("weights_bytes").at("nvfp4").get<int64_t>(), 6'027'748'224);
  EXPECT_EQ(j.at("kv_bytes_per_token").at("bf16").get<int64_t>(), 131'072);
  EXPECT_EQ(j.at("kv_bytes_per_token").at("fp8").get<int64_t>(), 65'536);
  ASSERT_EQ(j.at("layers").size(), 32u);
  EXPECT_GT(j.at("layers")[0].at("ops").size(), 5u);
}

TEST(Cli, InspectByBundledNameAndDirectory) {
  const Result by_name = run("inspect Mixtral-8x7B --json");
  const Result by_file = run("inspect " + model("Mixtral-8x7B") + "/config.json --json");
  ASSERT_EQ(by_name.status, 0) << by_name.err;
  ASSERT_EQ(by_file.status, 0) << by_file.err;
  const auto a = nlohmann::json::parse(by_name.out), b = nlohmann::json::parse(by_file.out);
  EXPECT_EQ(a.at("params_total"), b.at("params_total"));
  EXPECT_EQ(a.at("params_active"), b.at("params_active"));
}

TEST(Cli, BadInputIsOneLineErrorAndNonZeroExit) {
  const auto dir = std::filesystem::temp_directory_path() / "dayzero_cli_bad";
  std::filesystem::create_directories(dir);
  const auto file = dir / "config.json";
  std::ofstream(file) << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": -1})";
  const Result r = run("inspect " + file.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'hidden_size' = -1"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "exactly one line: " << r.err;

  const Result missing = run("inspect /nonexistent/dir");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("/nonexistent/dir"), std::string::npos) << missing.err;

  const Result bad_flag = run("inspect --no-such-flag");
  EXPECT_NE(bad_flag.status, 0);
}

// Every bundled config inspects cleanly, in text and in JSON.
TEST(Cli, EveryBundledModelInspects) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DAYZERO_DATA_DIR) + "/models")) {
    if (!entry.is_directory()) continue;
    SCOPED_TRACE(entry.path().string());
    const Result text = run("inspect " + entry.path().string());
    EXPECT_EQ(text.status, 0) << text.err;
    const Result json = run("inspect " + entry.path().string() + " --json");
    ASSERT_EQ(json.status, 0) << json.err;
    EXPECT_GT(nlohmann::json::parse(json.out).at("params_total").get<int64_t>(), 0);
  }
}

TEST(Cli, SynthThenCheckExitStatuses) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_synth_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string tiny = std::string(DAYZERO_FIXTURES_DIR) + "/tiny/mixtral";
  const Result synth = run("synth " + tiny + " --layers 1 --seed 3 --shard-gb 0.0002 --out " + dir.string());
  ASSERT_EQ(synth.status, 0) << synth.err;
  EXPECT_NE(synth.out.find("wrote"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir / "model.safetensors.index.json"));

  const Result ok = run("check " + dir.string() + " --json");
  ASSERT_EQ(ok.status, 0) << ok.out << ok.err;
  EXPECT_TRUE(nlohmann::json::parse(ok.out).at("ok").get<bool>());

  // Truncate one shard: check names it and exits 2, without crashing.
  std::filesystem::path shard;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("model-00002-of-", 0) == 0) shard = e.path();
  ASSERT_FALSE(shard.empty());
  std::filesystem::resize_file(shard, std::filesystem::file_size(shard) / 2);
  const Result bad = run("check " + dir.string());
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find(shard.filename().string()), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("MISMATCH"), std::string::npos);

  const Result bad_layers = run("synth " + tiny + " --layers 100 --out " + dir.string() + "_x");
  EXPECT_EQ(bad_layers.status, 1);
  EXPECT_NE(bad_layers.err.find("--layers 100"), std::string::npos) << bad_layers.err;
  std::filesystem::remove_all(dir);
}

TEST(Cli, SimulateFitsAndDoesNotFit) {
  const std::string plans = std::string(DAYZERO_DATA_DIR) + "/plans/";
  const Result ok =
      run("simulate --model DeepSeek-V3 --cluster h200-2x8 --plan " + plans + "deepseek-v3-h200-2x8-ep16.json --json");
  ASSERT_EQ(ok.status, 0) << ok.err;
  const auto j = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(j.at("fits").get<bool>());
  for (const char* k : {"ttft_s", "tpot_s", "throughput_tokens_per_s"}) EXPECT_GT(j.at(k).get<double>(), 0) << k;
  ASSERT_EQ(j.at("ranks").size(), 16u);
  for (const char* k : {"rank", "device", "weights_bytes", "kv_cache_bytes", "activation_bytes", "buffer_bytes",
                        "overhead_bytes", "total_bytes", "capacity_bytes", "host_bytes"})
    EXPECT_TRUE(j.at("ranks")[5].contains(k)) << k;
  EXPECT_EQ(j.at("ranks")[5].at("device"), "n0.d5");

  const Result bf16 =
      run("simulate --model DeepSeek-V3 --cluster h200-2x8 --plan " + plans + "deepseek-v3-h200-2x8-ep16-bf16.json");
  EXPECT_EQ(bf16.status, 2);
  EXPECT_NE(bf16.out.find("DOES NOT FIT: rank 0"), std::string::npos) << bf16.out;
  EXPECT_NE(bf16.out.find("over by"), std::string::npos);

  const Result bad =
      run("simulate --model Llama-3.1-8B --cluster h100x8 --plan " + plans + "deepseek-v3-h200-2x8-ep16.json");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("the model has no experts"), std::string::npos) << bad.err;
  EXPECT_EQ(run("simulate --help").status, 0);
}

// A plan in NVFP4 (W4A4) simulates on Blackwell and is refused on an H100, naming
// the field, the precision and the device.
TEST(Cli, SimulateNvfp4NeedsFp4TensorCores) {
  const auto file =
      std::filesystem::temp_directory_path() / ("dayzero_cli_nvfp4_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << R"({"schema_version": 1, "attention": {"tp": 1, "dp": 1},
      "dtypes": {"attention": "nvfp4", "dense_mlp": "nvfp4", "kv_cache": "fp8"},
      "workload": {"batch": 1, "input_len": 1000, "output_len": 200}})";
  const Result b200 = run("simulate --model Llama-3.1-8B --cluster hgx-b200 --plan " + file.string() + " --json");
  EXPECT_EQ(b200.status, 0) << b200.err;
  const Result h100 = run("simulate --model Llama-3.1-8B --cluster h100x1 --plan " + file.string());
  EXPECT_EQ(h100.status, 1);
  EXPECT_NE(h100.err.find("field 'dtypes.attention' = nvfp4: needs fp4 tensor cores"), std::string::npos) << h100.err;
  EXPECT_NE(h100.err.find("H100-SXM"), std::string::npos) << h100.err;
  std::filesystem::remove(file);
}

TEST(Cli, PlanIsDeterministicAndWritesPlansSimulateAccepts) {
  const Result a = run("plan llama-3.1-70b-h100x8");
  const Result b = run("plan llama-3.1-70b-h100x8");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);  // byte-identical

  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_plan_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Result w = run("plan llama-3.1-70b-h100x8 --top 3 --out " + dir.string());
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "evaluated.csv"));
  for (const char* f : {"plan-01.json", "plan-02.json", "plan-03.json"}) {
    ASSERT_TRUE(std::filesystem::exists(dir / f)) << f;
    const Result sim = run("simulate --model Llama-3.1-70B --cluster h100x8 --plan " + (dir / f).string() + " --json");
    EXPECT_EQ(sim.status, 0) << f << ": " << sim.err;
    // The prediction written with the plan is what simulate predicts again.
    std::ifstream in(dir / f);
    const auto saved = nlohmann::json::parse(in);
    EXPECT_EQ(saved.at("prediction").at("tpot_s"), nlohmann::json::parse(sim.out).at("tpot_s"));
  }
  std::ifstream csv(dir / "evaluated.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("index,devices,pp,tp,dp,ep", 0), 0u);

  const Result j = run("plan llama-3.1-70b-h100x8 --json");
  ASSERT_EQ(j.status, 0);
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_FALSE(doc.at("plans").empty());
  for (const auto& idx : doc.at("pareto")) EXPECT_LT(idx.get<size_t>(), doc.at("plans").size());
  EXPECT_TRUE(doc.at("plans")[0].contains("prediction"));
  std::filesystem::remove_all(dir);
}

TEST(Cli, PlanWithAnUnmeetableSlaExplainsAndFails) {
  const auto file =
      std::filesystem::temp_directory_path() / ("dayzero_cli_sla_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << R"({"schema_version": 1, "model": ")" << DAYZERO_DATA_DIR << R"(/models/Llama-3.1-8B",
    "cluster": ")" << DAYZERO_DATA_DIR
                      << R"(/clusters/h100x8.json",
    "workload": {"input_len": 1024, "output_len": 128, "concurrency": 8}, "sla": {"max_ttft_s": 0.00001}})";
  const Result r = run("plan " + file.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("No plan fits and meets the SLA. What would:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a looser SLA"), std::string::npos) << r.out;
}

// `run` on the tiny Llama fixture: the reference greedy tokens, a timing table,
// Measurements JSON, and the local plan written beside it.
TEST(Cli, RunWritesMeasurementsAndPlan) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_run_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string weights = std::string(DAYZERO_FIXTURES_DIR) + "/tiny/llama";
  const Result r = run("run --weights " + weights + " --prompt-tokens 31,120,25,102,49,202,120,169,42,171,17,111" +
                       " --decode-steps 4 --iterations 2 --out " + (dir / "m.json").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("generated tokens: 184 13 74 84 61"), std::string::npos) << r.out;  // golden.json
  EXPECT_NE(r.out.find("q_proj"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(dir / "m.json"));
  for (const char* k :
       {"schema_version", "tokens", "ops", "prefill_s", "decode_step_s", "peak_bytes", "plan", "machine"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j.at("tokens").at(0).get<std::vector<int64_t>>(), (std::vector<int64_t>{184, 13, 74, 84, 61}));
  EXPECT_TRUE(std::filesystem::exists(dir / "m.plan.json"));

  // The plan file it wrote runs unchanged.
  const Result again = run("run " + (dir / "m.plan.json").string() + " --weights " + weights +
                           " --prompt-len 5 --decode-steps 1 --iterations 0 --out " + (dir / "m2.json").string());
  EXPECT_EQ(again.status, 0) << again.err;
  std::filesystem::remove_all(dir);
}

TEST(Cli, RunErrorsAreOneLine) {
  const std::string weights = std::string(DAYZERO_FIXTURES_DIR) + "/tiny/llama";
  const auto out =
      std::filesystem::temp_directory_path() / ("dayzero_cli_run_err_" + std::to_string(::getpid()) + ".json");
  const Result tp2 = run("run --weights " + weights + " --tp 2 --out " + out.string());
  EXPECT_EQ(tp2.status, 1);
  EXPECT_NE(tp2.err.find("needs 2 ranks but 1 rank"), std::string::npos) << tp2.err;
  EXPECT_EQ(tp2.err.find('\n'), tp2.err.size() - 1) << "exactly one line: " << tp2.err;
  const Result missing = run("run --weights /nonexistent/weights --out " + out.string());
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("/nonexistent/weights"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find('\n'), missing.err.size() - 1) << "exactly one line: " << missing.err;
  const Result nowhere = run("run --weights " + weights + " --out /nonexistent/dir/m.json");
  EXPECT_EQ(nowhere.status, 1);
  EXPECT_NE(nowhere.err.find("directory '/nonexistent/dir' does not exist"), std::string::npos) << nowhere.err;
  const Result cuda = run("run --weights " + weights + " --backend cuda --out " + out.string());
  EXPECT_EQ(cuda.status, 1);
  EXPECT_NE(cuda.err.find("backend 'cuda' is not built into this dayzero (built: cpu)"), std::string::npos) << cuda.err;
  // Issue 16: sizes are bounded before a prompt is built (a batch of 2^26 prompts of
  // 2^30 tokens used to be allocated), and positions checked against the model's.
  const Result huge =
      run("run --weights " + weights + " --batch 67108864 --prompt-len 1073741824 --out " + out.string());
  EXPECT_EQ(huge.status, 1);
  EXPECT_NE(huge.err.find("is more than a run holds (16777216 tokens)"), std::string::npos) << huge.err;
  const Result longer = run("run --weights " + weights + " --prompt-len 500 --decode-steps 13 --out " + out.string());
  EXPECT_EQ(longer.status, 1);
  EXPECT_NE(longer.err.find("exceed the model's max_position_embeddings 512"), std::string::npos) << longer.err;
  const Result batch = run("run --weights " + weights + " --batch 67108865 --out " + out.string());
  EXPECT_NE(batch.status, 0);
  EXPECT_NE(batch.err.find("--batch"), std::string::npos) << batch.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(out);
  std::filesystem::remove(out.parent_path() / (out.stem().string() + ".plan.json"));
}

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

// `validate --bench`: measured serving runs predicted row by row, as JSON; a bad
// file is a one-line error naming the row and the field.
TEST(Cli, ValidateBenchPredictsRowsAndRejectsWithReasons) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_bench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string header =
      "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,"
      "batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";
  std::ofstream(dir / "ok.csv") << header
                                << "a,sglang,,Qwen/Qwen3-32B,h100_sxm,,agg,2000,500,,,8,2,1,1,,,150,14\n"
                                   "b,vllm,,someone/Unknown-1B,b200_sxm,fp8,agg,2000,500,fp8,fp8,8,8,1,1,8,1,150,14\n";
  const Result r = run("validate --bench " + (dir / "ok.csv").string() + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("rows").size(), 2u);
  EXPECT_EQ(j.at("rows")[0].at("status"), "predicted");
  EXPECT_GT(j.at("rows")[0].at("predicted").at("ttft_s").get<double>(), 0);
  EXPECT_EQ(j.at("rows")[1].at("status"), "rejected");
  EXPECT_NE(j.at("rows")[1].at("reason").get<std::string>().find("someone/Unknown-1B"), std::string::npos);
  EXPECT_EQ(j.at("summary").at("all").at("rows"), 1);
  std::ofstream(dir / "bad.csv") << header << "c,vllm,,Qwen/Qwen3-32B,h100_sxm,,agg,2000,500,,,8,2,1,1,,,abc,14\n";
  const Result bad = run("validate --bench " + (dir / "bad.csv").string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("row 2 (c) silicon_ttft_ms"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1);
  std::filesystem::remove_all(dir);
}

// `plan --serve-check K`: the K best plans served request by request, the SLA checked
// on p90, re-ranked, and the agreement of the two orders reported, in text and JSON.
TEST(Cli, PlanServeCheckReRanksTheBestPlansByServing) {
  const Result r = run("plan qwen3-30b-a3b-h100x1 --serve-check 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Checked by the serving simulation (vllm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pairs of plans meeting the SLA both ways"), std::string::npos) << r.out;
  const Result j = run("plan qwen3-30b-a3b-h100x1 --serve-check 3 --engine sglang --json");
  ASSERT_EQ(j.status, 0) << j.err;
  const auto check = nlohmann::json::parse(j.out).at("serve_check");
  EXPECT_EQ(check.at("engine"), "sglang");
  ASSERT_EQ(check.at("plans").size(), 3u);
  EXPECT_EQ(check.at("plans")[0].at("steady_rank"), 1);
  EXPECT_GT(check.at("plans")[0].at("tpot_s").at("p90").get<double>(), 0);
  const Result bad = run("plan qwen3-30b-a3b-h100x1 --serve-check 3 --engine tgi");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--engine"), std::string::npos) << bad.err;
}

// `calibrate --bench` fits a directory's calibration to measured rows; `validate --bench`
// and `serve` read it back, and `serve` prints the band the measurement is likely in.
TEST(Cli, CalibrateBenchWritesACalibrationOthersRead) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_calbench_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "cal");
  const std::string header =
      "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,"
      "batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";
  std::ofstream(dir / "rows.csv") << header << "a,vllm,,Qwen/Qwen3-32B,h100_sxm,,agg,1000,100,,,4,2,1,1,,,90,11\n"
                                  << "b,vllm,,Qwen/Qwen3-32B,h100_sxm,,agg,1000,100,,,8,2,1,1,,,110,12\n"
                                  << "c,vllm,,Qwen/Qwen3-32B,h100_sxm,,agg,2000,100,,,8,4,1,1,,,120,9\n"
                                  << "d,vllm,,Qwen/Qwen3-32B,h100_sxm,,agg,2000,100,,,16,4,1,1,,,160,11\n";
  const Result r = run("calibrate --bench " + (dir / "rows.csv").string() + " --out " + (dir / "cal").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 of 4 runs predicted and fitted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("H100-SXM"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "cal" / "efficiency.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "cal" / "engine-overheads.json"));
  const Result v =
      run("validate --bench " + (dir / "rows.csv").string() + " --calibration " + (dir / "cal").string() + " --json");
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_EQ(nlohmann::json::parse(v.out).at("summary").at("all").at("rows"), 4);
  const Result s = run("serve qwen3-30b-a3b-h100x1 --engine vllm --concurrency 4 --requests 40 --calibration " +
                       (dir / "cal").string());
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.out.find("likely measured: TTFT"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("4 measured vllm runs"), std::string::npos) << s.out;
  const Result bad = run("calibrate --bench " + (dir / "rows.csv").string() + " --out " + (dir / "none").string());
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--out must be an existing directory"), std::string::npos) << bad.err;
  std::filesystem::remove_all(dir);
}

// `validate --bench` on a `vllm bench serve --save-result` file: the layout from the
// flags (the client records none without --metadata), the run predicted and listed
// measured against predicted; a missing layout names the run, the field and the flag.
TEST(Cli, ValidateBenchPredictsAVllmResultFile) {
  const std::string file = std::string(DAYZERO_SERVE_DATA_DIR) + "/vllm_serve_llama8b_c8.json";
  const Result r = run("validate --bench " + file + " --system h100_sxm --tp 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1 rows, 1 predicted, 0 rejected"), std::string::npos) << r.out;
  const auto row = r.out.find("vllm_serve_llama8b_c8:1");  // listed: a file of few runs
  ASSERT_NE(row, std::string::npos) << r.out;
  const std::string line = r.out.substr(row, r.out.find('\n', row) - row);
  EXPECT_NE(line.find(" 41.3 "), std::string::npos) << line;  // measured mean TTFT, ms
  EXPECT_NE(line.find(" 7.12 "), std::string::npos) << line;  // measured mean TPOT, ms
  const Result j = run("validate --bench " + file + " --system h100_sxm --tp 1 --json");
  ASSERT_EQ(j.status, 0) << j.err;
  const auto rows = nlohmann::json::parse(j.out).at("rows");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("status"), "predicted") << rows[0].dump();
  EXPECT_DOUBLE_EQ(rows[0].at("measured").at("ttft_s").get<double>(), 0.04127);
  EXPECT_GT(rows[0].at("predicted").at("ttft_s").get<double>(), 0);
  EXPECT_GT(rows[0].at("predicted").at("tpot_s").get<double>(), 0);
  const Result missing = run("validate --bench " + file + " --system h100_sxm");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("field 'line 1 tp': missing"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("pass --tp"), std::string::npos) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1);
  EXPECT_NE(run("validate --tp 1").status, 0);  // the layout flags need --bench
}
