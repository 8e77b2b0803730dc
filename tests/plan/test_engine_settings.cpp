// plan/engine_settings.h: the engine and a user's overrides of its settings, as JSON.
#include "plan/engine_settings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dayzero::plan {
namespace {

TEST(EngineSettings, ReadsEveryFieldAndLaterSettingsWin) {
  EngineSettings file = engine_settings_from_json(
      nlohmann::json::parse(R"({"name": "sglang", "max_running": 4, "token_budget": 100, "memory_fraction": 0.6,
                                "policy": "mixed", "chunked_prefill": false, "prefix_caching": true,
                                "overlap_scheduling": false, "recv_interval_steps": 10, "kv_block_tokens": 64,
                                "cuda_graph_max_batch": 0, "adp_balance": true, "adp_timeout_iters": 60,
                                "adp_batching_wait_iters": 0, "batch_wait_timeout_iters": 40,
                                "batch_wait_max_tokens_ratio": 0.8, "separate_activation_quant": false})"),
      "engine.json");
  EXPECT_EQ(file.engine, Engine::sglang);
  EXPECT_EQ(file.policy, PrefillPolicy::mixed);
  EXPECT_EQ(file.chunked_prefill, false);
  EXPECT_EQ(file.kv_block_tokens, 64);
  EXPECT_EQ(file.cuda_graph_max_batch, 0);  // graphs off: set, not absent
  EngineSettings flags;
  flags.max_running = 16;
  flags.engine = Engine::vllm;
  file.merge(flags);
  EXPECT_EQ(file.max_running, 16);
  EXPECT_EQ(file.engine, Engine::vllm);
  EXPECT_EQ(file.token_budget, 100);
  EXPECT_FALSE(file.empty());
  EXPECT_TRUE(EngineSettings{}.empty());
  const EngineSettings back = engine_settings_from_json(engine_settings_to_json(file), "round trip");
  EXPECT_EQ(back.max_running, 16);
  EXPECT_EQ(back.engine, Engine::vllm);
  EXPECT_EQ(back.recv_interval_steps, 10);
  EXPECT_EQ(back.cuda_graph_max_batch, 0);
  EXPECT_EQ(back.separate_activation_quant, false);  // set to false: kept, not absent
  EXPECT_EQ(back.adp_balance, true);
  EXPECT_EQ(back.adp_timeout_iters, 60);
  EXPECT_EQ(back.adp_batching_wait_iters, 0);  // no wait: set, not absent
  EXPECT_EQ(back.batch_wait_timeout_iters, 40);
  EXPECT_DOUBLE_EQ(*back.batch_wait_max_tokens_ratio, 0.8);
  EXPECT_DOUBLE_EQ(*back.memory_fraction, 0.6);
  EXPECT_TRUE(engine_settings_from_json(nlohmann::json::object(), "empty").empty());
}

// Each bad file is an error naming the file, the field (with the caller's prefix) and
// the value.
TEST(EngineSettings, BadFieldsAreErrorsNamingFileFieldAndValue) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"max_runing": 4})", "engine.max_runing"},
      {R"({"memory_fraction": 1.5})", "engine.memory_fraction"},
      {R"({"memory_fraction": 0})", "engine.memory_fraction"},
      {R"({"policy": "fifo"})", "fifo"},
      {R"({"name": "tgi"})", "tgi"},
      {R"({"token_budget": 0})", "engine.token_budget"},
      {R"({"token_budget": 99999999999})", "engine.token_budget"},
      {R"({"chunked_prefill": "yes"})", "engine.chunked_prefill"},
      {R"({"recv_interval_steps": 2.5})", "engine.recv_interval_steps"},
      {R"({"cuda_graph_max_batch": -1})", "engine.cuda_graph_max_batch"},
      {R"({"adp_timeout_iters": -5})", "engine.adp_timeout_iters"},
      {R"({"adp_balance": 1})", "engine.adp_balance"},
      {R"({"batch_wait_max_tokens_ratio": 1.5})", "engine.batch_wait_max_tokens_ratio"},
      {R"({"batch_wait_max_tokens_ratio": -0.1})", "engine.batch_wait_max_tokens_ratio"},
      {R"({"batch_wait_timeout_iters": -1})", "engine.batch_wait_timeout_iters"},
  };
  for (const auto& [text, named] : cases) {
    try {
      engine_settings_from_json(nlohmann::json::parse(text), "scenario.json", "engine.");
      ADD_FAILURE() << text << " was accepted";
    } catch (const core::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("scenario.json"), std::string::npos) << what;
      EXPECT_NE(what.find(named), std::string::npos) << what;
    }
  }
  EXPECT_THROW(engine_settings_from_json(nlohmann::json::parse("[1]"), "engine.json"), core::InputError);
  EXPECT_THROW(load_engine_settings("/nonexistent/engine.json"), core::InputError);
}

}  // namespace
}  // namespace dayzero::plan
