// Scenario files as the search reads them: every bad field is an error naming the file,
// the field and the value, sizes are bounded as read, and what a scenario sets (the
// engine, speculative decoding) reaches every plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "search/search.h"
#include "search/session.h"
#include "search_helpers.h"

namespace dayzero::search {
namespace {

using testing::load;
using testing::Loaded;
using testing::write_scenario;

std::string scenario_error(const std::string& text) {
  try {
    load_scenario(write_scenario("bad", text));
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

// Issue 16 (found while fuzzing): search.top is kept in an int, and 2^32 + 10 was read as
// 10 (the check of at most 1000 came after the narrowing). It is now bounded as read.
TEST(Scenario, TopIsNotNarrowedSilently) {
  EXPECT_NE(scenario_error(R"({"schema_version": 1, "model": "models/Llama-3.1-8B", "cluster": "clusters/h100x8.json",
      "workload": {"input_len": 10, "output_len": 5, "concurrency": 4}, "search": {"top": 4294967306}})")
                .find("'search.top' = 4294967306: must be at most 1000"),
            std::string::npos);
}

TEST(Scenario, BadScenariosNameTheField) {
  const std::string ok_head =
      R"({"schema_version": 1, "model": "models/Llama-3.1-8B", "cluster": "clusters/h100x8.json",)";
  EXPECT_NE(scenario_error(ok_head + R"("workload": {"input_len": 10, "output_len": 5, "concurrency": 4}, "speed": 1})")
                .find("field 'speed'"),
            std::string::npos);
  EXPECT_NE(scenario_error(ok_head + R"("workload": {"input_len": 10, "output_len": 5, "concurrency": 4, "qps": 3}})")
                .find("field 'workload.qps'"),
            std::string::npos);
  EXPECT_NE(scenario_error(ok_head + R"("workload": {"input_len": 0, "output_len": 5, "concurrency": 4}})")
                .find("'workload.input_len' = 0: must be positive"),
            std::string::npos);
  EXPECT_NE(
      scenario_error(ok_head +
                     R"("workload": {"input_len": 10, "output_len": 5, "concurrency": 4}, "sla": {"max_tpot_s": -1}})")
          .find("sla.max_tpot_s"),
      std::string::npos);
  EXPECT_NE(
      scenario_error(ok_head +
                     R"("workload": {"input_len": 10, "output_len": 5, "concurrency": 4}, "objective": "cheapest"})")
          .find("field 'objective'"),
      std::string::npos);
  EXPECT_NE(
      scenario_error(
          ok_head +
          R"("workload": {"input_len": 10, "output_len": 5, "concurrency": 4}, "search": {"weight_dtypes": ["fp3"]}})")
          .find("search.weight_dtypes"),
      std::string::npos);
  EXPECT_NE(scenario_error(R"({"schema_version": 1, "model": "models/NoSuchModel", "cluster": "clusters/h100x8.json",
      "workload": {"input_len": 10, "output_len": 5, "concurrency": 4}})")
                .find("field 'model'"),
            std::string::npos);
  EXPECT_NE(scenario_error(R"({"schema_version": 1, "model": "models/Llama-3.1-8B", "cluster": "clusters/nope.json",
      "workload": {"input_len": 10, "output_len": 5, "concurrency": 4}})")
                .find("field 'cluster'"),
            std::string::npos);
  EXPECT_NE(scenario_error(R"({"schema_version": 1, "model": )").find("not valid JSON"), std::string::npos);
}

// The serving engine and its settings: an optional "engine" object, read whole at
// load; a bad one names the field.
TEST(Scenario, EngineSettingsAreReadAndChecked) {
  const std::string head = R"({"schema_version": 1, "model": "models/Llama-3.1-8B", "cluster": "clusters/h100x8.json",
      "workload": {"input_len": 10, "output_len": 5, "concurrency": 4},)";
  const Scenario s = load_scenario(
      write_scenario("engine", head + R"("engine": {"name": "sglang", "max_running": 8, "policy": "mixed"}})"));
  EXPECT_EQ(s.engine.engine, plan::Engine::sglang);
  EXPECT_EQ(s.engine.max_running, 8);
  EXPECT_EQ(s.engine.policy, plan::PrefillPolicy::mixed);
  EXPECT_FALSE(s.engine.token_budget.has_value());
  EXPECT_TRUE(
      load_scenario(write_scenario("no_engine", head + R"("objective": "throughput_per_device"})")).engine.empty());
  EXPECT_NE(scenario_error(head + R"("engine": {"name": "tgi"}})")
                .find("field 'engine.name' = tgi: one of vllm, sglang, trtllm"),
            std::string::npos);
  EXPECT_NE(scenario_error(head + R"("engine": {"max_runing": 8}})").find("engine.max_runing"), std::string::npos);
  EXPECT_NE(scenario_error(head + R"("engine": "sglang"})").find("field 'engine'"), std::string::npos);
}

// A scenario's speculative decoding reaches every plan its search makes, and its
// TPOT; MTP on a model without an MTP layer is an error naming the scenario and field.
TEST(Scenario, SpeculativeDecodingReachesEveryPlan) {
  const std::string head = R"({"schema_version": 1, "model": "models/Llama-3.1-8B", "cluster": "clusters/h100x8.json",
      "workload": {"input_len": 1000, "output_len": 200, "concurrency": 8},)";
  const Loaded plain = load(write_scenario("plain", head + R"("objective": "throughput_per_device"})"));
  const Loaded eagle = load(
      write_scenario("eagle", head + R"("speculative": {"method": "eagle", "draft_tokens": 3, "acceptance": [0.8]}})"));
  EXPECT_EQ(eagle.scenario.speculative.draft_tokens, 3);
  const SearchResult a = run_search(plain.scenario, plain.model, plain.cluster, {});
  // The compact space keeps the scenario's setting for every plan.
  Scenario compact = eagle.scenario;
  compact.space.kind = SpaceKind::compact;
  const SearchResult b = run_search(compact, eagle.model, eagle.cluster, {});
  ASSERT_EQ(b.candidates, run_search(
                              [&] {
                                Scenario c = plain.scenario;
                                c.space.kind = SpaceKind::compact;
                                return c;
                              }(),
                              plain.model, plain.cluster, {})
                              .candidates);
  for (const auto& e : b.all) {
    EXPECT_EQ(e.plan.speculative.method, plan::SpecMethod::eagle);
    EXPECT_EQ(e.plan.speculative.draft_tokens, 3);
  }
  ASSERT_FALSE(b.top.empty());
  EXPECT_LT(b.all[b.top.front()].prediction.tpot_s, a.all[a.top.front()].prediction.tpot_s);
  // The full space also tries plain decoding and every shorter draft: four settings.
  const SearchResult full = run_search(eagle.scenario, eagle.model, eagle.cluster, {});
  EXPECT_EQ(full.candidates, 4 * a.candidates);
  std::set<int> drafts;
  for (const auto& e : full.all) drafts.insert(e.plan.speculative.on() ? e.plan.speculative.draft_tokens : 0);
  EXPECT_EQ(drafts, (std::set<int>{0, 1, 2, 3}));
  // search.draft_tokens narrows them; drafts without a method are refused.
  const Loaded two =
      load(write_scenario("two", head + R"("speculative": {"method": "eagle", "draft_tokens": 3, "acceptance": [0.8]},
          "search": {"draft_tokens": [2]}})"));
  for (const auto& e : run_search(two.scenario, two.model, two.cluster, {}).all)
    EXPECT_EQ(e.plan.speculative.draft_tokens, 2);
  EXPECT_THROW(load(write_scenario("nomethod", head + R"("search": {"draft_tokens": [2]}})")), core::InputError);
  const auto file = write_scenario("mtp", head + R"("speculative": {"method": "mtp"}})");
  const Loaded mtp = load(file);
  try {
    (void)run_search(mtp.scenario, mtp.model, mtp.cluster, {});
    ADD_FAILURE() << "no error";
  } catch (const core::InputError& err) {
    EXPECT_NE(std::string(err.what()).find(file.string() + ": field 'speculative.method'"), std::string::npos)
        << err.what();
  }
}

// Issue 16: a scenario with output_len 2^62 gave kv_cache_bytes = INT64_MIN and fitting
// plans. Lengths are bounded when read; within the bounds, run_search checks that the
// largest candidate's sizes fit in 64 bits before simulating any.
TEST(Scenario, WorkloadSizesAreBoundedAndChecked) {
  const std::string head =
      R"({"schema_version": 1, "model": "models/Llama-3.1-8B", "cluster": "clusters/h100x8.json",)";
  const std::string e =
      scenario_error(head + R"("workload": {"input_len": 10, "output_len": 4611686018427387904, "concurrency": 4}})");
  EXPECT_NE(e.find("field 'workload.output_len' = 4611686018427387904: must be at most 1073741824"), std::string::npos)
      << e;
  const auto file = write_scenario("huge", head + R"("workload": {"input_len": 1073741824, "output_len": 1073741824,
      "concurrency": 67108864}})");
  const Loaded l = load(file);
  try {
    (void)run_search(l.scenario, l.model, l.cluster, {});
    ADD_FAILURE() << "no error";
  } catch (const core::InputError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find(file.string() + ": field 'workload' = batch 67108864, input_len 1073741824"), std::string::npos)
        << what;
    EXPECT_NE(what.find("overflows 64 bits"), std::string::npos) << what;
  }
}

// Issue 16: a scenario whose space holds ~10^12 plans (1,024 batches x 1,024
// resident-expert fractions x every layout of 512 GPUs x precisions) used to be
// materialized plan by plan; the search now counts the space first and refuses it,
// saying how many plans it holds. Lists are bounded and free of repeats.
TEST(Scenario, HugeSearchSpaceIsRefusedBeforeAnyPlanIsBuilt) {
  std::string batches, fractions;
  for (int i = 1; i <= 1024; ++i) {
    const char* sep = i > 1 ? ", " : "";
    batches.append(sep).append(std::to_string(i));
    fractions.append(sep).append(std::to_string(i / 1024.0));
  }
  const std::string head = R"({"schema_version": 1, "model": "models/DeepSeek-V3", "cluster": "clusters/h200-64x8.json",
      "workload": {"input_len": 1024, "output_len": 128, "concurrency": 64}, "search": )";
  const auto file = write_scenario(
      "space", head + R"({"batches": [)" + batches + R"(], "resident_expert_fractions": [)" + fractions + "]}}");
  const Loaded l = load(file);
  try {
    (void)run_search(l.scenario, l.model, l.cluster, {});
    ADD_FAILURE() << "no error";
  } catch (const core::InputError& err) {
    const std::string what = err.what();
    EXPECT_EQ(err.field(), "search");
    EXPECT_NE(what.find("the space holds more plans than the search considers (100000000)"), std::string::npos) << what;
    const int64_t plans = std::stoll(what.substr(what.find("= ") + 2));
    EXPECT_GT(plans, 1'000'000'000) << what;
  }
  std::string long_list = "1";
  for (int i = 2; i <= 1025; ++i) long_list += ", " + std::to_string(i);
  EXPECT_NE(scenario_error(head + R"({"batches": [)" + long_list + "]}}").find("1025 entries: at most 1024"),
            std::string::npos);
  EXPECT_NE(scenario_error(head + R"({"tp": [1, 2, 1]}})").find("'search.tp' = 1: listed twice"), std::string::npos);
  EXPECT_NE(scenario_error(head + R"({"kv_dtypes": ["fp8", "fp8"]}})").find("\"fp8\": listed twice"),
            std::string::npos);
  // fp32 KV is the executor's reference: no engine serves it, so the search does not try it.
  EXPECT_NE(scenario_error(head + R"({"kv_dtypes": ["fp32"]}})").find("'search.kv_dtypes' = \"fp32\""),
            std::string::npos)
      << scenario_error(head + R"({"kv_dtypes": ["fp32"]}})");
  EXPECT_NE(scenario_error(head + R"({"token_budgets": [0]}})").find("'search.token_budgets'"), std::string::npos);
  EXPECT_NE(scenario_error(head + R"({"token_budgets": [4096, 4096]}})").find("listed twice"), std::string::npos);
}

}  // namespace
}  // namespace dayzero::search
