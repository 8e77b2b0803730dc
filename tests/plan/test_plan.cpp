// Plan JSON, rank arithmetic for every rank, and bad plans.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "helpers.h"
#include "model/model.h"
#include "plan/plan_json.h"

namespace dayzero::plan {
namespace {

model::Model load_model(const std::string& name) {
  return model::load_model(std::string(DAYZERO_DATA_DIR) + "/models/" + name);
}

using testing::plan;

TEST(Plan, RankArithmeticForEveryRank) {
  // pp 2 x (attention tp 4 x dp 2) = 16 ranks; MoE: tp 2 x ep 2 x dp 2 on each stage.
  Plan p = plan(4, 2, 2);
  p.moe = {2, 2, 2};
  ASSERT_EQ(p.world_size(), 16);
  for (int r = 0; r < 16; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(p.stage_of(r), r / 8);
    EXPECT_EQ(p.attn_tp_index(r), r % 4);
    EXPECT_EQ(p.attn_dp_index(r), (r % 8) / 4);
    const auto tp = p.attn_tp_group(r);
    ASSERT_EQ(tp.size(), 4u);
    EXPECT_EQ(tp[0], r - r % 4);
    EXPECT_EQ(tp[3], r - r % 4 + 3);
    const auto ep = p.ep_group(r);
    ASSERT_EQ(ep.size(), 2u);
    // Within a stage: moe tp innermost (stride 1), ep next (stride 2), moe dp outermost (stride 4).
    const int local = r % 8, base = r - local;
    EXPECT_EQ(ep[0], base + (local / 4) * 4 + local % 2);
    EXPECT_EQ(ep[1], ep[0] + 2);
    EXPECT_NE(std::find(ep.begin(), ep.end(), r), ep.end());
    const auto mtp = p.moe_tp_group(r);
    EXPECT_EQ(mtp[0], r - r % 2);
  }
  EXPECT_EQ(p.layers_per_stage(61), (std::vector<int64_t>{31, 30}));
}

TEST(Plan, JsonRoundTrip) {
  Plan p = plan(2, 4, 1, 8);
  p.stage_layers = {61};
  p.devices = {7, 6, 5, 4, 3, 2, 1, 0};
  p.dtypes.experts = model::WeightPrecision::int4;
  p.offload.resident_experts = 32;
  p.workload.routing_zipf_s = 0.8;
  p.workload.expert_counts = {1, 2, 3};
  p.comm_overlap = 0.5;
  p.moe.redundant_experts = 16;
  const nlohmann::json j = plan_to_json(p);
  const Plan back = plan_from_json(j, "rt.json");
  EXPECT_EQ(plan_to_json(back), j);
  EXPECT_EQ(back.devices, p.devices);
  EXPECT_EQ(back.moe.redundant_experts, 16);
  EXPECT_EQ(back.workload.expert_counts, p.workload.expert_counts);
}

// Every weight precision by its name, in every part, through JSON and back.
TEST(Plan, EveryWeightPrecisionRoundTrips) {
  for (model::WeightPrecision w : model::kAllPrecisions) {
    SCOPED_TRACE(std::string(model::precision_name(w)));
    Plan p = plan(1);
    p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.experts = p.dtypes.embedding = w;
    const nlohmann::json j = plan_to_json(p);
    EXPECT_EQ(j["dtypes"]["experts"], std::string(model::precision_name(w)));
    const Plan back = plan_from_json(j, "rt.json");
    EXPECT_EQ(back.dtypes.attention, w);
    EXPECT_EQ(back.dtypes.dense_mlp, w);
    EXPECT_EQ(back.dtypes.experts, w);
    EXPECT_EQ(back.dtypes.embedding, w);
  }
  // The names a plan file uses for the new precisions.
  nlohmann::json j = plan_to_json(plan(1));
  j["dtypes"]["attention"] = "int8";
  j["dtypes"]["dense_mlp"] = "int8_w8a16";
  j["dtypes"]["experts"] = "nvfp4";
  const Plan p = plan_from_json(j, "names.json");
  EXPECT_EQ(p.dtypes.attention, model::WeightPrecision::int8);
  EXPECT_EQ(p.dtypes.dense_mlp, model::WeightPrecision::int8_w8a16);
  EXPECT_EQ(p.dtypes.experts, model::WeightPrecision::nvfp4);
}

std::string plan_error(nlohmann::json j) {
  try {
    plan_from_json(j, "bad-plan.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Plan, UnknownFieldsAndVersionsRejected) {
  nlohmann::json j = plan_to_json(plan(1));
  j["tensor_parallel"] = 2;
  EXPECT_NE(plan_error(j).find("field 'tensor_parallel'"), std::string::npos);
  j = plan_to_json(plan(1));
  j["attention"]["pp"] = 2;
  EXPECT_NE(plan_error(j).find("field 'attention.pp'"), std::string::npos);
  j = plan_to_json(plan(1));
  j["schema_version"] = 99;
  EXPECT_NE(plan_error(j).find("unsupported plan schema"), std::string::npos);
  j = plan_to_json(plan(1));
  j["attention"]["tp"] = 0;
  EXPECT_NE(plan_error(j).find("'attention.tp' = 0: must be positive"), std::string::npos) << plan_error(j);
  j = plan_to_json(plan(1));
  j["workload"]["prefix_hit_rate"] = 1.5;
  EXPECT_NE(plan_error(j).find("prefix_hit_rate"), std::string::npos);
}

std::string validate_error(const Plan& p, const model::Model& m, uint32_t devices) {
  try {
    validate_plan(p, m, devices, "bad-plan.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Plan, BadPlansNameTheField) {
  const auto llama = load_model("Llama-3.1-8B");
  const auto ds = load_model("DeepSeek-V3");
  // TP that does not divide the heads (32) nor relate to the 8 KV heads.
  EXPECT_NE(
      validate_error(plan(3), llama, 8).find("'attention.tp' = 3: does not divide the model's 32 attention heads"),
      std::string::npos);
  // More ranks than devices.
  EXPECT_NE(validate_error(plan(8, 2), llama, 8).find("needs more ranks than the cluster's 8 devices"),
            std::string::npos);
  // Unknown dtype: dtypes are enums, so a plan file's unknown name is refused when it is read.
  nlohmann::json j = plan_to_json(plan(1));
  j["dtypes"]["attention"] = "fp6";
  EXPECT_NE(plan_error(j).find("'dtypes.attention' = \"fp6\": unknown dtype"), std::string::npos) << plan_error(j);
  j = plan_to_json(plan(1));
  j["dtypes"]["kv_cache"] = "int4";
  EXPECT_NE(plan_error(j).find("dtypes.kv_cache"), std::string::npos);
  // fp32 (the executor's full-precision reference) is a plan's, read back as written.
  j["dtypes"]["kv_cache"] = "fp32";
  EXPECT_EQ(plan_from_json(j, "p.json").dtypes.kv_cache, KvDtype::fp32);
  EXPECT_EQ(kv_elem_bytes(KvDtype::fp32), 4);
  Plan p = plan(1);
  // EP on a dense model; EP that does not divide 256 experts; MoE ranks != attention ranks.
  EXPECT_NE(validate_error(plan(1, 2, 1, 2), llama, 8).find("the model has no experts"), std::string::npos);
  EXPECT_NE(validate_error(plan(1, 6, 1, 6), ds, 8).find("'moe.ep' = 6: does not divide the 256 routed experts"),
            std::string::npos);
  p = plan(1, 8, 1, 8);
  p.moe.dp = 2;
  EXPECT_NE(validate_error(p, ds, 8).find("must equal attention tp x dp = 8"), std::string::npos);
  // Stages that do not add up; more stages than layers.
  p = plan(1, 1, 2);
  p.workload.batch = 1;
  p.stage_layers = {30, 30};
  EXPECT_NE(validate_error(p, ds, 8).find("must equal the 61 decoder layers"), std::string::npos);
  EXPECT_NE(validate_error(plan(1, 1, 64), ds, 64).find("exceeds the 61 decoder layers"), std::string::npos);
  // Devices: duplicates, out of range.
  p = plan(2);
  p.devices = {3, 3};
  EXPECT_NE(validate_error(p, llama, 8).find("is used by two ranks"), std::string::npos);
  p.devices = {1, 9};
  EXPECT_NE(validate_error(p, llama, 8).find("'devices' = 9"), std::string::npos);
  // Batch below the number of replicas.
  p = plan(1, 4);
  p.workload.batch = 2;
  EXPECT_NE(validate_error(p, llama, 8).find("'workload.batch' = 2"), std::string::npos);
}

// Issue 16: input_len 10^15 gave kv_cache_bytes = INT64_MIN and "fits": true. Lengths and
// batches are bounded when read; products within the bounds are checked by validate_plan.
TEST(Plan, WorkloadsAboveTheirBoundsAreErrors) {
  nlohmann::json j = plan_to_json(plan(1));
  j["workload"]["input_len"] = 1'000'000'000'000'000;
  EXPECT_NE(plan_error(j).find("'workload.input_len' = 1000000000000000: must be at most 1073741824"),
            std::string::npos)
      << plan_error(j);
  j = plan_to_json(plan(1));
  j["workload"]["output_len"] = int64_t{1} << 62;
  EXPECT_NE(plan_error(j).find("'workload.output_len' = 4611686018427387904: must be at most"), std::string::npos);
  j = plan_to_json(plan(1));
  j["workload"]["batch"] = int64_t{1} << 40;
  EXPECT_NE(plan_error(j).find("'workload.batch' = 1099511627776: must be at most 67108864"), std::string::npos);
  j = plan_to_json(plan(1));
  j["kv_block_tokens"] = int64_t{1} << 40;
  EXPECT_NE(plan_error(j).find("'kv_block_tokens'"), std::string::npos);
  j = plan_to_json(plan(1));
  j["stage_layers"] = {int64_t{1} << 62, int64_t{1} << 62, int64_t{1} << 62};  // summed: overflowed
  EXPECT_NE(plan_error(j).find("'stage_layers' = 4611686018427387904: must be at most 4096"), std::string::npos);
  // Each factor below a million, the world size 10^18: no longer an int overflow.
  j = plan_to_json(plan(1));
  j["pp"] = 1'000'000;
  j["attention"]["tp"] = 1'000'000;
  j["attention"]["dp"] = 1'000'000;
  EXPECT_NE(plan_error(j).find("1000000000000000000 ranks is implausibly large"), std::string::npos) << plan_error(j);
  // A device id past 32 bits was clamped to 4294967295; now it is refused.
  j = plan_to_json(plan(1));
  j["devices"] = {int64_t{1} << 32};
  EXPECT_NE(plan_error(j).find("'devices' = 4294967296: must be at most 4294967295"), std::string::npos)
      << plan_error(j);
}

TEST(Plan, KvCacheBeyond64BitsIsAnErrorNotANegativeSize) {
  const auto llama = load_model("Llama-3.1-8B");
  Plan p = plan(1);
  // 2^30 + 2^30 tokens x 2^26 sequences x 128 KiB per token (32 layers x 8 KV heads x
  // 128 x 2 x 2 B) = 2^79 bytes.
  p.workload.input_len = p.workload.output_len = kMaxSequenceTokens;
  p.workload.batch = kMaxBatch;
  const std::string e = validate_error(p, llama, 8);
  EXPECT_NE(e.find("bad-plan.json: field 'workload' = batch 67108864, input_len 1073741824, output_len 1073741824: "
                   "the KV cache of the batch at full length overflows 64 bits"),
            std::string::npos)
      << e;
  p.workload.batch = 1;  // 2^31 tokens x 128 KiB = 2^48 bytes: a size, which simply does not fit
  EXPECT_EQ(validate_error(p, llama, 8), "");
}

TEST(Plan, SaveWritesAtomically) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_plan_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "plan.json";
  save_plan(file, plan(2));
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".tmp"));
  EXPECT_EQ(load_plan(file).attention.tp, 2);
}

}  // namespace
}  // namespace dayzero::plan
