// The memory ledger of a plan that DayZero's own CUDA executor runs
// (SimulateOptions::cuda_executor, simulate/memory.cpp): what the executor stages
// beside an engine's activations and the runtime measured on the device, checked by
// hand and against the H200 runs kept in docs/gpu-runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.h"
#include "plan/cuda_staging.h"
#include "plan/measurements.h"
#include "simulate/run_prediction.h"

namespace dayzero::simulate {
namespace {

using testing::load_cluster;
using testing::load_model;
using testing::plan;

constexpr int64_t kH200ExecutorRuntimeBytes = 555'988'992;  // catalog.json, the tiny Llama's run

Prediction simulate_as(const model::Model& m, const topology::Cluster& c, const plan::Plan& p, bool cuda_executor,
                       plan::Fp8BlockGemm fp8 = plan::Fp8BlockGemm::bf16) {
  plan::validate_plan(p, m, c.num_devices(), "test-plan.json");
  Simulator sim(m, c);
  SimulateOptions o;
  o.cuda_executor = cuda_executor;
  o.cuda_fp8_block_gemm = fp8;
  return sim.simulate(p, o);
}

// Llama-3.1-8B at TP 1, BF16, on an H200: the 1,000-token prompt's BF16 copies of the
// down projection's inputs, the normed hidden state (4,096) and the gated product
// (14,336), 2 bytes each, and cuBLASLt's 32 MiB beside the engine's activations; the
// runtime is the executor's measured on the device. An H100, with no executor runtime
// measured, keeps the engines' figure.
TEST(ExecutorMemory, CudaExecutorStagesBf16CopiesAWorkspaceAndItsRuntime) {
  const auto m = load_model("Llama-3.1-8B");
  plan::Plan p = plan(1);
  p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.embedding = model::WeightPrecision::bf16;
  const auto h200 = load_cluster("h200x8");
  const RankMemory engine = simulate_as(m, h200, p, false).ranks.at(0);
  const RankMemory executor = simulate_as(m, h200, p, true).ranks.at(0);
  EXPECT_EQ(executor.activation_bytes - engine.activation_bytes, (int64_t{32} << 20) + 1000LL * (4096 + 14336) * 2);
  EXPECT_EQ(engine.overhead_bytes, kRuntimeOverheadBytes);
  EXPECT_EQ(executor.overhead_bytes, kH200ExecutorRuntimeBytes);
  EXPECT_EQ(executor.weights_bytes, engine.weights_bytes);
  EXPECT_EQ(executor.kv_cache_bytes, engine.kv_cache_bytes);
  EXPECT_EQ(simulate_as(m, load_cluster("h100x8"), p, true).ranks.at(0).overhead_bytes, kRuntimeOverheadBytes);
}

// DeepSeek-V3's FP8 checkpoint at TP 8: a prompt of more rows than the FP8 GEMV takes
// widens the stage's largest FP8 matrix to BF16 for the call, the dense MLP's gate /
// up / down (18,432 x 7,168, an eighth on each rank: 16,515,072 elements, 2 bytes
// each). BF16 weights are multiplied as they lie: nothing widened. The MLP's BF16
// copies are 7,168 + 18,432 / 8 = 9,472 columns of the 1,000 tokens.
TEST(ExecutorMemory, AnFp8PromptWidensTheLargestFp8MatrixOnce) {
  const auto m = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200x8");
  plan::Plan p = plan(8, 1, 1, 8);
  p.dtypes.kv_cache = plan::KvDtype::bf16;
  const int64_t copies = (int64_t{32} << 20) + 1000LL * (7168 + 18432 / 8) * 2;
  const auto added = [&](const plan::Plan& q) {
    return simulate_as(m, c, q, true).ranks.at(0).activation_bytes -
           simulate_as(m, c, q, false).ranks.at(0).activation_bytes;
  };
  EXPECT_EQ(added(p), copies + 18432LL * 7168 / 8 * 2);  // checkpoint: FP8 blocks
  plan::Plan bf16 = p;
  bf16.dtypes.attention = bf16.dtypes.dense_mlp = bf16.dtypes.experts = model::WeightPrecision::bf16;
  EXPECT_EQ(added(bf16), copies);
  plan::Plan decode = p;  // 8 rows: the FP8 GEMV reads the codes where they lie
  decode.workload.input_len = plan::kCudaFp8GemvRows;
  decode.workload.batch = 1;
  EXPECT_EQ(added(decode), (int64_t{32} << 20) + int64_t{plan::kCudaFp8GemvRows} * (7168 + 18432 / 8) * 2);
}

// The same prompt under the engines' W8A8 (a run of DAYZERO_CUDA_FP8_W8A8=1 that
// cuBLASLt took): no matrix is widened; one call's input is quantized instead, a byte an
// element with a float32 scale per 128 columns, at the larger of the MLP's shapes on the
// rank: 7,168 in (56 scales) at 1,000 rows = 7,392,000 bytes (2,304 in: 2,376,000). At
// 1,001 tokens the rows pad to 1,004 and the product is made in a padded float32 buffer:
// 2,304 in + 7,168 out x 4 = 1,004 x (2,304 + 18 x 4 + 28,672) = 31,172,192 bytes.
// A BF16 checkpoint stages no W8A8 scratch.
TEST(ExecutorMemory, W8a8QuantizesOneInputInsteadOfWideningAMatrix) {
  const auto m = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200x8");
  plan::Plan p = plan(8, 1, 1, 8);
  p.dtypes.kv_cache = plan::KvDtype::bf16;
  const auto added = [&](const plan::Plan& q) {
    return simulate_as(m, c, q, true, plan::Fp8BlockGemm::w8a8).ranks.at(0).activation_bytes -
           simulate_as(m, c, q, false).ranks.at(0).activation_bytes;
  };
  const auto copies = [](int64_t tokens) { return (int64_t{32} << 20) + tokens * (7168 + 18432 / 8) * 2; };
  EXPECT_EQ(added(p), copies(1000) + 7'392'000);
  plan::Plan padded = p;
  padded.workload.input_len = 1001;
  EXPECT_EQ(added(padded), copies(1001) + 31'172'192);
  plan::Plan bf16 = p;
  bf16.dtypes.attention = bf16.dtypes.dense_mlp = bf16.dtypes.experts = model::WeightPrecision::bf16;
  EXPECT_EQ(added(bf16), copies(1000));
}

// The run's model: the bundled config cut as `dayzero synth --layers N [--no-mtp]` cuts it.
model::Model cut_model(const std::string& name, int layers, const std::string& dir_name) {
  nlohmann::json config;
  std::ifstream(std::string(DAYZERO_DATA_DIR) + "/models/" + name + "/config.json") >> config;
  config["num_hidden_layers"] = layers;
  if (config.contains("num_nextn_predict_layers")) config["num_nextn_predict_layers"] = 0;
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_executor_memory_" + dir_name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump();
  return model::load_model(dir);
}

// The ledger against what the executor held on an H200 (tests/gpu/run.sh, session 29):
// weights and the KV cache within 1 %, the whole within 3 % (issue 19), on runs other
// than the tiny Llama's that measured the runtime figure.
TEST(ExecutorMemory, TheLedgerMatchesTheH200RunsItWasNotFittedTo) {
  const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  const topology::DeviceSpec& h200 = *catalog.find("H200-SXM");
  ASSERT_TRUE(h200.executor_runtime);
  const std::string runs = DAYZERO_GPU_RUNS_DIR;
  EXPECT_EQ(
      h200.executor_runtime->bytes,
      plan::load_measurements(runs + "/2026-12-04-h200-s29-tiny-llama.json").ranks.at(0).memory.device_runtime_bytes);
  struct Run {
    std::string file, model;
    int layers;
  };
  for (const Run& run : {Run{"2026-12-04-h200-s29-llama8b-2l.json", "Llama-3.1-8B", 2},
                         Run{"2026-12-04-h200-s29-llama8b-2l-4x512.json", "Llama-3.1-8B", 2},
                         Run{"2026-12-04-h200-s29-deepseek-v3-4l.json", "DeepSeek-V3", 4}}) {
    SCOPED_TRACE(run.file);
    const plan::Measurements ms = plan::load_measurements(runs + "/" + run.file);
    const RunPrediction r =
        predict_run(ms, cut_model(run.model, run.layers, run.model), one_node_cluster(h200, 1), Efficiency{});
    for (const MemoryComparison& c : r.memory) {
      SCOPED_TRACE(std::string(memory_category_name(c.category)));
      const bool exact = c.category == MemoryCategory::weights || c.category == MemoryCategory::kv_cache;
      if (exact || c.category == MemoryCategory::total) {
        EXPECT_LE(std::abs(c.error_pct), exact ? 1.0 : 3.0);
      }
    }
  }
}

}  // namespace
}  // namespace dayzero::simulate
