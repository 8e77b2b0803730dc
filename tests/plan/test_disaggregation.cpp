// A disaggregated plan: its workers, the devices it takes, its JSON, and the errors
// that name a pool's fields.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "helpers.h"
#include "model/model.h"
#include "plan/plan_json.h"

namespace dayzero::plan {
namespace {

using testing::plan;

// 3 prefill workers of tp 8 (batch 2) and 2 decode workers of tp 2 x dp 4 (batch 64).
Plan split() {
  Plan p = plan(2, 4);
  p.workload.batch = 64;
  p.moe = {1, 8, 1};
  p.speculative = {SpecMethod::mtp, 1, {}};
  p.disaggregated = {3, 2, {1, {8, 1}, {1, 8, 1}, 2}};
  return p;
}

TEST(Disaggregation, WorkersAndDevices) {
  const Plan p = split();
  EXPECT_EQ(p.world_size(), 8);
  EXPECT_EQ(p.devices_used(), 3 * 8 + 2 * 8);
  const Plan prefill = p.prefill_worker();
  EXPECT_EQ(prefill.attention.tp, 8);
  EXPECT_EQ(prefill.attention.dp, 1);
  EXPECT_EQ(prefill.workload.batch, 2);
  EXPECT_FALSE(prefill.speculative.on());  // drafting is the decode side's
  EXPECT_FALSE(prefill.disaggregated.on());
  const Plan decode = p.decode_worker();
  EXPECT_EQ(decode.attention.dp, 4);
  EXPECT_EQ(decode.workload.batch, 64);
  EXPECT_TRUE(decode.speculative.on());
  EXPECT_FALSE(decode.disaggregated.on());
  EXPECT_EQ(decode.devices_used(), 8);
  const Plan one = plan(4);
  EXPECT_EQ(one.devices_used(), 4);
  EXPECT_EQ(one.prefill_worker().attention.tp, 4);  // one pool: the plan itself
}

TEST(Disaggregation, JsonRoundTrip) {
  const Plan p = split();
  const nlohmann::json j = plan_to_json(p);
  EXPECT_EQ(j.at("disaggregated").at("prefill_workers"), 3);
  EXPECT_EQ(j.at("disaggregated").at("prefill").at("attention").at("tp"), 8);
  const Plan back = plan_from_json(j, "split.json");
  EXPECT_EQ(plan_to_json(back), j);
  EXPECT_FALSE(plan_to_json(plan(1)).contains("disaggregated"));  // one pool writes none
}

std::string read_error(const nlohmann::json& j) {
  try {
    plan_from_json(j, "bad-split.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Disaggregation, BadJsonNamesTheField) {
  nlohmann::json j = plan_to_json(split());
  j["disaggregated"].erase("prefill");
  EXPECT_NE(read_error(j).find("'disaggregated.prefill'"), std::string::npos) << read_error(j);
  j = plan_to_json(split());
  j["disaggregated"]["decode_workers"] = 0;
  EXPECT_NE(read_error(j).find("'disaggregated.decode_workers' = 0"), std::string::npos) << read_error(j);
  j = plan_to_json(split());
  j["disaggregated"]["prefill"]["attention"]["cp"] = 2;
  EXPECT_NE(read_error(j).find("'disaggregated.prefill.attention.cp'"), std::string::npos) << read_error(j);
}

std::string validate_error(const Plan& p, uint32_t devices) {
  static const model::Model ds = model::load_model(std::string(DAYZERO_DATA_DIR) + "/models/DeepSeek-V3");
  try {
    validate_plan(p, ds, devices, "bad-split.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Disaggregation, ValidationNamesThePool) {
  EXPECT_EQ(validate_error(split(), 40), "");
  EXPECT_NE(validate_error(split(), 32).find("more devices than the cluster's 32"), std::string::npos);
  Plan p = split();
  p.disaggregated.prefill.attention.tp = 3;  // does not divide DeepSeek-V3's 128 heads
  EXPECT_NE(validate_error(p, 40).find("'disaggregated.prefill.attention.tp' = 3"), std::string::npos)
      << validate_error(p, 40);
  p = split();
  p.disaggregated.prefill.batch = 1;
  p.disaggregated.prefill.attention = {1, 8};
  EXPECT_NE(validate_error(p, 40).find("'disaggregated.prefill.batch'"), std::string::npos) << validate_error(p, 40);
  p = split();
  p.devices = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_NE(validate_error(p, 40).find("places its pools itself"), std::string::npos);
  p = split();
  p.attention.tp = 3;  // the decode worker's own fields keep their names
  EXPECT_NE(validate_error(p, 40).find("'attention.tp' = 3"), std::string::npos);
}

}  // namespace
}  // namespace dayzero::plan
