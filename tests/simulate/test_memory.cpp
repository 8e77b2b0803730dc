// The memory model against hand-computed cases; the arithmetic is in the comments.
#include <gtest/gtest.h>

#include "core/error.h"
#include "helpers.h"
#include "simulate/model_costs.h"
#include "simulate/run_prediction.h"
#include "topology/device.h"

#include <cmath>

#include <filesystem>
#include <fstream>

namespace dayzero::simulate {
namespace {

using testing::load_cluster;
using testing::load_model;
using testing::plan;
using testing::run;

constexpr int64_t GiB = int64_t{1} << 30;

// Llama-3.1-8B, BF16, TP=1: the whole checkpoint on one H100 (its index's total_size).
TEST(SimulateMemory, Llama8BTp1WeightsAndKv) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(1);
  p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.embedding = model::WeightPrecision::bf16;
  const auto pred = run(m, c, p);
  ASSERT_EQ(pred.ranks.size(), 1u);
  const auto& r = pred.ranks[0];
  EXPECT_EQ(r.weights_bytes, 16'060'522'496);
  // KV: 2 (K,V) x 8 heads x 128 x 32 layers x 2 bytes = 131,072 B per token;
  // 1000 + 200 tokens = 75 blocks of 16 exactly: 1,200 x 131,072 = 157,286,400.
  EXPECT_EQ(r.kv_cache_bytes, 157'286'400);
  EXPECT_EQ(r.buffer_bytes, 0);  // one rank: no communicators
  EXPECT_EQ(r.overhead_bytes, kRuntimeOverheadBytes);
  // Activations of the largest step: 1,000 prompt tokens x (3 x 4096 hidden-wide +
  // 3 x 14336: gate, up and their gated product) x 2 B + FP32 logits of the last
  // position: 128,256 x 4 B.
  EXPECT_EQ(r.activation_bytes, 1000LL * (3 * 4096 + 3 * 14336) * 2 + 128256LL * 4);
  EXPECT_EQ(r.total_bytes, r.weights_bytes + r.kv_cache_bytes + r.activation_bytes + r.overhead_bytes);
  EXPECT_TRUE(pred.fits);
}

// A finished sequence holds its prompt and every output token but the last (never fed
// back): 1,000 + 201 output tokens cache 1,200 tokens, 75 blocks of 16, not 76; one
// output token caches the prompt alone (63 blocks: 1,000 rounded up to 1,008).
// Measured so by the executor (validate's memory ledger, tiny Llama, 12 + 5).
TEST(SimulateMemory, TheLastOutputTokenHasNoKv) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(1);
  p.workload.output_len = 201;
  EXPECT_EQ(run(m, c, p).ranks[0].kv_cache_bytes, 1200LL * 131'072);
  p.workload.output_len = 202;
  EXPECT_EQ(run(m, c, p).ranks[0].kv_cache_bytes, 1216LL * 131'072);
  p.workload.output_len = 1;
  EXPECT_EQ(run(m, c, p).ranks[0].kv_cache_bytes, 1008LL * 131'072);
}

// Issue 16: input_len 10^15 wrapped kv_cache_bytes to INT64_MIN and "fits": true. At the
// largest lengths a plan may give, one sequence's KV is a (huge) positive size that does
// not fit: (2^30 + 2^30) tokens x 131,072 B = 2^48 B.
TEST(SimulateMemory, LongestSequenceIsAPositiveSizeThatDoesNotFit) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(1);
  p.workload.input_len = p.workload.output_len = plan::kMaxSequenceTokens;
  const auto pred = run(m, c, p);
  EXPECT_EQ(pred.ranks[0].kv_cache_bytes, int64_t{1} << 48);
  EXPECT_GT(pred.ranks[0].total_bytes, int64_t{1} << 48);
  EXPECT_FALSE(pred.fits);
}

// TP=2 halves every matrix (all dims are even) and keeps norms whole:
// norms = (32 layers x 2 + 1 final) x 4096 x 2 B = 532,480 B.
TEST(SimulateMemory, Llama8BTp2SplitsMatricesNotNorms) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(2);
  const auto pred = run(m, c, p);
  ASSERT_EQ(pred.ranks.size(), 2u);
  EXPECT_EQ(pred.ranks[0].weights_bytes, (16'060'522'496 - 532'480) / 2 + 532'480);
  // 8 KV heads over 2 ranks: 65,536 B per token per rank.
  EXPECT_EQ(pred.ranks[1].kv_cache_bytes, 1200LL * 65'536);
  EXPECT_EQ(pred.ranks[0].buffer_bytes, kNcclBytesPerCommunicator);  // the TP communicator
}

// A device that gives its own runtime and communicator figures (the catalog's cpu-host:
// the executor's process and OpenMPI's buffers) is costed with them, not the GPU
// engines' 1 GiB and 144 MiB.
TEST(SimulateMemory, DeviceGivesRuntimeAndCommunicatorBytes) {
  const auto m = load_model("Llama-3.1-8B");
  const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  topology::DeviceSpec dev = *catalog.find("H100-SXM");
  dev.runtime_overhead_bytes = 16'000'000;
  dev.comm_buffer_bytes_per_group = 200'000;
  const auto c = one_node_cluster(dev, 2);
  const auto pred = run(m, c, plan(2));
  EXPECT_EQ(pred.ranks[0].overhead_bytes, 16'000'000);
  EXPECT_EQ(pred.ranks[0].buffer_bytes, 200'000);  // one communicator: the TP group
  EXPECT_EQ(pred.ranks[0].total_bytes, pred.ranks[0].weights_bytes + pred.ranks[0].kv_cache_bytes +
                                           pred.ranks[0].activation_bytes + 200'000 + 16'000'000);
  const auto* cpu = catalog.find("cpu-host");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->runtime_overhead_bytes, 5'800'000);  // catalog.json, measured (its notes)
  EXPECT_FALSE(catalog.find("H200-SXM")->runtime_overhead_bytes);
  EXPECT_FALSE(catalog.find("H200-SXM")->comm_library_bytes);  // a GPU's is in its runtime figure
}

// The communication library's own pages, once per process in a world with peers: the
// pair's figure on 2 ranks, the other from 3 (OpenMPI's shared-memory transport on
// cpu-host, measured), nothing on one rank.
TEST(SimulateMemory, CommunicationLibraryBytesByWorldSize) {
  const auto m = load_model("Llama-3.1-8B");
  const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  topology::DeviceSpec dev = *catalog.find("H100-SXM");
  dev.comm_buffer_bytes_per_group = 200'000;
  dev.comm_library_bytes = 10'000'000;
  dev.comm_library_bytes_pair = 7'000'000;
  const auto c = one_node_cluster(dev, 8);
  EXPECT_EQ(run(m, c, plan(1)).ranks[0].buffer_bytes, 0);
  EXPECT_EQ(run(m, c, plan(2)).ranks[0].buffer_bytes, 200'000 + 7'000'000);  // TP group + library
  EXPECT_EQ(run(m, c, plan(4)).ranks[0].buffer_bytes, 200'000 + 10'000'000);
  dev.comm_library_bytes_pair.reset();  // unset: the figure of larger worlds
  EXPECT_EQ(run(m, one_node_cluster(dev, 8), plan(2)).ranks[0].buffer_bytes, 200'000 + 10'000'000);
}

// A measured run's memory against the ledger, per rank and category: hand-made figures.
TEST(SimulateMemory, CompareMemoryPerRankAndCategory) {
  plan::Measurements ms;
  ms.ranks.resize(2);
  ms.ranks[1].rank = 1;
  ms.ranks[0].memory = {100, 50, 10, 0, 1000, 0};
  ms.ranks[1].memory = {100, 50, 10, 4, 1000, 0};
  Prediction p;
  p.ranks.resize(1);  // only rank 0 predicted
  p.ranks[0].weights_bytes = 110;
  p.ranks[0].kv_cache_bytes = 50;
  p.ranks[0].activation_bytes = 20;
  p.ranks[0].buffer_bytes = 8;
  p.ranks[0].overhead_bytes = 900;
  p.ranks[0].total_bytes = 1088;
  const auto rows = compare_memory(ms, p);
  ASSERT_EQ(rows.size(), 6u);  // rank 1 has no prediction: left out
  EXPECT_EQ(rows[0].category, MemoryCategory::weights);
  EXPECT_DOUBLE_EQ(rows[0].error_pct, 10.0);
  EXPECT_DOUBLE_EQ(rows[1].error_pct, 0.0);
  EXPECT_DOUBLE_EQ(rows[2].error_pct, 100.0);
  EXPECT_TRUE(std::isnan(rows[3].error_pct));  // measured 0
  EXPECT_DOUBLE_EQ(rows[4].error_pct, -10.0);
  EXPECT_EQ(rows[5].category, MemoryCategory::total);
  EXPECT_EQ(rows[5].measured_bytes, 1160);
  EXPECT_NEAR(rows[5].error_pct, (1088.0 - 1160.0) / 1160.0 * 100, 1e-12);
  EXPECT_EQ(memory_category_name(MemoryCategory::kv_cache), "kv_cache");
}

// A device run is set beside the ledger as the device holds it: weights and kernels'
// buffers from the pool, the runtime from the device (in use beyond the pool's live and
// cached blocks), the KV cache from the device's pools where the run recorded them (else
// the executor's blocks), the communication buffers from the host; the host's
// resident-set figures are left out. Hand-made figures.
TEST(SimulateMemory, CompareMemoryOfADeviceRun) {
  plan::Measurements ms;
  ms.ranks.resize(1);
  auto& u = ms.ranks[0].memory;
  u = {100, 50, 10, 4, 1000, 0};  // the host's: weights 100, KV 50, workspace 10, comm 4, runtime 1000
  u.device_pool_peak_bytes = 300;
  u.device_weights_bytes = 200;
  u.device_workspace_peak_bytes = 80;
  u.device_used_bytes = 900;
  u.device_cached_bytes = 40;
  u.device_runtime_bytes = 600;
  Prediction p;
  p.ranks.resize(1);
  p.ranks[0].weights_bytes = 220;
  p.ranks[0].kv_cache_bytes = 50;
  p.ranks[0].activation_bytes = 60;
  p.ranks[0].buffer_bytes = 4;
  p.ranks[0].overhead_bytes = 500;
  p.ranks[0].total_bytes = 834;
  const auto rows = compare_memory(ms, p);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].measured_bytes, 200);  // the device's weights
  EXPECT_DOUBLE_EQ(rows[0].error_pct, 10.0);
  EXPECT_EQ(rows[1].measured_bytes, 50);  // no device pools recorded: the executor's blocks
  EXPECT_EQ(rows[2].measured_bytes, 80);  // the kernels' buffers at most
  EXPECT_DOUBLE_EQ(rows[2].error_pct, -25.0);
  EXPECT_EQ(rows[3].measured_bytes, 4);
  EXPECT_EQ(rows[4].measured_bytes, 600);  // the device's runtime
  EXPECT_EQ(rows[5].measured_bytes, 200 + 50 + 80 + 4 + 600);
  EXPECT_NEAR(rows[5].error_pct, (834.0 - 934.0) / 934.0 * 100, 1e-12);
  u.device_runtime_bytes = 0;  // a run from before 2026-12-04: in use less the weights
  EXPECT_EQ(compare_memory(ms, p)[4].measured_bytes, 900 - 200);
  u.device_kv_bytes = 75;  // the device's pools (a cache the backend holds)
  const auto with_pools = compare_memory(ms, p);
  EXPECT_EQ(with_pools[1].measured_bytes, 75);
  EXPECT_DOUBLE_EQ(with_pools[1].error_pct, (50.0 - 75.0) / 75.0 * 100);
  EXPECT_EQ(with_pools[5].measured_bytes, 200 + 75 + 80 + 4 + 700);
}

// MLA's absorbed decode: the engines keep W_UK and W_UV as BF16 copies of a quantized
// kv_b (vLLM, SGLang). DeepSeek-V3's kv_b is 128 heads x (128 + 128) x 512 =
// 16,777,216 parameters: 33,554,432 bytes of copies a layer beside its FP8 checkpoint
// (and beside FP8 or INT8 weights), none beside BF16 ones (views); a GQA model has none.
TEST(SimulateMemory, MlaKeepsBf16CopiesOfAQuantizedKvB) {
  const ModelCosts mc = model_costs(load_model("DeepSeek-V3"));
  ASSERT_FALSE(mc.classes.empty());
  const auto at = [](const LayerClassCosts& lc, model::WeightPrecision p) {
    return lc.mla_absorbed_copy_bytes[static_cast<size_t>(p)];
  };
  for (const auto& lc : mc.classes) {
    EXPECT_EQ(at(lc, model::WeightPrecision::checkpoint), 33'554'432);
    EXPECT_EQ(at(lc, model::WeightPrecision::fp8), 33'554'432);
    EXPECT_EQ(at(lc, model::WeightPrecision::int8), 33'554'432);
    EXPECT_EQ(at(lc, model::WeightPrecision::bf16), 0);
  }
  for (const auto& lc : model_costs(load_model("Llama-3.1-70B")).classes)
    for (const int64_t b : lc.mla_absorbed_copy_bytes) EXPECT_EQ(b, 0);
}

// GQA beyond kv_heads: Llama-3.1-70B (8 KV heads) at TP=16 keeps one KV head per
// rank (replicated twice), not half of one: 2 x 1 x 128 x 80 layers x 2 B = 40,960
// B per token, and the k/v projections are 1/8 of the full ones.
TEST(SimulateMemory, GqaReplicatesKvHeadsBeyondKvHeadCount) {
  const auto m = load_model("Llama-3.1-70B");
  const auto c = load_cluster("h200-2x8");
  const auto pred = run(m, c, plan(16));
  EXPECT_EQ(pred.ranks[0].kv_cache_bytes, 1200LL * 40'960);
  const auto pred8 = run(m, c, plan(8));
  EXPECT_EQ(pred8.ranks[0].kv_cache_bytes, 1200LL * 40'960);  // TP=8: 8/8 = one head too
}

// MLA caches one latent per token shared by all heads: replicated over TP. 576
// elements x 61 layers x 2 B = 70,272 B per token on every rank, whatever the TP.
TEST(SimulateMemory, MlaKvReplicatedOverTp) {
  const auto m = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200-2x8");
  plan::Plan p = plan(16, 1, 1, 16);
  p.workload.batch = 4;
  const auto pred = run(m, c, p);
  // 4 sequences x 1,200 tokens (75 blocks) x 70,272 B.
  EXPECT_EQ(pred.ranks[0].kv_cache_bytes, 4LL * 1200 * 70'272);
  plan::Plan fp8 = p;
  fp8.dtypes.kv_cache = plan::KvDtype::fp8;
  EXPECT_EQ(run(m, c, fp8).ranks[0].kv_cache_bytes, 4LL * 1200 * 35'136);
}

// MoE with EP: Mixtral-8x7B, attention DP=8 (tp 1) and experts EP=8 on 8 H100:
// each rank holds all attention and router weights and 1 of the 8 experts.
TEST(SimulateMemory, MoeExpertsSplitOverEp) {
  const auto m = load_model("Mixtral-8x7B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(1, 8, 1, 8);
  const auto pred = run(m, c, p);
  // Per layer: attention 4096 x (4096 + 1024 + 1024 + 4096) = 41,943,040 params,
  // norms 2 x 4096, router 8 x 4096 = 32,768, one expert 3 x 4096 x 14336 =
  // 176,160,768; x 32 layers; + embedding and head 32000 x 4096 each + final norm.
  const int64_t per_layer = 41'943'040 + 8'192 + 32'768 + 176'160'768;
  const int64_t params = 32 * per_layer + 2 * 131'072'000 + 4'096;
  EXPECT_EQ(pred.ranks[3].weights_bytes, 2 * params);
  EXPECT_EQ(pred.ranks[3].host_bytes, 0);
}

// Redundant experts: each EP rank holds its 8 / 4 = 2 experts and 4 / 4 = 1 replica
// of a hot one: one expert more per layer than without (176,160,768 params).
TEST(SimulateMemory, RedundantExpertsAddOneSlotPerRank) {
  const auto m = load_model("Mixtral-8x7B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(1, 4, 1, 4);
  const auto without = run(m, c, p);
  p.moe.redundant_experts = 4;
  const auto with = run(m, c, p);
  EXPECT_EQ(with.ranks[0].weights_bytes - without.ranks[0].weights_bytes, int64_t{32} * 2 * 176'160'768);
  // Not a multiple of ep, or without expert parallelism: refused, naming the field.
  p.moe.redundant_experts = 3;
  EXPECT_THROW(plan::validate_plan(p, m, c.num_devices(), "p.json"), core::InputError);
}

// Sliding layers keep their window (rounded to blocks) plus the block being filled.
// gpt-oss-20b: 12 full + 12 sliding (window 128) layers, 2 x 8 x 64 = 1,024 elements
// = 2,048 B per token per layer; 1,200 tokens: 12 x 1,200 x 2,048 + 12 x 144 x 2,048.
TEST(SimulateMemory, SlidingWindowCapsKv) {
  const auto m = load_model("gpt-oss-20b");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(1));
  EXPECT_EQ(pred.ranks[0].kv_cache_bytes, 12LL * 1200 * 2048 + 12LL * 144 * 2048);
}

// Offload: DeepSeek-V3 with 64 hottest experts per layer resident, EP=16: a rank
// keeps ceil(64/16) = 4 of its 16 experts per MoE layer; the other 12 live in host
// memory. One FP8 expert: 3 x (2048 x 7168 + 16 x 56 x 4) = 44,050,944 B; 58 MoE layers.
TEST(SimulateMemory, OffloadedExpertsMoveToHost) {
  const auto m = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200-2x8");
  plan::Plan all = plan(1, 16, 1, 16);
  plan::Plan off = all;
  off.offload.resident_experts = 64;
  const auto a = run(m, c, all), o = run(m, c, off);
  EXPECT_EQ(o.ranks[0].host_bytes, 12LL * 44'050'944 * 58);
  EXPECT_EQ(a.ranks[0].weights_bytes - o.ranks[0].weights_bytes, 12LL * 44'050'944 * 58);
}

// Pipeline stages: the embedding sits on the first stage, the head on the last.
TEST(SimulateMemory, PipelineStagesHoldTheirLayers) {
  const auto m = load_model("Llama-3.1-70B");
  const auto c = load_cluster("h200-2x8");
  plan::Plan p = plan(8, 1, 2);
  p.workload.batch = 2;
  const auto pred = run(m, c, p);
  ASSERT_EQ(pred.ranks.size(), 16u);
  const auto& s0 = pred.ranks[0];
  const auto& s1 = pred.ranks[8];
  EXPECT_EQ(s0.stage, 0);
  EXPECT_EQ(s1.stage, 1);
  // Same 40 layers each; stage 1 adds the head (1/8 of 128,256 x 8192 x 2 B) and the
  // final norm (8192 x 2 B) where stage 0 adds the embedding (same size as the head).
  EXPECT_EQ(s1.weights_bytes - s0.weights_bytes, 8192 * 2);
  EXPECT_GT(s1.activation_bytes, s0.activation_bytes);  // the logits
}

// Capacity is the device's; a plan over it says which rank and by how much.
TEST(SimulateMemory, DeepSeekV3Bf16DoesNotFitWithReason) {
  const auto m = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200-2x8");
  const plan::Plan fp8 = plan::load_plan(std::string(DAYZERO_DATA_DIR) + "/plans/deepseek-v3-h200-2x8-ep16.json");
  const plan::Plan bf16 = plan::load_plan(std::string(DAYZERO_DATA_DIR) + "/plans/deepseek-v3-h200-2x8-ep16-bf16.json");
  const auto a = run(m, c, fp8);
  const auto b = run(m, c, bf16);
  EXPECT_TRUE(a.fits);
  EXPECT_FALSE(b.fits);
  EXPECT_NE(b.fullest_reason.find("over by"), std::string::npos) << b.fullest_reason;
  EXPECT_NE(b.fullest_reason.find("weights"), std::string::npos) << b.fullest_reason;
  for (const auto& r : a.ranks) {
    EXPECT_EQ(r.total_bytes,
              r.weights_bytes + r.kv_cache_bytes + r.activation_bytes + r.buffer_bytes + r.overhead_bytes);
    EXPECT_EQ(r.capacity_bytes, 141 * GiB);
  }
  // FP8 experts and attention take about half the BF16 bytes.
  EXPECT_LT(static_cast<double>(a.ranks[0].weights_bytes), static_cast<double>(b.ranks[0].weights_bytes) * 0.55);
}

}  // namespace
}  // namespace dayzero::simulate

namespace dayzero::simulate {
namespace {

// The shipped efficiency table: defaults equal the named constants in
// efficiency.h, overrides apply per device, bad entries name the field.
TEST(EfficiencyTable, ShippedTableAndOverrides) {
  const auto t = EfficiencyTable::load_builtin(DAYZERO_DATA_DIR);
  // H200 has no measured serving runs: the figures fitted to its architecture's (H100's),
  // not the fit's shared ones (serve/serving_fit.h, step 3), with its GEMMs' streaming
  // share its measured copy bandwidth over the datasheet's (step 4: 4.2645 / 4.8 TB/s).
  EXPECT_EQ(t.for_device("H200-SXM").attention_memory, t.for_device("H100-SXM").attention_memory);
  EXPECT_NE(t.for_device("H200-SXM").attention_memory, t.default_efficiency().attention_memory);
  EXPECT_NEAR(t.for_device("H200-SXM").gemm_memory, 4.2645 / 4.8, 1e-9);
  EXPECT_NE(t.source_for("H200-SXM").find("copy bandwidth measured on this device"), std::string::npos);
  EXPECT_NE(t.source_for("H200-SXM").find("calibrate --bench"), std::string::npos);
  EXPECT_NE(t.source_for("H200-SXM").find("hopper devices' runs (H100-SXM"), std::string::npos);
  EXPECT_NE(t.source_for("H100-SXM").find("calibrate --bench"), std::string::npos);
  // NVIDIA GPUs of an architecture the runs do not name take the fit's shared figures
  // (serve/serving_fit.h, ServingFit::table), their GEMM tile height kept; another
  // vendor's keep their own sourced figures.
  EXPECT_EQ(t.for_device("A100-80GB-SXM").attention_compute, t.default_efficiency().attention_compute);
  EXPECT_EQ(t.for_device("A100-80GB-SXM").gemm_compute, t.default_efficiency().gemm_compute);
  EXPECT_EQ(t.for_device("A100-80GB-SXM").tile_rows, 128);
  EXPECT_EQ(t.for_device("L40S").elementwise_memory, t.default_efficiency().elementwise_memory);
  EXPECT_EQ(t.for_device("MI300X").attention_compute, 0.35);
  EXPECT_NE(t.source_for("MI300X").find("SemiAnalysis"), std::string::npos);

  // What save writes, load reads back.
  const auto copy = std::filesystem::temp_directory_path() / "dayzero_eff_copy.json";
  t.save(copy, "copy");
  const auto back = EfficiencyTable::load(copy);
  EXPECT_EQ(back.for_device("H100-SXM").gemm_memory, t.for_device("H100-SXM").gemm_memory);
  EXPECT_EQ(back.for_device("MI300X").collective_efficiency, t.for_device("MI300X").collective_efficiency);
  EXPECT_EQ(back.device_names(), t.device_names());

  const auto bad = std::filesystem::temp_directory_path() / "dayzero_bad_eff.json";
  std::ofstream(bad) << R"({"default": {"gemm_compute": 1.5, "source": "x"}})";
  try {
    EfficiencyTable::load(bad);
    ADD_FAILURE();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'default.gemm_compute' = 1.5"), std::string::npos) << e.what();
  }
  std::ofstream(bad) << R"({"default": {"source": "x"}, "devices": {"H100-SXM": {"gemm_speed": 0.5, "source": "y"}}})";
  EXPECT_THROW(EfficiencyTable::load(bad), core::InputError);
}

}  // namespace
}  // namespace dayzero::simulate
