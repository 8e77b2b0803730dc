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
#ifdef DAYZERO_TEST_CUDA_BUILT
  // Built with the CUDA backend, on a machine without a GPU (CI): the runtime's reason.
  EXPECT_EQ(cuda.status, 1);
  EXPECT_NE(cuda.err.find("backend 'cuda': no CUDA device ("), std::string::npos) << cuda.err;
#else
  EXPECT_EQ(cuda.status, 1);
  EXPECT_NE(cuda.err.find("backend 'cuda' is not built into this dayzero (built: cpu)"), std::string::npos) << cuda.err;
#endif
  EXPECT_EQ(cuda.err.find('\n'), cuda.err.size() - 1) << "exactly one line: " << cuda.err;
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
