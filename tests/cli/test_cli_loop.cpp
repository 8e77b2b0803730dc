// The closed loop on this machine's CPU (DESIGN, "The closed loop"): `run` the tiny
// Llama fixture, `calibrate` cpu-host to what it measured, and `validate` before
// and after. The shipped cpu-host figures are nominal (2 us per op call, a 2-vCPU
// VM's peaks) while the fixture's ops take 0.1-100 us, so before calibration the
// prediction is far off; after it, each roofline group reproduces its measured
// total, and what is left end to end is the step time no op timing covers.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "helpers.h"

namespace {

using dayzero::cli::testing::Result;
using dayzero::cli::testing::run;
using dayzero::cli::testing::slurp;
namespace fs = std::filesystem;
using nlohmann::json;

// 1234567 -> "1,234,567", as validate prints byte counts.
std::string with_commas_for_test(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A fresh directory per test with one measured run of the tiny Llama.
class CliLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("dayzero_cli_loop_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    measurements_ = (dir_ / "m.json").string();
    const Result r = run("run --weights " + std::string(DAYZERO_FIXTURES_DIR) + "/tiny/llama --prompt-len 32" +
                             " --decode-steps 8 --iterations 5 --out " + measurements_,
                         "DAYZERO_THREADS=1");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  void TearDown() override { fs::remove_all(dir_); }

  json validate_json(const std::string& extra = "") {
    const Result r = run("validate " + measurements_ + " --json " + extra);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.status == 0 ? json::parse(r.out) : json::object();
  }
  // A copy of the measurements with one edit, as a new file.
  std::string edited(const std::string& name, const std::function<void(json&)>& edit) {
    json j = json::parse(slurp(measurements_));
    edit(j);
    const auto path = (dir_ / name).string();
    std::ofstream(path) << j.dump(1);
    return path;
  }

  fs::path dir_;
  std::string measurements_;
};

// Sum over (phase, kind) of |predicted - measured| over the sum of measured.
double kind_error(const json& report) {
  double err = 0, total = 0;
  for (const auto& g : report.at("groups")) {
    err += std::abs(g.at("predicted_s").get<double>() - g.at("measured_s").get<double>());
    total += g.at("measured_s").get<double>();
  }
  return err / total;
}

double kind_total(const json& report, const std::string& kind, const char* field) {
  double s = 0;
  for (const auto& g : report.at("groups"))
    if (g.at("kind") == kind) s += g.at(field).get<double>();
  return s;
}

void expect_one_line_error(const Result& r, std::initializer_list<std::string> parts) {
  EXPECT_NE(r.status, 0) << r.out;
  for (const auto& p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << "'" << p << "' not in: " << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "exactly one line: " << r.err;
}

TEST_F(CliLoop, CalibrationBringsPredictionsCloserToMeasurements) {
  const json before = validate_json();
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(before.at("device"), "cpu-host");
  EXPECT_EQ(before.at("compute_dtype"), "fp32");
  ASSERT_TRUE(before.at("decode").at("measured").get<bool>());
  // The whole run re-simulated: the run's workload on its plan (1 sequence of 32 tokens, 8 steps).
  const json& whole = before.at("run_prediction");
  ASSERT_TRUE(whole.at("predicted").get<bool>()) << whole.dump();
  EXPECT_EQ(whole.at("batch"), 1);
  EXPECT_EQ(whole.at("input_len"), 32);
  EXPECT_EQ(whole.at("output_len"), 9);
  EXPECT_GT(whole.at("decode_step").at("predicted_s").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(whole.at("prefill").at("predicted_s").get<double>(), whole.at("ttft_s").get<double>());
  // Without its model config the whole-run section says why, and the rest stands.
  const auto lost = edited("lost_model.json", [](json& j) { j["model"] = "/nowhere/config.json"; });
  const Result r = run("validate " + lost + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json lost_report = json::parse(r.out);
  EXPECT_FALSE(lost_report.at("run_prediction").at("predicted").get<bool>());
  EXPECT_NE(lost_report.at("run_prediction").at("skipped").get<std::string>().find("/nowhere/config.json"),
            std::string::npos);

  const std::string cal = (dir_ / "calibration.json").string();
  const Result c = run("calibrate " + measurements_ + " --out " + cal);
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("gemm_compute"), std::string::npos) << c.out;
  const json file = json::parse(slurp(cal));
  EXPECT_NE(file.at("devices").at("cpu-host").at("source").get<std::string>().find("m.json"), std::string::npos);

  const json after = validate_json("--calibration " + cal);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.at("efficiency").at("file"), cal);

  // Per (phase, kind), time-weighted over the kinds, and end to end in each phase.
  EXPECT_LT(kind_error(after), kind_error(before))
      << "per-kind error after " << kind_error(after) << ", before " << kind_error(before);
  // End to end against the measured ops of a step (the step time itself also
  // holds what no op timing covers, which no calibration of ops can predict).
  auto ops_error = [](const json& report, const char* phase) {
    const auto& p = report.at(phase);
    return std::abs(p.at("predicted_s").get<double>() / p.at("measured_ops_s").get<double>() - 1);
  };
  for (const char* phase : {"prefill", "decode"})
    EXPECT_LT(ops_error(after, phase), ops_error(before, phase))
        << phase << ": error against the measured ops after " << ops_error(after, phase) << ", before "
        << ops_error(before, phase);
  // Attention ops alone make up the attention groups, and nothing ran at peak:
  // after calibration their predicted total is their measured total.
  const double measured = kind_total(after, "attention", "measured_s");
  EXPECT_NEAR(kind_total(after, "attention", "predicted_s"), measured, 1e-3 * measured);
  EXPECT_GT(std::abs(kind_total(before, "attention", "predicted_s") - measured), 1e-2 * measured);

  // The table a person reads: units in the headers, both phases end to end.
  const Result text = run("validate " + measurements_ + " --calibration " + cal + " --ops");
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* s : {"measured us", "predicted us", "error %", "measured step us", "decode (per step)", "q_proj",
                        "Whole run", "decode step (TPOT)"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s << " not in:\n" << text.out;
}

TEST_F(CliLoop, BadInputsAreOneLineErrorsNamingFileAndField) {
  expect_one_line_error(run("validate " + (dir_ / "missing.json").string()), {"missing.json"});
  const auto bad_time = edited("bad_time.json", [](json& j) { j["ops"][0]["min_s"] = "fast"; });
  expect_one_line_error(run("validate " + bad_time), {"bad_time.json", "ops[0].min_s"});
  const auto bad_kind = edited("bad_kind.json", [](json& j) { j["ops"][2]["kind"] = "softmax"; });
  expect_one_line_error(run("validate " + bad_kind), {"bad_kind.json", "ops[2].kind", "softmax"});
  expect_one_line_error(run("calibrate " + bad_kind + " --out " + (dir_ / "c.json").string()),
                        {"bad_kind.json", "ops[2].kind"});
  expect_one_line_error(run("validate " + measurements_ + " --device no-such-device"), {"--device", "no-such-device"});
  // A GPU run names its device: the host's figures (the CPU run's default) would be the wrong one.
  const auto on_gpu = edited("on_gpu.json", [](json& j) { j["backend"] = "cuda"; });
  expect_one_line_error(run("validate " + on_gpu), {"on_gpu.json", "'cuda'", "--device"});
  expect_one_line_error(run("calibrate " + on_gpu + " --out " + (dir_ / "c.json").string()),
                        {"on_gpu.json", "'cuda'", "--device"});

  const auto bad_cal = (dir_ / "bad_cal.json").string();
  std::ofstream(bad_cal)
      << R"({"default": {"source": "s"}, "devices": {"cpu-host": {"gemm_compute": 2, "source": "s"}}})";
  expect_one_line_error(run("validate " + measurements_ + " --calibration " + bad_cal),
                        {"bad_cal.json", "devices.cpu-host.gemm_compute"});

  // A run without per-op timing has nothing to calibrate; nothing is written.
  const auto untimed = edited("untimed.json", [](json& j) {
    for (auto& o : j["ops"]) o["min_s"] = 0.0, o["mean_s"] = 0.0, o["iterations"] = 0;
  });
  const auto out = dir_ / "never.json";
  expect_one_line_error(run("calibrate " + untimed + " --out " + out.string()), {"untimed.json", "'ops'"});
  EXPECT_FALSE(fs::exists(out));
  EXPECT_NE(run("calibrate " + measurements_).status, 0);  // --out is required
}

// --collective-timeout (the deadline of a collective under mpirun) is refused
// outside (0, one day], naming the flag and the value, before anything runs; so
// is a malformed test-only hang hook variable.
TEST(CliRun, CollectiveTimeoutAndTestHookAreChecked) {
  const fs::path dir = fs::temp_directory_path() / ("dayzero_cli_timeout_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string run_llama = "run --weights " + std::string(DAYZERO_FIXTURES_DIR) +
                                "/tiny/llama --prompt-len 4 --decode-steps 1 --out " + (dir / "m.json").string();
  for (const auto& [value, why] : {std::pair{"0", "must be > 0 seconds, not 0"},
                                   {"-2", "must be > 0 seconds, not -2"},
                                   {"90000", "must be at most 86400 seconds (one day), not 90000"},
                                   {"soon", "not a number of seconds: 'soon'"}}) {
    const Result r = run(run_llama + " --collective-timeout " + value);
    EXPECT_NE(r.status, 0) << value;
    EXPECT_NE(r.err.find(std::string("--collective-timeout: ") + why), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "m.json"));
  const Result hook = run(run_llama, "DAYZERO_TEST_HANG_RANK=one");
  EXPECT_NE(hook.status, 0);
  EXPECT_NE(hook.err.find("DAYZERO_TEST_HANG_RANK='one': must be a non-negative integer"), std::string::npos)
      << hook.err;
  EXPECT_FALSE(fs::exists(dir / "m.json"));
  // In bounds (on one rank it has nothing to wait for), and a hook for another rank: a normal run.
  const Result ok = run(run_llama + " --collective-timeout 0.5", "DAYZERO_TEST_HANG_RANK=1");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_TRUE(fs::exists(dir / "m.json"));
  fs::remove_all(dir);
}

// validate sets each rank's measured memory beside the simulator's ledger for the
// same plan, per category: the weights the rank holds and its KV blocks are what the
// ledger computes, to the byte (tiny Llama, one rank, float32 weights and KV).
TEST_F(CliLoop, ValidateComparesMemoryPerCategory) {
  const json j = validate_json();
  const json& mem = j.at("run_prediction").at("memory");
  ASSERT_EQ(mem.size(), 6u);
  std::map<std::string, json> by;
  for (const auto& row : mem) by[row.at("category").get<std::string>()] = row;
  for (const char* c : {"weights", "kv_cache", "activations", "comm_buffers", "runtime", "total"})
    EXPECT_EQ(by.count(c), 1u) << c;
  EXPECT_GT(by.at("weights").at("measured_bytes").get<int64_t>(), 0);
  EXPECT_EQ(by.at("weights").at("measured_bytes"), by.at("weights").at("predicted_bytes"));
  EXPECT_EQ(by.at("kv_cache").at("measured_bytes"), by.at("kv_cache").at("predicted_bytes"));
  EXPECT_GT(by.at("runtime").at("measured_bytes").get<int64_t>(), 1'000'000);  // the process's own pages
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
  // The whole within 3 % (issue 19), with cpu-host's measured runtime figure, which is
  // a Release build's (a sanitizer's shadow memory or a debug build's pages are not).
  const auto total_measured = static_cast<double>(by.at("total").at("measured_bytes").get<int64_t>());
  const auto total_predicted = static_cast<double>(by.at("total").at("predicted_bytes").get<int64_t>());
  EXPECT_NEAR(total_predicted / total_measured, 1.0, 0.03) << mem.dump();
#endif
  const Result text = run("validate " + measurements_);
  EXPECT_NE(text.out.find("Memory per rank, measured against the simulator's ledger"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("on the device:"), std::string::npos) << "a CPU run has no device line";
}

// A device backend's run (its Measurements carry the pool's weights and kernels' buffers)
// gets a line per rank setting them beside the ledger's weights and activations: the
// same run's file with device figures written in (weights exactly the ledger's: +0.0 %).
TEST_F(CliLoop, ValidateSetsTheDevicesWeightsBesideTheLedger) {
  const json ledger = validate_json().at("run_prediction").at("memory");
  int64_t weights = 0;
  for (const auto& row : ledger)
    if (row.at("category") == "weights") weights = row.at("predicted_bytes").get<int64_t>();
  ASSERT_GT(weights, 0);
  json m = json::parse(slurp(measurements_));
  json& mem = m.at("ranks").at(0).at("memory");
  mem["device_pool_peak_bytes"] = weights + 4096;
  mem["device_used_bytes"] = weights + (int64_t{1} << 30);
  mem["device_weights_bytes"] = weights;
  mem["device_workspace_peak_bytes"] = 4096;
  const std::string device_file = (dir_ / "m-device.json").string();
  std::ofstream(device_file) << m.dump(1);
  const Result text = run("validate " + device_file);
  ASSERT_EQ(text.status, 0) << text.err;
  const std::string want = "rank 0 on the device: weights " + with_commas_for_test(weights) + " bytes (ledger " +
                           with_commas_for_test(weights) + ", 0.0 %), kernels' buffers at most 4,096 bytes";
  EXPECT_NE(text.out.find(want), std::string::npos) << text.out;
  // --json carries the same line's figures.
  const Result j = run("validate " + device_file + " --json");
  ASSERT_EQ(j.status, 0) << j.err;
  const json dev = json::parse(j.out).at("run_prediction").at("device_memory");
  ASSERT_EQ(dev.size(), 1u) << dev.dump();
  EXPECT_EQ(dev[0].at("rank"), 0);
  EXPECT_EQ(dev[0].at("weights_bytes").get<int64_t>(), weights);
  EXPECT_EQ(dev[0].at("ledger_weights_bytes").get<int64_t>(), weights);
  EXPECT_DOUBLE_EQ(dev[0].at("weights_error_pct").get<double>(), 0.0);
  EXPECT_EQ(dev[0].at("workspace_peak_bytes").get<int64_t>(), 4096);
  EXPECT_EQ(dev[0].at("pool_peak_bytes").get<int64_t>(), weights + 4096);
  EXPECT_EQ(dev[0].at("used_bytes").get<int64_t>(), weights + (int64_t{1} << 30));
  EXPECT_TRUE(json::parse(validate_json().dump()).at("run_prediction").at("device_memory").empty());  // a CPU run
}

// --check-precision: a plan with FP8 weights and an FP8 KV cache against the
// full-precision run of the same weights, written beside the timings and read back;
// the reference (the same plan at full precision) agrees with itself exactly.
TEST(CliRun, CheckPrecisionComparesWithTheFullPrecisionRun) {
  const fs::path dir = fs::temp_directory_path() / ("dayzero_cli_precision_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string llama = std::string(DAYZERO_FIXTURES_DIR) + "/tiny/llama";
  const std::string base = "run --weights " + llama + " --prompt-len 24 --decode-steps 6 --iterations 0 ";
  ASSERT_EQ(run(base + "--out " + (dir / "ref.json").string()).status, 0);  // writes ref.plan.json (fp32 KV)
  json plan = json::parse(slurp((dir / "ref.plan.json").string()));
  for (const char* part : {"attention", "dense_mlp", "experts", "embedding"}) plan["dtypes"][part] = "fp8";
  plan["dtypes"]["kv_cache"] = "fp8";
  std::ofstream((dir / "fp8.plan.json").string()) << plan.dump(1);
  const Result r =
      run(base + (dir / "fp8.plan.json").string() + " --check-precision --out " + (dir / "fp8.json").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("weights converted to the plan's dtypes when loaded (attention fp8"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("precision check: attention fp8"), std::string::npos) << r.out;
  const json pc = json::parse(slurp((dir / "fp8.json").string())).at("precision_check");
  EXPECT_EQ(pc.at("sequences").get<int>(), 1);
  EXPECT_GE(pc.at("rows").get<int>(), 24);  // every prompt position, and decode steps while tokens agree
  EXPECT_GT(pc.at("kl_mean_nats").get<double>(), 0.0);
  EXPECT_LT(pc.at("kl_mean_nats").get<double>(), 0.05);  // measured 0.003 nats: FP8 loses little here
  EXPECT_GT(pc.at("top1_agreement").get<double>(), 0.8);
  // The plan at full precision against itself: nothing differs.
  const Result same =
      run(base + (dir / "ref.plan.json").string() + " --check-precision --out " + (dir / "same.json").string());
  ASSERT_EQ(same.status, 0) << same.err;
  const json pc_same = json::parse(slurp((dir / "same.json").string())).at("precision_check");
  EXPECT_EQ(pc_same.at("kl_max_nats").get<double>(), 0.0);
  EXPECT_EQ(pc_same.at("max_abs_logit_diff").get<double>(), 0.0);
  EXPECT_EQ(pc_same.at("top1_agreement").get<double>(), 1.0);
  EXPECT_EQ(pc_same.at("sequences_tokens_equal").get<int>(), 1);
  // The file reads back (validate's strict reader accepts precision_check).
  EXPECT_EQ(run("validate " + (dir / "fp8.json").string()).status, 0);
  fs::remove_all(dir);
}

}  // namespace
