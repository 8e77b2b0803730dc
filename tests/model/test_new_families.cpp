// The 2026 families (issue 15): MiniMax-M2.5, Qwen3.5-MoE, GLM-5, Kimi-K2.5 read from their
// published config.json into exact counts, checked against their publishers' figures and
// checkpoint audits (scenarios/models/PUBLISHED.md, "The 2026 families"); their state and
// cache per layer kind; and the one-line errors of inconsistent configs.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/model.h"
#include "model/module_regex.h"

using namespace dayzero::model;
namespace core = dayzero::core;
using nlohmann::json;

namespace {

std::string dir(const std::string& name) { return std::string(DAYZERO_DATA_DIR) + "/models/" + name; }
Model load(const std::string& name) { return load_model(dir(name)); }
json config_of(const std::string& name) {
  std::ifstream in(dir(name) + "/config.json");
  return json::parse(in);
}
constexpr double B = 1e9;

// A config the reader must refuse with an InputError naming `field`; returns the message.
std::string refused(const json& j, const std::string& field) {
  try {
    build_model(parse_config(j.dump(), "bad.json"));
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted a config with a bad " << field;
  return "";
}

}  // namespace

// Qwen's card: "397B in total and 17B activated". The checkpoint's header audit (94 shards,
// revision 8472618) counts 396,346,350,336 text parameters in 792,692,717,952 bytes (A_log and
// the gated norm in F32), the MTP layer 6,595,568,128.
TEST(NewFamilies, Qwen35_397B_MatchesTheCardAndTheCheckpointAudit) {
  const Model m = load("Qwen3.5-397B-A17B");
  EXPECT_EQ(m.config.family, Family::qwen3_5_moe);
  EXPECT_EQ(m.params_total(), 396'346'350'336);
  EXPECT_EQ(m.weights_bytes(WeightPrecision::checkpoint), 792'692'717'952);
  EXPECT_EQ(m.params_mtp(), 6'595'568'128);
  EXPECT_NEAR(static_cast<double>(m.params_total()) / B, 397, 1.0);
  EXPECT_NEAR(static_cast<double>(m.params_active()) / B, 17, 0.5);
  EXPECT_EQ(m.layers_of(LayerAttention::linear), 45);
  EXPECT_EQ(m.layers_of(LayerAttention::full), 15);
}

// Same family, 40 layers: "35B in total and 3B activated" (the family's card wording);
// text 34,660,610,688 and MTP 844,640,768 of the Hub's 35,951,822,704 (vision the rest).
TEST(NewFamilies, Qwen35_35B_MatchesTheHubCount) {
  const Model m = load("Qwen3.5-35B-A3B");
  EXPECT_EQ(m.params_total(), 34'660'610'688);
  EXPECT_EQ(m.params_mtp(), 844'640'768);
  EXPECT_NEAR(static_cast<double>(m.params_active() - m.params_embedding()) / B, 3, 0.1);
}

// DeepSeek-V3.2: DeepSeek-V3 with GLM-5's sparse-attention indexer in every layer. By hand:
// V3's 671,026,419,200 + 61 x (wq_b 64 x 128 x 1536 + wk 128 x 7168 + k_norm 2 x 128 +
// weights_proj 64 x 7168 = 13,959,424); with the MTP layer, the Hub's "685B". Its indexer
// caches 128 FP8 key bytes and an F32 scale per token and layer.
TEST(NewFamilies, DeepSeekV32_IsV3WithTheIndexer) {
  const Model m = load("DeepSeek-V3.2");
  const Model v3 = load("DeepSeek-V3");
  EXPECT_EQ(m.config.family, Family::deepseek_v32);
  EXPECT_EQ(m.params_total(), 671'026'419'200 + 61 * 13'959'424);
  EXPECT_EQ(v3.params_total(), 671'026'419'200);
  EXPECT_NEAR(static_cast<double>(m.params_total() + m.params_mtp()) / B, 685, 0.5);
  EXPECT_EQ(m.indexer_bytes_per_token(), 61 * (128 + 4));
  EXPECT_EQ(m.config.indexer.topk, 2048);
  EXPECT_EQ(m.kv_bytes_per_token(1), v3.kv_bytes_per_token(1));  // MLA's latent and rotary key, FP8
}

// The family's middle member: 48 layers, every fourth of gated full attention (12), 256
// experts top-8 + 1 shared; "122B" in total and "10B" activated by its name, and "Total
// Parameters 122.11B" for the text model as a GGUF conversion counts it (llama.cpp, no
// vision tower, no MTP layer; scenarios/models/PUBLISHED.md).
TEST(NewFamilies, Qwen35_122B_MatchesItsNameAndAConversionsCount) {
  const Model m = load("Qwen3.5-122B-A10B");
  EXPECT_EQ(m.config.family, Family::qwen3_5_moe);
  EXPECT_EQ(m.layers_of(LayerAttention::linear), 36);
  EXPECT_EQ(m.layers_of(LayerAttention::full), 12);
  EXPECT_NEAR(static_cast<double>(m.params_total()) / B, 122.11, 0.005);
  EXPECT_NEAR(static_cast<double>(m.params_active()) / B, 10, 0.5);
}

// Only the 15 full-attention layers cache K and V: 15 x 2 x 2 KV heads x 256 x 2 bytes. Each
// of the 45 gated delta-net layers keeps 64 value heads x 128 x 128 F32 (4 MiB) and a conv
// window of 3 x 12,288 bf16 per sequence, whatever its length.
TEST(NewFamilies, Qwen35_CachesPerTokenOnlyInItsAttentionLayers) {
  const Model m = load("Qwen3.5-397B-A17B");
  EXPECT_EQ(m.kv_bytes_per_token(2), 15 * 2 * 2 * 256 * 2);
  EXPECT_EQ(m.linear_state_bytes_per_seq(2), 45 * (64 * 128 * 128 * 4 + 3 * 12288 * 2));
  EXPECT_EQ(m.indexer_bytes_per_token(), 0);
  // A 128K-token sequence: 3.9 GiB of KV here against 15.7 GiB if all 60 layers cached.
  EXPECT_EQ(m.kv_cache_bytes(131072, 2), 131072LL * 30720);
  // TP splits the fused [q | k | v] projection by head within each section, not as one block.
  for (const auto& op : m.layers[0].ops) {
    if (op.name == "in_proj_qkv") {
      EXPECT_EQ(op.tp_split, TpSplit::sections);
    }
  }
}

// MiniMax's card: "230 billion total parameters with 10 billion active parameters"; the
// checkpoint holds no MTP tensors (96,103 tensors, the main model's). KV: 62 layers x 2 x 8 x
// 128 x 2 = 253,952 bytes per token, MiniMax's "240 GB per 1M context tokens" (in GiB).
TEST(NewFamilies, MiniMaxM25_MatchesTheCard) {
  const Model m = load("MiniMax-M2.5");
  EXPECT_EQ(m.params_total(), 228'689'764'864);
  EXPECT_EQ(m.params_active() - m.params_embedding(), 10'415'956'480);
  EXPECT_EQ(m.params_mtp(), 0);
  EXPECT_EQ(m.kv_bytes_per_token(2), 253'952);
  ASSERT_NE(m.find_weight("model.layers.0.self_attn.q_norm.weight"), nullptr);
  EXPECT_EQ(m.find_weight("model.layers.0.self_attn.q_norm.weight")->shape, std::vector<int64_t>{6144});
  EXPECT_NEAR(static_cast<double>(m.weights_bytes(WeightPrecision::checkpoint)) / B, 230.0, 0.1);
}

// Z.ai: "744B parameters (40B active)". The indexer caches 128 FP8 + a 4-byte scale per
// token in each of the 78 layers; the attention reads at most index_topk = 2048 tokens.
TEST(NewFamilies, Glm5_MatchesTheCardAndCachesIndexerKeys) {
  const Model m = load("GLM-5-FP8");
  EXPECT_EQ(m.params_total(), 743'911'218'432);
  EXPECT_NEAR(static_cast<double>(m.params_active() - m.params_embedding()) / B, 40.8, 0.05);
  EXPECT_EQ(m.indexer_bytes_per_token(), 78 * 132);
  EXPECT_EQ(m.kv_bytes_per_token(1), 78 * 576);
  const Weight* wp = m.find_weight("model.layers.5.self_attn.indexer.weights_proj.weight");
  ASSERT_NE(wp, nullptr);
  EXPECT_EQ(wp->stored.kind, StorageKind::plain);  // BF16 in the FP8 checkpoint
  EXPECT_EQ(m.find_weight("model.layers.5.self_attn.indexer.wq_b.weight")->shape, (std::vector<int64_t>{4096, 2048}));
  for (const auto& op : m.layers[5].ops) {
    if (op.kind == OpKind::attention) {
      EXPECT_EQ(op.attn.topk, 2048);
    }
  }
}

// Moonshot: "1T total parameters, 32B activated". Routed experts are INT4 (compressed-tensors,
// group 32): 0.5 byte + a BF16 scale per 32 inputs; attention, shared experts and layer 0's
// dense MLP stay BF16 by the `ignore` regexes.
TEST(NewFamilies, KimiK25_ReadsCompressedTensorsInt4Experts) {
  const Model m = load("Kimi-K2.5");
  EXPECT_EQ(m.config.family, Family::deepseek_v3);
  EXPECT_EQ(m.params_total(), 1'026'408'232'448);
  EXPECT_EQ(m.params_active() - m.params_embedding(), 31'687'095'808);
  const Weight* e = m.find_weight("model.layers.3.mlp.experts.{e}.gate_proj.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->stored.kind, StorageKind::int4_group);
  EXPECT_EQ(e->stored_bytes(), 384LL * (2048 * 7168 / 2 + 2048 * (7168 / 32) * 2));
  for (const char* bf16 :
       {"model.layers.3.self_attn.q_a_proj.weight", "model.layers.3.mlp.shared_experts.up_proj.weight",
        "model.layers.0.mlp.down_proj.weight", "lm_head.weight"})
    EXPECT_EQ(m.find_weight(bf16)->stored.kind, StorageKind::plain) << bf16;
  EXPECT_NEAR(static_cast<double>(m.weights_bytes(WeightPrecision::checkpoint)) / B, 594.2, 0.1);
}

TEST(NewFamilies, AnUnknownLayerTypeNamesTheEntry) {
  json j = config_of("Qwen3.5-35B-A3B");
  j["text_config"]["layer_types"][7] = "mamba2";
  const std::string msg = refused(j, "text_config.layer_types[7]");
  EXPECT_NE(msg.find("mamba2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("linear_attention"), std::string::npos) << msg;
}

TEST(NewFamilies, AMissingIndexerFieldIsNamed) {
  for (const char* key : {"index_topk", "index_n_heads", "index_head_dim"}) {
    json j = config_of("GLM-5-FP8");
    j.erase(key);
    refused(j, key);
  }
}

TEST(NewFamilies, AnInconsistentQuantizationGroupSizeIsNamed) {
  json j = config_of("Kimi-K2.5");
  auto& w = j["text_config"]["quantization_config"]["config_groups"]["group_0"]["weights"];
  w["group_size"] = 20;  // not whole int32 words of 4-bit values
  refused(j, "text_config.quantization_config.config_groups.group_0.weights.group_size");
  w["group_size"] = 4096;  // does not divide the experts' 2,048 inputs
  refused(j, "text_config.quantization_config.config_groups.group_0.weights.group_size");
  json a = config_of("Kimi-K2.5");
  a["text_config"]["quantization_config"]["config_groups"]["group_0"]["weights"]["symmetric"] = false;
  refused(a, "text_config.quantization_config.config_groups.group_0.weights.symmetric");
}

TEST(NewFamilies, ValueHeadsMustBeAMultipleOfKeyHeads) {
  json j = config_of("Qwen3.5-35B-A3B");
  j["text_config"]["linear_num_value_heads"] = 24;
  refused(j, "text_config.linear_num_value_heads");
}

TEST(ModuleRegex, ReadsTheIgnoreListsSubset) {
  const ModuleRegex mlp(R"(.*mlp\.(gate|up|gate_up|down)_proj.*)");
  EXPECT_TRUE(mlp.matches("model.layers.0.mlp.down_proj"));
  EXPECT_TRUE(mlp.matches("model.layers.0.mlp.gate_up_proj"));
  EXPECT_FALSE(mlp.matches("model.layers.3.mlp.experts.7.down_proj"));
  EXPECT_FALSE(mlp.matches("model.layers.0.mlpXdown_proj"));
  EXPECT_TRUE(ModuleRegex("model").matches("model.layers"));  // re.match: a prefix suffices
  EXPECT_FALSE(ModuleRegex("layers").matches("model.layers"));
  EXPECT_TRUE(ModuleRegex("a+b?c*d").matches("aaad"));
  EXPECT_FALSE(ModuleRegex("a+b").matches("b"));
  for (const char* bad : {"[ab]", "^model", "a{2}", "(a(b))", "a**", "(ab", "x\\d"})
    EXPECT_THROW(ModuleRegex{bad}, std::invalid_argument) << bad;
}

// A pattern that backtracks exponentially in a backtracking engine stays linear here.
TEST(ModuleRegex, PathologicalPatternsStayFast) {
  const ModuleRegex r(".*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*x");
  EXPECT_FALSE(r.matches(std::string(200, 'a')));
  EXPECT_TRUE(ModuleRegex("(a|aa)*b").matches(std::string(150, 'a') + "b"));
  EXPECT_FALSE(ModuleRegex("(a|aa)*b").matches(std::string(150, 'a')));
}
