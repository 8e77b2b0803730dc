// export, import and report through the binary: what they print and write, and their
// one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "helpers.h"

namespace dayzero::cli::testing {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("dayzero_cli_deploy_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

// One line on stderr, "dayzero: error: ...", and status 1.
void expect_one_line_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliExport, EachEnginesLaunchOfTheScenariosBestPlan) {
  const Result v = run("export --scenario llama-3.1-70b-h100x8 --engine vllm");
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_NE(v.out.find("vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 2"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("--quantization fp8"), std::string::npos) << v.out;
  const Result s = run("export --scenario deepseek-v3-h200-2x8 --engine sglang");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.out.find("--enable-dp-attention"), std::string::npos) << s.out;
  // TensorRT-LLM reads FP8 weights from an FP8 checkpoint only: the plan's field, named.
  expect_one_line_error(run("export --scenario llama-3.1-70b-h100x8 --engine trtllm"),
                        "TensorRT-LLM cannot run this plan as planned: dtypes:");
  const Result t =
      run("export --scenario llama-3.1-70b-h100x8 --engine trtllm --prequantized --model-id "
          "nvidia/Llama-3.1-70B-Instruct-FP8");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("trtllm-serve nvidia/Llama-3.1-70B-Instruct-FP8"), std::string::npos) << t.out;
  expect_one_line_error(run("export --scenario llama-3.1-70b-h100x8 --engine tgi"), "--engine: \"tgi\"");
}

TEST(CliExport, WritesTheScriptItsFilesAndTheRunJob) {
  const fs::path d = fresh_dir("export");
  const Result r = run("export --scenario deepseek-v3-h200-2x8 --engine trtllm --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"launch.sh", "extra-llm-api-config.yaml", "plan.json", "launch.json"})
    EXPECT_TRUE(fs::exists(d / f)) << f;
  EXPECT_NE(fs::status(d / "launch.sh").permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_NE(slurp(d / "extra-llm-api-config.yaml").find("enable_attention_dp: true"), std::string::npos);
  const fs::path j = fresh_dir("job");
  const Result job = run("export --scenario 3t-moe-h200-64x8 --run-job --out " + j.string());
  ASSERT_EQ(job.status, 0) << job.err;
  EXPECT_NE(slurp(j / "run.sbatch").find("#SBATCH --nodes=64"), std::string::npos);
  EXPECT_NE(slurp(j / "hostfile").find("n63 slots=8"), std::string::npos);
  expect_one_line_error(run("export --scenario deepseek-v3-h200-2x8"), "--engine");
  fs::remove_all(d);
  fs::remove_all(j);
}

TEST(CliImport, AHandWrittenCommandAgainstTheBestPlan) {
  const Result r =
      run("import --engine vllm --scenario llama-3.1-70b-h100x8 -- vllm serve meta-llama/Llama-3.1-70B-Instruct "
          "--tensor-parallel-size 8 --kv-cache-dtype fp8 --max-num-seqs 256 --trust-remote-code");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("attention tp 8 x dp 1; KV fp8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch 256"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept as the engine's (not modelled): --trust-remote-code"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("your deployment"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best plan"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[node 0] "), std::string::npos) << r.out;  // the best plan's command
  // A quantized checkpoint the bundled config does not describe: --weights says its precision.
  const Result q =
      run("import --engine trtllm --scenario llama-3.1-70b-h100x8 --weights fp8 --no-compare -- trtllm-serve "
          "nvidia/Llama-3.1-70B-Instruct-FP8 --tp_size 2 --max_batch_size 64");
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_NE(q.out.find("weights fp8, batch 64"), std::string::npos) << q.out;
  expect_one_line_error(run("import --engine vllm --scenario llama-3.1-70b-h100x8 --weights fp9 -- vllm serve m"),
                        "--weights: \"fp9\"");
}

TEST(CliImport, BadCommandLinesAreOneLineErrorsNamingTheFlag) {
  const std::string head = "import --engine vllm --cluster h100x8 -- vllm serve meta-llama/Llama-3.1-70B-Instruct ";
  expect_one_line_error(run(head + "--tensor-parallel-size 8 --turbo"), "--turbo is not an argument of vllm serve");
  expect_one_line_error(run(head + "--tensor-parallel-size eight"),
                        "--tensor-parallel-size: \"eight\" is not an integer");
  expect_one_line_error(run(head + "--tensor-parallel-size 16"), "= 16 GPUs: the cluster h100x8 has 8");
  expect_one_line_error(run("import --engine vllm --cluster h100x8 -- vllm serve some/unknown-model"),
                        "is not a bundled model");
}

TEST(CliReport, AReportDirectoryWithItsSections) {
  const fs::path d = fresh_dir("report");
  const Result r = run("report llama-3.1-70b-h100x8 --out " + d.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string md = slurp(d / "report.md");
  for (const char* section :
       {"## Recommendation", "## What the model needs at minimum", "## Plans compared", "## Memory per device",
        "## Latency and throughput", "## Launch", "vllm serve", "python3 -m sglang.launch_server", "trtllm-serve"})
    EXPECT_NE(md.find(section), std::string::npos) << section;
  EXPECT_TRUE(fs::exists(d / "sweep.json"));
  EXPECT_TRUE(fs::exists(d / "plan.json"));
  // Charts come from dayzero-gui when this build has it.
  if (fs::exists(fs::path(DAYZERO_BIN).parent_path() / "dayzero-gui")) {
    for (const char* png : {"memory.png", "pareto.png", "sweep.png"}) EXPECT_GT(fs::file_size(d / png), 1000u) << png;
    EXPECT_NE(md.find("![Memory per rank"), std::string::npos);
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace dayzero::cli::testing
