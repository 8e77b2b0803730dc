// plan/speculative.h: speculative decoding as a Plan describes it, its expected
// tokens per step by hand, and its JSON (in a plan file and alone).
#include "plan/speculative.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "plan/plan_json.h"

namespace dayzero::plan {
namespace {

// Three drafts accepted with 0.8, then 0.5 (repeated): 1 + 0.8 + 0.8 x 0.5 + 0.8 x
// 0.5 x 0.5 = 2.4 tokens per step; all accepted: 4; none: 1.
TEST(Speculative, ExpectedTokensPerStepByHand) {
  SpeculativeDecoding s{SpecMethod::eagle, 3, {0.8, 0.5}};
  EXPECT_DOUBLE_EQ(s.expected_tokens_per_step(), 2.4);
  EXPECT_EQ(s.verify_width(), 4);
  EXPECT_DOUBLE_EQ(s.acceptance_at(2), 0.5);
  EXPECT_DOUBLE_EQ((SpeculativeDecoding{SpecMethod::mtp, 3, {1.0}}.expected_tokens_per_step()), 4);
  EXPECT_DOUBLE_EQ((SpeculativeDecoding{SpecMethod::mtp, 3, {0.0}}.expected_tokens_per_step()), 1);
  // MTP without rates: the DeepSeek-V3 report's 85 % for the first draft.
  EXPECT_DOUBLE_EQ((SpeculativeDecoding{SpecMethod::mtp, 1, {}}.expected_tokens_per_step()), 1.85);
  EXPECT_EQ(SpeculativeDecoding{}.verify_width(), 1);
  EXPECT_DOUBLE_EQ(SpeculativeDecoding{}.expected_tokens_per_step(), 1);
}

TEST(Speculative, RoundTripsThroughAPlanFile) {
  Plan p;
  p.speculative = {SpecMethod::mtp, 2, {0.9, 0.6}};
  const Plan back = plan_from_json(plan_to_json(p), "round trip");
  EXPECT_EQ(back.speculative.method, SpecMethod::mtp);
  EXPECT_EQ(back.speculative.draft_tokens, 2);
  EXPECT_EQ(back.speculative.acceptance, (std::vector<double>{0.9, 0.6}));
  EXPECT_FALSE(plan_from_json(plan_to_json(Plan{}), "plain").speculative.on());
  EXPECT_FALSE(plan_to_json(Plan{}).contains("speculative"));  // plans without it stay as they were
}

TEST(Speculative, BadSettingsAreErrorsNamingFileFieldAndValue) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"method": "medusa"})", "medusa"},
      {R"({"method": "mtp", "draft_tokens": 0})", "speculative.draft_tokens"},
      {R"({"method": "mtp", "draft_tokens": 17})", "speculative.draft_tokens"},
      {R"({"method": "mtp", "acceptance": [1.2]})", "speculative.acceptance"},
      {R"({"method": "mtp", "acceptance": [-0.1]})", "speculative.acceptance"},
      {R"({"method": "mtp", "draft_tokens": 1, "acceptance": [0.9, 0.8]})", "speculative.acceptance"},
      {R"({"method": "eagle", "draft_tokens": 2})", "speculative.method"},
      {R"({"draft_tokens": 2})", "speculative.draft_tokens"},
      {R"({"method": "mtp", "acceptence": [0.9]})", "speculative.acceptence"},
  };
  for (const auto& [text, named] : cases) {
    try {
      speculative_from_json(nlohmann::json::parse(text), "plan.json", "speculative");
      ADD_FAILURE() << text << " was accepted";
    } catch (const core::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("plan.json"), std::string::npos) << what;
      EXPECT_NE(what.find(named), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace dayzero::plan
