// The engines' captured argument lists (deploy/engine_args.h): they load, they hold
// what the project emits, and values are checked by their kind.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "deploy_fixture.h"

namespace dayzero::deploy {
namespace {

using testing::args;

TEST(EngineArgs, PinnedListsLoadWithTheirVersionAndHowTheyWereCaptured) {
  const EngineArgs v = args(plan::Engine::vllm), s = args(plan::Engine::sglang), t = args(plan::Engine::trtllm);
  EXPECT_EQ(v.version(), "0.18.0");
  EXPECT_EQ(s.version(), "0.5.8");
  EXPECT_EQ(t.version(), "1.3.0rc3");
  EXPECT_EQ(v.command(), "vllm serve");
  for (const EngineArgs* a : {&v, &s, &t}) {
    EXPECT_GT(a->flag_count(), 30u);
    EXPECT_FALSE(a->how().empty());
  }
  ASSERT_NE(v.flag("--tensor-parallel-size"), nullptr);
  EXPECT_EQ(v.flag("--tensor-parallel-size")->kind, ValueKind::integer);
  EXPECT_EQ(v.flag("--enable-expert-parallel")->kind, ValueKind::none);
  EXPECT_EQ(v.flag("--speculative-config")->kind, ValueKind::json);
  // Aliases write the same setting.
  EXPECT_EQ(v.dest_of("-tp"), v.dest_of("--tensor-parallel-size"));
  EXPECT_EQ(s.dest_of("--tp-size"), s.dest_of("--tensor-parallel-size"));
  EXPECT_EQ(s.flag("--kv-cache-dtype")->kind, ValueKind::choice);
  ASSERT_NE(t.flag("--tp_size"), nullptr);
  EXPECT_EQ(t.flag("--tp-size"), nullptr);  // click options keep their underscores
  ASSERT_NE(t.yaml_field("kv_cache_config.dtype"), nullptr);
  ASSERT_NE(t.yaml_field("enable_attention_dp"), nullptr);
  EXPECT_EQ(t.yaml_field("enable_attention_dp")->kind, ValueKind::boolean);
  EXPECT_NE(t.subcommand_flag("disaggregated", "-c"), nullptr);
  EXPECT_EQ(t.subcommand_flag("disaggregated", "--tp_size"), nullptr);
}

TEST(EngineArgs, ValuesAreCheckedByTheirKind) {
  const EngineArgs v = args(plan::Engine::vllm);
  const ArgSpec& tp = *v.flag("--tensor-parallel-size");
  EXPECT_NO_THROW(EngineArgs::check_value("--tensor-parallel-size", tp, "8"));
  for (const char* bad : {"eight", "8.5", "", "8x"})
    EXPECT_THROW(EngineArgs::check_value("--tensor-parallel-size", tp, bad), std::invalid_argument) << bad;
  const ArgSpec& util = *v.flag("--gpu-memory-utilization");
  EXPECT_NO_THROW(EngineArgs::check_value("--gpu-memory-utilization", util, "0.85"));
  EXPECT_THROW(EngineArgs::check_value("--gpu-memory-utilization", util, "most"), std::invalid_argument);
  const ArgSpec& kv = *v.flag("--kv-cache-dtype");
  EXPECT_NO_THROW(EngineArgs::check_value("--kv-cache-dtype", kv, "fp8"));
  try {
    EngineArgs::check_value("--kv-cache-dtype", kv, "fp9");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-cache-dtype: \"fp9\" is not one of auto"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(EngineArgs::check_value("--speculative-config", *v.flag("--speculative-config"), "{method: mtp"),
               std::invalid_argument);
}

TEST(EngineArgs, ABadListIsAnErrorNamingTheField) {
  const auto file = std::filesystem::temp_directory_path() / "dayzero_engine_args_bad.json";
  std::ofstream(file) << R"({"engine": "vllm", "version": "1", "command": "vllm serve", "how": "hand",
                             "flags": {"--x": {"value": "integer"}}})";
  try {
    (void)EngineArgs::load(file);
    ADD_FAILURE() << "no error";
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.field(), "flags.--x.value") << e.what();
  }
}

}  // namespace
}  // namespace dayzero::deploy
