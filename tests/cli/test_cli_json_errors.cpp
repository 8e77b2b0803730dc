// Hostile config.json through the dayzero binary: one line on stderr naming the
// file, exit 1, never a crash; `check --json` prints a JSON object then too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.h"

namespace {

using dayzero::cli::testing::Result;
using dayzero::cli::testing::run;

// A model directory whose config.json is `text`.
std::filesystem::path model_dir(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_json_" + std::to_string(::getpid())) / name;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json", std::ios::binary | std::ios::trunc) << text;
  return dir;
}

void expect_one_line_error(const Result& r, const std::string& fragment) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("dayzero: error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

}  // namespace

TEST(CliJsonErrors, DeeplyNestedConfigIsAnErrorNotACrash) {
  // The probe's 121 KB file of ~52,000 '[' crashed every JSON reader.
  const auto dir = model_dir("deep", std::string(52'000, '['));
  const std::string file = (dir / "config.json").string();
  for (const char* cmd : {"inspect ", "check "})
    expect_one_line_error(run(cmd + dir.string()), file + ": JSON nested deeper than 128 levels at line 1, column 129");
}

TEST(CliJsonErrors, DuplicateKeyAndOverflowNameTheConfig) {
  const auto dup =
      model_dir("dup", "{\"architectures\": [\"LlamaForCausalLM\"],\n \"hidden_size\": 4096, \"hidden_size\": 8}");
  expect_one_line_error(
      run("inspect " + dup.string()),
      (dup / "config.json").string() + ": field 'hidden_size': key appears twice in one object (at line 2, column 23)");
  const auto big = model_dir("big", R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 1e400})");
  expect_one_line_error(run("inspect " + big.string()),
                        (big / "config.json").string() + ": field 'hidden_size' = 1e400: number out of range");
}

TEST(CliJsonErrors, CheckJsonPrintsAnErrorObject) {
  const auto dir = model_dir("broken", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": ");
  const std::string file = (dir / "config.json").string();
  const Result text = run("check " + dir.string());
  expect_one_line_error(text, file + ": not valid JSON");
  EXPECT_EQ(text.out, "");

  const Result json = run("check " + dir.string() + " --json");
  expect_one_line_error(json, file + ": not valid JSON");
  EXPECT_EQ(json.err, text.err);
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_FALSE(j.at("ok").get<bool>());
  EXPECT_EQ(j.at("error").at("file"), file);
  EXPECT_EQ("dayzero: error: " + j.at("error").at("message").get<std::string>() + "\n", json.err);
  EXPECT_NE(j.at("error").at("problem").get<std::string>().find("malformed JSON at line 1"), std::string::npos);

  // Not a model directory at all: still an object.
  const Result missing = run("check " + (dir / "nope").string() + " --json");
  EXPECT_EQ(missing.status, 1);
  EXPECT_FALSE(nlohmann::json::parse(missing.out).at("ok").get<bool>());
}

// Issue 16: `run` executed weights that disagree with their config (a hidden size
// doubled) and printed tokens; it now runs `check`'s checks first and refuses.
TEST(CliJsonErrors, RunRefusesWeightsThatDisagreeWithTheConfig) {
  const auto src = std::filesystem::path(DAYZERO_FIXTURES_DIR) / "tiny" / "llama";
  const auto dir = std::filesystem::temp_directory_path() / ("dayzero_cli_json_" + std::to_string(::getpid())) / "wide";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(src / "model.safetensors", dir / "model.safetensors");
  nlohmann::json config = nlohmann::json::parse(std::ifstream(src / "config.json"));
  config["hidden_size"] = 2 * config["hidden_size"].get<int64_t>();
  std::ofstream(dir / "config.json") << config.dump();
  const Result r = run("run --weights " + dir.string() + " --prompt-len 4 --out " + (dir / "m.json").string());
  expect_one_line_error(r, "the checkpoint does not match its config.json (tensor ");
  EXPECT_NE(r.err.find("`dayzero check " + dir.string() + "` lists every difference"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "m.json"));
}
