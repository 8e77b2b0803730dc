// serve/engine_settings.h: a user's overrides of an engine profile, from JSON or flags.
#include "serve/engine_settings.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dayzero::serve {
namespace {

TEST(EngineSettings, SetFieldsReplaceTheDefaultsAndTheRestStay) {
  const EngineProfile d = default_profile(Engine::sglang);
  const EngineSettings s = engine_settings_from_json(
      nlohmann::json::parse(R"({"token_budget": 4096, "max_running": 8, "memory_fraction": 0.6,
                                "policy": "mixed", "prefix_caching": false, "recv_interval_steps": 10})"),
      "engine.json");
  const EngineProfile p = apply(d, s);
  EXPECT_EQ(p.token_budget, 4096);
  EXPECT_EQ(p.memory.step_tokens, 4096);  // the engine profiles its activations with its largest step
  EXPECT_EQ(p.max_running, 8);
  EXPECT_EQ(p.memory.logit_rows, 8);  // at most the running sequences are sampled
  EXPECT_DOUBLE_EQ(p.memory.memory_fraction, 0.6);
  EXPECT_EQ(p.policy, PrefillPolicy::mixed);
  EXPECT_FALSE(p.prefix_caching);
  EXPECT_EQ(p.recv_interval_steps, 10);
  EXPECT_EQ(p.chunked_prefill, d.chunked_prefill);  // not set: the default
  EXPECT_EQ(p.kv_block_tokens, d.kv_block_tokens);
  EXPECT_EQ(p.overlap_scheduling, d.overlap_scheduling);
  // Nothing set: the profile as it was.
  const EngineProfile same = apply(d, EngineSettings{});
  EXPECT_EQ(same.token_budget, d.token_budget);
  EXPECT_EQ(same.memory.step_tokens, d.memory.step_tokens);
  EXPECT_EQ(same.max_running, d.max_running);
}

TEST(EngineSettings, LaterSettingsWinAndJsonRoundTrips) {
  EngineSettings file =
      engine_settings_from_json(nlohmann::json::parse(R"({"max_running": 4, "token_budget": 100})"), "engine.json");
  EngineSettings flags;
  flags.max_running = 16;
  file.merge(flags);
  EXPECT_EQ(file.max_running, 16);
  EXPECT_EQ(file.token_budget, 100);
  EXPECT_FALSE(file.empty());
  EXPECT_TRUE(EngineSettings{}.empty());
  const EngineSettings back = engine_settings_from_json(engine_settings_to_json(file), "round trip");
  EXPECT_EQ(back.max_running, 16);
  EXPECT_EQ(back.token_budget, 100);
  EXPECT_FALSE(back.policy.has_value());
}

// Each bad file is an error naming the file, the field and the value.
TEST(EngineSettings, BadFieldsAreErrorsNamingFileFieldAndValue) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"max_runing": 4})", "max_runing"},
      {R"({"memory_fraction": 1.5})", "memory_fraction"},
      {R"({"memory_fraction": 0})", "memory_fraction"},
      {R"({"policy": "fifo"})", "fifo"},
      {R"({"token_budget": 0})", "token_budget"},
      {R"({"token_budget": 99999999999})", "token_budget"},
      {R"({"chunked_prefill": "yes"})", "chunked_prefill"},
      {R"({"recv_interval_steps": 2.5})", "recv_interval_steps"},
  };
  for (const auto& [text, named] : cases) {
    try {
      engine_settings_from_json(nlohmann::json::parse(text), "engine.json");
      ADD_FAILURE() << text << " was accepted";
    } catch (const core::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("engine.json"), std::string::npos) << what;
      EXPECT_NE(what.find(named), std::string::npos) << what;
    }
  }
  EXPECT_THROW(engine_settings_from_json(nlohmann::json::parse("[1]"), "engine.json"), core::InputError);
}

}  // namespace
}  // namespace dayzero::serve
