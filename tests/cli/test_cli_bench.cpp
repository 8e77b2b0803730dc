// The measured-run commands of the dayzero binary end to end: `validate --bench` (the CSV
// and a `vllm bench serve` result file) and `calibrate --bench`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.h"

namespace {

using dayzero::cli::testing::Result;
using dayzero::cli::testing::run;

}  // namespace

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
  EXPECT_EQ(s.out.find("longer than any of the vllm runs"), std::string::npos) << s.out;
  // Prompts past the fitted runs' longest (2,000 tokens) are flagged as an extrapolation.
  const Result longer =
      run("serve qwen3-30b-a3b-h100x1 --engine vllm --concurrency 4 --requests 40 --input-len 8192 "
          "--calibration " +
          (dir / "cal").string());
  ASSERT_EQ(longer.status, 0) << longer.err;
  EXPECT_NE(longer.out.find("prompts of 8,192 tokens are longer than any of the vllm runs the calibration was "
                            "fitted to (at most 2,000)"),
            std::string::npos)
      << longer.out;
  const Result lj =
      run("serve qwen3-30b-a3b-h100x1 --engine vllm --concurrency 4 --requests 40 --input-len 8192 --json "
          "--calibration " +
          (dir / "cal").string());
  ASSERT_EQ(lj.status, 0) << lj.err;
  const auto js = nlohmann::json::parse(lj.out);
  EXPECT_TRUE(js.at("prompt_beyond_calibration").get<bool>()) << lj.out.substr(0, 400);
  EXPECT_EQ(js.at("error_band").at("longest_prompt_tokens"), 2000);
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
