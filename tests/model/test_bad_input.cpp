// Bad config.json input: every case is a core::InputError whose one-line message names
// the file, the field and the value, never a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/model.h"

using namespace dayzero::model;
namespace core = dayzero::core;
using nlohmann::json;

namespace {

json base_config() {
  std::ifstream in(std::string(DAYZERO_DATA_DIR) + "/models/Llama-3.1-8B/config.json");
  return json::parse(in);
}

json moe_config() {
  std::ifstream in(std::string(DAYZERO_DATA_DIR) + "/models/DeepSeek-V3/config.json");
  return json::parse(in);
}

// Parses `text` as file "bad.json"; expects a core::InputError naming the field and
// mentioning each of `fragments`. Returns the message.
std::string expect_error(const std::string& text, const std::string& field,
                         std::initializer_list<const char*> fragments = {}) {
  try {
    build_model(parse_config(text, "bad.json"));
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.field(), field) << msg;
    EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
    if (!field.empty()) {
      EXPECT_NE(msg.find("'" + field + "'"), std::string::npos) << msg;
    }
    for (const char* f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << msg << " lacks " << f;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    return msg;
  }
  ADD_FAILURE() << "no core::InputError for field " << field;
  return {};
}

std::string with(json j, const std::string& key, json value) {
  j[key] = std::move(value);
  return j.dump();
}

std::string without(json j, const std::string& key) {
  j.erase(key);
  return j.dump();
}

}  // namespace

TEST(BadInput, NotJson) { expect_error("this is not json", "", {"not valid JSON"}); }

TEST(BadInput, TruncatedJson) {
  const std::string text = base_config().dump(2);
  expect_error(text.substr(0, text.size() / 2), "", {"not valid JSON"});
}

TEST(BadInput, TopLevelNotAnObject) { expect_error("[1, 2, 3]", "", {"expected a JSON object"}); }

TEST(BadInput, MissingRequiredField) {
  expect_error(without(base_config(), "hidden_size"), "hidden_size", {"missing"});
  expect_error(without(base_config(), "num_hidden_layers"), "num_hidden_layers", {"missing"});
  expect_error(without(moe_config(), "kv_lora_rank"), "kv_lora_rank", {"missing"});
}

TEST(BadInput, WrongType) {
  expect_error(with(base_config(), "hidden_size", "4096"), "hidden_size", {"\"4096\"", "expected an integer"});
  expect_error(with(base_config(), "num_attention_heads", 32.5), "num_attention_heads", {"32.5"});
  expect_error(with(base_config(), "tie_word_embeddings", "no"), "tie_word_embeddings", {"expected true or false"});
  expect_error(with(base_config(), "architectures", "LlamaForCausalLM"), "architectures", {"list of strings"});
}

TEST(BadInput, ZeroOrNegativeSizes) {
  expect_error(with(base_config(), "hidden_size", 0), "hidden_size", {"= 0", "positive"});
  expect_error(with(base_config(), "vocab_size", -5), "vocab_size", {"= -5", "positive"});
  expect_error(with(base_config(), "num_key_value_heads", 0), "num_key_value_heads", {"positive"});
  expect_error(with(base_config(), "intermediate_size", -1), "intermediate_size", {"positive"});
  expect_error(with(moe_config(), "n_routed_experts", 0), "n_routed_experts", {"positive"});
}

TEST(BadInput, HiddenNotDivisibleByHeads) {
  json j = base_config();
  j["num_attention_heads"] = 30;  // 4096 / 30 is not an integer and no head_dim is given
  j["num_key_value_heads"] = 10;
  expect_error(j.dump(), "num_attention_heads", {"= 30", "not divisible"});
  j["head_dim"] = 128;  // an explicit head_dim makes it legal (as in Qwen3)
  EXPECT_NO_THROW(build_model(parse_config(j.dump(), "ok.json")));
}

TEST(BadInput, KvHeadsMustDivideHeads) {
  expect_error(with(base_config(), "num_key_value_heads", 7), "num_key_value_heads", {"= 7", "divide"});
}

TEST(BadInput, ExpertsPerTokenAboveExpertCount) {
  expect_error(with(moe_config(), "num_experts_per_tok", 300), "num_experts_per_tok", {"= 300", "256"});
  json mixtral = base_config();
  mixtral["architectures"] = {"MixtralForCausalLM"};
  mixtral["num_local_experts"] = 8;
  mixtral["num_experts_per_tok"] = 9;
  expect_error(mixtral.dump(), "num_experts_per_tok", {"= 9"});
}

TEST(BadInput, GroupLimitedRoutingInconsistent) {
  expect_error(with(moe_config(), "n_group", 7), "n_group", {"= 7", "divide"});
  expect_error(with(moe_config(), "topk_group", 9), "topk_group", {"= 9"});
}

TEST(BadInput, SizesOverflow64Bits) {
  // Each count within its bound (config.h), the product not: 4 layers x 2^16 experts x
  // 3 x 2^20 x 2^22 = 3 x 2^60 parameters, in FP32 3 x 2^62 bytes.
  std::ifstream in(std::string(DAYZERO_DATA_DIR) + "/models/Mixtral-8x7B/config.json");
  json j = json::parse(in);
  j["num_hidden_layers"] = 4;
  j["num_local_experts"] = kMaxExperts;
  j["hidden_size"] = kMaxHiddenSize;
  j["intermediate_size"] = kMaxFfnWidth;
  j["torch_dtype"] = "float32";
  expect_error(j.dump(), "sizes", {"overflow", "hidden_size=1048576"});
  // Beyond a bound, the bound is the error (4e9 x a 4e12 vocabulary overflowed before).
  expect_error(with(base_config(), "hidden_size", 4'000'000'000LL), "hidden_size", {"must be at most 1048576"});
  expect_error(with(base_config(), "hidden_size", 18446744073709551615ULL), "hidden_size", {"64 bits"});
}

TEST(BadInput, UnknownArchitectureListsSupported) {
  const auto msg =
      expect_error(with(base_config(), "architectures", json::array({"FooForCausalLM"})), "architectures",
                   {"\"FooForCausalLM\"", "LlamaForCausalLM", "DeepseekV3ForCausalLM", "GptOssForCausalLM"});
  expect_error(with(base_config(), "architectures", json::array()), "architectures", {"missing"});
}

TEST(BadInput, UnsupportedQuantization) {
  expect_error(with(base_config(), "quantization_config", {{"quant_method", "gptq"}}),
               "quantization_config.quant_method", {"\"gptq\"", "fp8, mxfp4"});
  expect_error(with(base_config(), "quantization_config", {{"quant_method", "fp8"}, {"weight_block_size", {128}}}),
               "quantization_config.weight_block_size", {"[rows, cols]"});
}

TEST(BadInput, LayerTypesLengthMismatch) {
  expect_error(with(base_config(), "layer_types", json::array({"full_attention"})), "layer_types",
               {"1 entries", "32 layers"});
  json j = base_config();
  j["layer_types"] = json::array();
  for (int i = 0; i < 32; ++i) j["layer_types"].push_back(i == 3 ? "diagonal_attention" : "full_attention");
  expect_error(j.dump(), "layer_types[3]", {"diagonal_attention"});
}

TEST(BadInput, SlidingLayersWithoutWindow) {
  json j = base_config();
  j["layer_types"] = json::array();
  for (int i = 0; i < 32; ++i) j["layer_types"].push_back("sliding_attention");
  expect_error(j.dump(), "sliding_window", {"positive"});
}

TEST(BadInput, GptOssDisagreeingExpertCounts) {
  std::ifstream in(std::string(DAYZERO_DATA_DIR) + "/models/gpt-oss-20b/config.json");
  json j = json::parse(in);
  j["experts_per_token"] = 2;
  expect_error(j.dump(), "experts_per_token", {"= 2", "num_experts_per_tok = 4"});
}

TEST(BadInput, MissingFileAndDirectory) {
  try {
    load_config("/nonexistent/config.json");
    ADD_FAILURE();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/config.json: no such file"), std::string::npos) << e.what();
  }
  const auto dir = std::filesystem::temp_directory_path() / "dayzero_empty_model_dir";
  std::filesystem::create_directories(dir);
  try {
    load_config(dir);
    ADD_FAILURE();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no config.json"), std::string::npos) << e.what();
  }
}

// Published revisions differ: DeepSeek-V3's December 2024 config.json also carries
// training-only keys. They are read past, and the model is the same.
TEST(ConfigRevisions, DeepSeekV3TrainingOnlyKeysAccepted) {
  json j = moe_config();
  const Model now = build_model(parse_config(j.dump(), "v3.json"));
  j["aux_loss_alpha"] = 0.001;
  j["pretraining_tp"] = 1;
  j["seq_aux"] = true;
  const Model old = build_model(parse_config(j.dump(), "v3-2024-12.json"));
  EXPECT_EQ(old.params_total(), now.params_total());
  EXPECT_EQ(old.weights_bytes(WeightPrecision::checkpoint), now.weights_bytes(WeightPrecision::checkpoint));
}

// Keys a config omits take the reference implementation's defaults.
TEST(ConfigDefaults, OptionalKeysTakeReferenceDefaults) {
  json j = base_config();
  j.erase("num_key_value_heads");  // LlamaConfig: defaults to num_attention_heads (MHA)
  j.erase("tie_word_embeddings");  // defaults to false
  j.erase("torch_dtype");          // BF16
  const ModelConfig c = parse_config(j.dump(), "defaults.json");
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.head_dim, 128);

  json ds = moe_config();
  for (const char* k : {"first_k_dense_replace", "num_nextn_predict_layers", "topk_method", "n_shared_experts"})
    ds.erase(k);  // configuration_deepseek.py (V3): 3, 1, "noaux_tc"; n_shared_experts absent = none
  const ModelConfig v3 = parse_config(ds.dump(), "v3-defaults.json");
  EXPECT_EQ(v3.moe.first_dense_layers, 3);
  EXPECT_EQ(v3.mtp_layers, 1);
  EXPECT_TRUE(v3.moe.score_correction_bias);
  EXPECT_EQ(v3.moe.num_shared_experts, 0);
}

// Through parse_json_text (parse_config used nlohmann's parser directly): deep
// nesting, a repeated key and a number beyond a double are errors naming the file.
TEST(BadInput, HostileJson) {
  expect_error(std::string(52'000, '['), "", {"JSON nested deeper than 128 levels at line 1, column 129"});
  std::string dup = base_config().dump();
  dup.insert(1, "\"num_hidden_layers\": 1, ");
  expect_error(dup, "num_hidden_layers", {"key appears twice in one object"});
  std::string big = base_config().dump();
  big.insert(1, "\"x\": [1e400], ");
  expect_error(big, "x[0]", {"= 1e400: number out of range"});
}

// Issue 16: counts are bounded when read. num_hidden_layers = 2^31 took 3 GiB and 10^15
// looped for ever; each bound is a documented multiple of the largest published model.
TEST(BadInput, CountsAboveTheirBoundsAreErrors) {
  expect_error(with(base_config(), "num_hidden_layers", int64_t{1} << 31), "num_hidden_layers",
               {"= 2147483648", "must be at most 4096"});
  expect_error(with(base_config(), "num_hidden_layers", 1'000'000'000'000'000), "num_hidden_layers",
               {"must be at most 4096"});
  expect_error(with(base_config(), "hidden_size", int64_t{1} << 40), "hidden_size", {"must be at most 1048576"});
  expect_error(with(base_config(), "vocab_size", int64_t{1} << 32), "vocab_size", {"must be at most 16777216"});
  expect_error(with(base_config(), "num_attention_heads", int64_t{1} << 31), "num_attention_heads",
               {"must be at most 16384"});
  expect_error(with(base_config(), "intermediate_size", int64_t{1} << 31), "intermediate_size",
               {"must be at most 4194304"});
  expect_error(with(moe_config(), "n_routed_experts", int64_t{1} << 31), "n_routed_experts", {"must be at most 65536"});
  expect_error(with(moe_config(), "num_nextn_predict_layers", int64_t{1} << 31), "num_nextn_predict_layers",
               {"must be at most 4096"});
  // DeepSeek-V3's 256 experts on 4096 layers: 6.4 million expert tensors for `check`.
  expect_error(with(moe_config(), "num_hidden_layers", kMaxLayers), "num_hidden_layers",
               {"= 4096", "with 256 experts per layer makes 1048832 layer experts; at most 262144"});
  // At the bounds a config is still read (kMaxLayers layers of a small model).
  json j = base_config();
  j["num_hidden_layers"] = kMaxLayers;
  j["hidden_size"] = 64;
  j["num_attention_heads"] = 4;
  j["num_key_value_heads"] = 4;
  j["intermediate_size"] = 128;
  EXPECT_EQ(build_model(parse_config(j.dump(), "many-layers.json")).layers.size(), size_t{kMaxLayers});
}

TEST(BadInput, DenseLayerListIsBoundedByTheLayers) {
  std::ifstream in(std::string(DAYZERO_DATA_DIR) + "/models/Qwen3-30B-A3B/config.json");
  const json q = json::parse(in);
  expect_error(with(q, "mlp_only_layers", json::array({1, 48})), "mlp_only_layers", {"= 48", "must be at most 47"});
  expect_error(with(q, "mlp_only_layers", json(std::vector<int>(49, 0))), "mlp_only_layers",
               {"49 entries for 48 layers"});
}

// Issue 16: 10^5 modules_to_not_convert (1.1 MB) took 15 s, matched pattern by pattern
// against every weight. Literal patterns are now hashed, the list and its globs capped.
TEST(BadInput, ModulesToNotConvertAreBoundedAndMatchedInLinearTime) {
  json j = moe_config();
  auto& keep = j["quantization_config"]["modules_to_not_convert"];
  keep = json::array();
  for (int64_t i = 0; i < kMaxModulePatterns; ++i) keep.push_back("model.layers." + std::to_string(i) + ".mlp.gate");
  keep.push_back("lm_head");
  expect_error(j.dump(), "quantization_config.modules_to_not_convert",
               {"65537 patterns", "at most 65536 are accepted"});
  keep.erase(keep.size() - 1);
  const auto t0 = std::chrono::steady_clock::now();
  const Model m = build_model(parse_config(j.dump(), "long-list.json"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  const Weight* gate = m.find_weight("model.layers.3.mlp.gate.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->stored.kind, StorageKind::plain);  // listed: kept in BF16
  EXPECT_NE(m.find_weight("model.layers.3.mlp.experts.{e}.gate_proj.weight")->stored.kind, StorageKind::plain);

  keep = json::array();
  for (int64_t i = 0; i <= kMaxModuleGlobs; ++i) keep.push_back("model.layers.*.x" + std::to_string(i));
  expect_error(j.dump(), "quantization_config.modules_to_not_convert",
               {"\"model.layers.*.x64\"", "more than 64 glob patterns"});
}

// Found while fuzzing (issue 16): the most layers the bounds allow (4096, with 64 routed
// experts: kMaxLayerExperts) and the most glob patterns (64) took 15-23 s to build under
// the fuzzers' sanitizers (past libFuzzer's 10 s timeout; 1.9 s in a Release build), each
// weight's name and each glob split at dots again for every (weight, glob) pair. Globs
// are now split once, names once per weight (1.0 s in Release). The bound catches a
// return to quadratic matching, and the globs must still match as before.
TEST(BadInput, TheMostLayersAndGlobsTheBoundsAllowBuildPromptly) {
  json j = moe_config();
  j["num_hidden_layers"] = kMaxLayers;
  j["n_routed_experts"] = kMaxLayerExperts / kMaxLayers;
  j["num_nextn_predict_layers"] = 0;
  auto& keep = j["quantization_config"]["modules_to_not_convert"];
  keep = json::array();
  for (int64_t i = 0; i < kMaxModuleGlobs; ++i) keep.push_back("*?*?*?*?*?*?*?*?*?*?*?#" + std::to_string(i));
  keep.back() = "model.layers.7.mlp.shared_experts.*";
  const auto t0 = std::chrono::steady_clock::now();
  const Model m = build_model(parse_config(j.dump(), "many-globs.json"));
#if defined(__SANITIZE_ADDRESS__)
  const double limit_s = 30;  // scripts/sanitize.sh's build is several times slower
#else
  const double limit_s = 5;
#endif
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), limit_s);
  EXPECT_EQ(m.find_weight("model.layers.7.mlp.shared_experts.up_proj.weight")->stored.kind, StorageKind::plain);
  EXPECT_NE(m.find_weight("model.layers.8.mlp.shared_experts.up_proj.weight")->stored.kind, StorageKind::plain);
}

TEST(ModulePatterns, MatchesAsThePatternByPatternRule) {
  const ModulePatterns keep({"model.layers.*.self_attn", "mlp.gate", "lm_head", "layers.2"});
  for (const char* name : {"model.layers.3.self_attn.q_proj.weight", "model.layers.2.mlp.gate.weight", "lm_head.weight",
                           "model.layers.2.input_layernorm.weight"})
    EXPECT_TRUE(keep.matches(name)) << name;
  for (const char* name : {"model.layers.3.mlp.gate_proj.weight", "model.layers.12.mlp.up_proj.weight",
                           "model.embed_tokens.weight", "model.layers.20.input_layernorm.weight"})
    EXPECT_FALSE(keep.matches(name)) << name;
  EXPECT_FALSE(ModulePatterns({}).matches("lm_head.weight"));
}
