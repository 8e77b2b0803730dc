// Expected checkpoint tensors, synthetic checkpoints, and `check` on broken copies.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "model/checkpoint.h"
#include "model/safetensors.h"
#include "model/synth.h"

using namespace dayzero::model;
namespace fs = std::filesystem;

namespace {

// DeepSeek-V3 layout at toy sizes: FP8 128x128 blocks, MLA, shared expert, MTP.
const char* kTinyDeepSeek = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
  "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
  "num_hidden_layers": 3, "first_k_dense_replace": 1, "n_routed_experts": 8,
  "num_experts_per_tok": 2, "n_group": 2, "topk_group": 1, "n_shared_experts": 1,
  "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 64, "kv_lora_rank": 64,
  "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "vocab_size": 512,
  "num_nextn_predict_layers": 1, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
  "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                          "weight_block_size": [128, 128]}})";

// gpt-oss layout at toy sizes: MXFP4 fused experts, sinks, sliding layers.
const char* kTinyGptOss = R"({
  "architectures": ["GptOssForCausalLM"], "hidden_size": 64, "intermediate_size": 64,
  "num_hidden_layers": 2, "num_local_experts": 4, "num_experts_per_tok": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
  "sliding_window": 4, "quantization_config": {"quant_method": "mxfp4",
  "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}})";

// Kimi-K2.5's wrapper at toy sizes: a DeepSeek-V3 text model in text_config, routed experts
// in compressed-tensors pack-quantized INT4 (group 32), the rest BF16, as published.
const char* kTinyKimi = R"({
  "architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
  "text_config": {"model_type": "kimi_k2",
  "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 128,
  "num_hidden_layers": 2, "first_k_dense_replace": 1, "n_routed_experts": 8,
  "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "n_shared_experts": 1,
  "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 64, "kv_lora_rank": 64,
  "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "vocab_size": 512,
  "topk_method": "noaux_tc", "torch_dtype": "bfloat16"},
  "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
    "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
      "symmetric": true, "strategy": "group", "group_size": 32, "dynamic": false}}},
    "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]}})";

fs::path fresh_dir(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("dayzero_ckpt_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

fs::path write_config(const std::string& name, const char* text) {
  const auto d = fresh_dir(name + "_config");
  std::ofstream(d / "config.json") << text;
  return d / "config.json";
}

const TensorSpec* find(const std::vector<TensorSpec>& v, const std::string& name) {
  for (const auto& t : v)
    if (t.name == name) return &t;
  return nullptr;
}

// The tensors of a file, as a list the writer can write again (bytes copied).
std::vector<TensorToWrite> copy_tensors(const fs::path& file) {
  std::vector<TensorToWrite> out;
  SafetensorsFile f(file);
  for (const auto& t : f.header().tensors) {
    auto bytes = std::make_shared<std::vector<std::byte>>(f.data(t).begin(), f.data(t).end());
    out.push_back({t.name, t.dtype, t.shape, [bytes](int64_t off, std::span<std::byte> o) {
                     std::copy_n(bytes->begin() + off, o.size(), o.begin());
                   }});
  }
  return out;
}

// Rewrites one shard, letting `edit` change or drop (return false) each tensor.
void rewrite_shard(const fs::path& file, const std::function<bool(TensorToWrite&)>& edit) {
  std::vector<TensorToWrite> out;
  for (auto& t : copy_tensors(file))
    if (edit(t)) out.push_back(std::move(t));
  write_safetensors(file, out);
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool any_contains(const std::vector<std::string>& v, const std::string& fragment) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(fragment) != std::string::npos; });
}

struct Synthesized {
  fs::path dir;
  Model model;
};

Synthesized synth(const std::string& name, const char* config, int64_t shard_bytes) {
  const auto out = fresh_dir(name);
  SynthOptions o;
  o.seed = 7;
  o.max_shard_bytes = shard_bytes;
  write_synthetic_checkpoint(write_config(name, config), out, o);
  return {out, load_model(out)};
}

}  // namespace

TEST(ExpectedTensors, DeepSeekFp8ScalesAndMtp) {
  const Model m = build_model(parse_config(kTinyDeepSeek, "tiny.json"));
  const auto t = expected_tensors(m);
  // Expert down_proj [256, 128]: scale_inv [ceil(256/128), ceil(128/128)] = [2, 1], F32.
  const TensorSpec* s = find(t, "model.layers.1.mlp.experts.7.down_proj.weight_scale_inv");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->dtype, DType::f32);
  EXPECT_EQ(s->shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(find(t, "model.layers.1.mlp.experts.7.down_proj.weight")->dtype, DType::f8_e4m3);
  // Routers, norms, embeddings and heads stay BF16 without scales; the correction bias is F32.
  EXPECT_EQ(find(t, "model.layers.1.mlp.gate.weight")->dtype, DType::bf16);
  EXPECT_EQ(find(t, "model.layers.1.mlp.gate.weight_scale_inv"), nullptr);
  EXPECT_EQ(find(t, "model.layers.1.mlp.gate.e_score_correction_bias")->dtype, DType::f32);
  EXPECT_EQ(find(t, "lm_head.weight")->dtype, DType::bf16);
  // MTP module at layer index num_hidden_layers (3) with its own embedding and head.
  EXPECT_NE(find(t, "model.layers.3.eh_proj.weight_scale_inv"), nullptr);
  EXPECT_EQ(find(t, "model.layers.3.shared_head.head.weight")->shape, (std::vector<int64_t>{512, 256}));
  EXPECT_EQ(find(t, "model.layers.4.input_layernorm.weight"), nullptr);
  // Layer 0 is dense (first_k_dense_replace = 1).
  EXPECT_NE(find(t, "model.layers.0.mlp.gate_proj.weight"), nullptr);
  EXPECT_EQ(find(t, "model.layers.0.mlp.experts.0.gate_proj.weight"), nullptr);
}

TEST(ExpectedTensors, GptOssMxfp4BlocksAndScales) {
  const Model m = build_model(parse_config(kTinyGptOss, "tiny.json"));
  const auto t = expected_tensors(m);
  // gate_up [E=4, 2I=128, H=64] -> blocks [4, 128, 64/32, 16] U8, scales [4, 128, 2] U8.
  EXPECT_EQ(find(t, "model.layers.0.mlp.experts.gate_up_proj_blocks")->shape, (std::vector<int64_t>{4, 128, 2, 16}));
  EXPECT_EQ(find(t, "model.layers.0.mlp.experts.gate_up_proj_scales")->shape, (std::vector<int64_t>{4, 128, 2}));
  EXPECT_EQ(find(t, "model.layers.0.mlp.experts.down_proj_blocks")->shape, (std::vector<int64_t>{4, 64, 2, 16}));
  EXPECT_EQ(find(t, "model.layers.0.mlp.experts.gate_up_proj_bias")->dtype, DType::bf16);
  EXPECT_EQ(find(t, "model.layers.0.self_attn.sinks")->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(find(t, "model.layers.0.self_attn.q_proj.weight")->dtype, DType::bf16);  // not converted
}

TEST(ExpectedTensors, TiedEmbeddingsHaveNoHead) {
  const Model m = load_model(std::string(DAYZERO_DATA_DIR) + "/models/Qwen2.5-0.5B");
  const auto t = expected_tensors(m);
  EXPECT_EQ(find(t, "lm_head.weight"), nullptr);
  EXPECT_NE(find(t, "model.layers.0.self_attn.q_proj.bias"), nullptr);  // Qwen2: q/k/v biases
  EXPECT_EQ(find(t, "model.layers.0.self_attn.o_proj.bias"), nullptr);
}

// A multimodal wrapper stores the text model under its own prefixes (Kimi-K2.5: a whole
// causal LM under `language_model.`; Qwen3.5: `model.language_model.`, a bare lm_head and
// `mtp.` at the top), and INT4 experts as compressed-tensors writes them.
TEST(ExpectedTensors, WrappedTextModelsAndPackQuantizedInt4) {
  const Model kimi = build_model(parse_config(kTinyKimi, "kimi.json"));
  const auto t = expected_tensors(kimi);
  const TensorSpec* packed = find(t, "language_model.model.layers.1.mlp.experts.7.down_proj.weight_packed");
  ASSERT_NE(packed, nullptr);  // down_proj [256, 128]: 8 values per I32 along the 128 inputs
  EXPECT_EQ(packed->dtype, DType::i32);
  EXPECT_EQ(packed->shape, (std::vector<int64_t>{256, 16}));
  const TensorSpec* scale = find(t, "language_model.model.layers.1.mlp.experts.7.down_proj.weight_scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->dtype, DType::bf16);
  EXPECT_EQ(scale->shape, (std::vector<int64_t>{256, 4}));  // 128 / 32 groups
  EXPECT_EQ(find(t, "language_model.model.layers.1.mlp.experts.7.down_proj.weight_shape")->dtype, DType::i64);
  EXPECT_EQ(find(t, "language_model.model.layers.1.self_attn.kv_b_proj.weight")->dtype, DType::bf16);  // ignored
  EXPECT_NE(find(t, "language_model.lm_head.weight"), nullptr);
  EXPECT_NE(find(t, "language_model.model.embed_tokens.weight"), nullptr);
  EXPECT_EQ(find(t, "model.embed_tokens.weight"), nullptr);
  EXPECT_EQ(checkpoint_name(kimi.config, "model.norm.weight"), "language_model.model.norm.weight");
  EXPECT_TRUE(other_modality(kimi.config, "vision_tower.encoder.blocks.0.wqkv.weight"));
  EXPECT_FALSE(other_modality(kimi.config, "language_model.model.norm.weight"));

  const ModelConfig qwen = load_config(std::string(DAYZERO_DATA_DIR) + "/models/Qwen3.5-397B-A17B");
  EXPECT_EQ(checkpoint_name(qwen, "model.layers.0.linear_attn.in_proj_qkv.weight"),
            "model.language_model.layers.0.linear_attn.in_proj_qkv.weight");
  EXPECT_EQ(checkpoint_name(qwen, "lm_head.weight"), "lm_head.weight");
  EXPECT_EQ(checkpoint_name(qwen, "mtp.fc.weight"), "mtp.fc.weight");
  EXPECT_TRUE(other_modality(qwen, "model.visual.blocks.0.attn.qkv.weight"));
  // A text-only config keeps the names as they are.
  const Model ds = build_model(parse_config(kTinyDeepSeek, "tiny.json"));
  EXPECT_EQ(checkpoint_name(ds.config, "model.norm.weight"), "model.norm.weight");
}

TEST(Synth, CheckPassesOnSynthesizedCheckpoints) {
  for (const auto& [name, cfg] :
       {std::pair{"ds", kTinyDeepSeek}, std::pair{"oss", kTinyGptOss}, std::pair{"kimi", kTinyKimi}}) {
    SCOPED_TRACE(name);
    const auto s = synth(name, cfg, 20'000);  // small shards: exercises the index
    const CheckReport r = check_checkpoint(s.model, s.dir);
    EXPECT_TRUE(r.ok()) << (r.file_errors.empty() ? "" : r.file_errors[0]);
    EXPECT_EQ(r.tensors_found, r.tensors_expected);
    EXPECT_EQ(r.found_bytes_by_dtype, r.expected_bytes_by_dtype);
    EXPECT_GT(r.shards, 1);
  }
}

TEST(Synth, SameSeedSameBytesAndLayerCut) {
  const auto a = synth("seed_a", kTinyGptOss, 1'000'000'000);
  const auto b = synth("seed_b", kTinyGptOss, 1'000'000'000);
  std::ifstream fa(a.dir / "model.safetensors", std::ios::binary), fb(b.dir / "model.safetensors", std::ios::binary);
  const std::string ba((std::istreambuf_iterator<char>(fa)), {}), bb((std::istreambuf_iterator<char>(fb)), {});
  EXPECT_EQ(ba, bb);

  const auto out = fresh_dir("cut");
  SynthOptions o;
  o.layers = 1;
  write_synthetic_checkpoint(write_config("cut", kTinyDeepSeek), out, o);
  const Model cut = load_model(out);
  EXPECT_EQ(cut.config.num_layers, 1);
  EXPECT_TRUE(check_checkpoint(cut, out).ok());
  EXPECT_NE(find(expected_tensors(cut), "model.layers.1.eh_proj.weight"), nullptr);  // MTP follows the cut
  EXPECT_EQ(cut.config.mtp_layers, 1);

  // Without the MTP layer: the config says so, its weights are not written, the
  // checkpoint still matches its config, and the decoder layer is the same bytes.
  const auto bare = fresh_dir("cut_no_mtp");
  o.drop_mtp = true;
  const SynthResult r = write_synthetic_checkpoint(write_config("cut_no_mtp", kTinyDeepSeek), bare, o);
  const Model no_mtp = load_model(bare);
  EXPECT_EQ(no_mtp.config.num_layers, 1);
  EXPECT_EQ(no_mtp.config.mtp_layers, 0);
  EXPECT_EQ(find(expected_tensors(no_mtp), "model.layers.1.eh_proj.weight"), nullptr);
  EXPECT_TRUE(check_checkpoint(no_mtp, bare).ok());
  int64_t with_mtp_bytes = 0;
  for (const auto& t : expected_tensors(cut)) with_mtp_bytes += t.bytes();
  EXPECT_LT(r.bytes, with_mtp_bytes);
}

TEST(Check, NamesEachProblemAndNeverThrows) {
  const auto s = synth("broken", kTinyDeepSeek, 300'000);
  const auto shard = [&](int i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05d-of-", i);
    for (const auto& e : fs::directory_iterator(s.dir))
      if (e.path().filename().string().rfind(buf, 0) == 0) return e.path();
    return fs::path();
  };
  ASSERT_FALSE(shard(3).empty());

  // A removed tensor (the last one of shard 1).
  const fs::path holder = shard(1);
  const std::string removed = SafetensorsFile(holder).header().tensors.back().name;
  rewrite_shard(holder, [&](TensorToWrite& t) { return t.name != removed; });
  // A wrong shape (same bytes) and a wrong dtype (same bytes) in shard 2.
  std::string reshaped, retyped;
  rewrite_shard(shard(2), [&](TensorToWrite& t) {
    if (reshaped.empty() && t.shape.size() == 2 && t.shape[0] != t.shape[1]) {
      std::swap(t.shape[0], t.shape[1]);
      reshaped = t.name;
    } else if (retyped.empty() && t.dtype == DType::bf16) {
      t.dtype = DType::f16;
      retyped = t.name;
    }
    return true;
  });
  // A truncated shard and a corrupt header.
  const auto truncated = shard(3);
  fs::resize_file(truncated, fs::file_size(truncated) - 100);
  const auto corrupt = shard(4);
  {
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(9);
    f.write("#garbage#", 9);
  }

  CheckReport r;
  ASSERT_NO_THROW(r = check_checkpoint(s.model, s.dir));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.missing, removed));
  ASSERT_FALSE(reshaped.empty());
  ASSERT_FALSE(retyped.empty());
  EXPECT_TRUE(std::any_of(r.misshaped.begin(), r.misshaped.end(), [&](auto& m) { return m.name == reshaped; }));
  EXPECT_TRUE(std::any_of(r.wrong_dtype.begin(), r.wrong_dtype.end(),
                          [&](auto& m) { return m.name == retyped && m.expected == "BF16" && m.found == "F16"; }));
  EXPECT_TRUE(any_contains(r.file_errors, truncated.filename().string() + ": "));
  EXPECT_TRUE(any_contains(r.file_errors, "runs past the end of the file"));
  EXPECT_TRUE(any_contains(r.file_errors, corrupt.filename().string() + ": header is not valid JSON"));
  EXPECT_TRUE(any_contains(r.file_errors, "weight_map puts '" + removed + "'"));
}

TEST(Check, UnexpectedTensorAndMissingFiles) {
  const auto s = synth("extra", kTinyGptOss, 1'000'000'000);
  // Append one tensor the architecture does not have.
  auto tensors = copy_tensors(s.dir / "model.safetensors");
  tensors.push_back({"model.layers.0.mlp.experts.mystery", DType::bf16, {4}, nullptr});
  write_safetensors(s.dir / "extra.safetensors", tensors);
  fs::rename(s.dir / "extra.safetensors", s.dir / "model.safetensors");
  CheckReport r = check_checkpoint(s.model, s.dir);
  EXPECT_TRUE(contains(r.unexpected, "model.layers.0.mlp.experts.mystery"));

  fs::remove(s.dir / "model.safetensors");
  r = check_checkpoint(s.model, s.dir);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(any_contains(r.file_errors, "no model.safetensors"));
  EXPECT_EQ(r.missing.size(), static_cast<size_t>(r.tensors_expected));
}

// A wrapper's vision encoder is counted apart, not as unexpected; under another name
// prefix the same tensor is unexpected.
TEST(Check, WrapperVisionTensorsAreCountedApart) {
  const auto s = synth("kimi_vision", kTinyKimi, 1'000'000'000);
  auto tensors = copy_tensors(s.dir / "model.safetensors");
  tensors.push_back({"vision_tower.patch_embed.proj.weight", DType::bf16, {4, 4}, nullptr});
  tensors.push_back({"mm_projector.proj.0.weight", DType::bf16, {4}, nullptr});
  tensors.push_back({"model.visual.blocks.0.weight", DType::bf16, {4}, nullptr});  // Qwen's prefix: not Kimi's
  write_safetensors(s.dir / "more.safetensors", tensors);
  fs::rename(s.dir / "more.safetensors", s.dir / "model.safetensors");
  const CheckReport r = check_checkpoint(s.model, s.dir);
  EXPECT_EQ(r.other_modality_tensors, 2);
  EXPECT_EQ(r.other_modality_bytes, 4 * 4 * 2 + 4 * 2);
  EXPECT_EQ(r.unexpected, std::vector<std::string>{"model.visual.blocks.0.weight"});
  EXPECT_EQ(r.tensors_found, r.tensors_expected + 1);
}

// The tiny reference models made by tools/make_tiny_models.py with transformers:
// real save_pretrained output, so the expected tensor list is checked against
// the reference implementation's own naming and shapes, and the reader against
// files written by the reference safetensors writer.
TEST(Check, PassesOnEveryTinyReferenceFixture) {
  int families = 0;
  for (const auto& e : fs::directory_iterator(std::string(DAYZERO_FIXTURES_DIR) + "/tiny")) {
    if (!e.is_directory()) continue;
    SCOPED_TRACE(e.path().string());
    ++families;
    const Model m = load_model(e.path());
    const CheckReport r = check_checkpoint(m, e.path());
    EXPECT_TRUE(r.ok()) << (r.missing.empty() ? "" : "missing " + r.missing[0])
                        << (r.unexpected.empty() ? "" : " unexpected " + r.unexpected[0])
                        << (r.misshaped.empty() ? "" : " misshaped " + r.misshaped[0].name);
    SafetensorsFile golden(e.path() / "golden.safetensors");
    const TensorInfo* prefill = golden.find("prefill_logits");
    ASSERT_NE(prefill, nullptr);
    EXPECT_EQ(prefill->dtype, DType::f32);
    EXPECT_EQ(prefill->shape, (std::vector<int64_t>{12, m.config.vocab_size}));
  }
  // llama, qwen3, qwen3_moe, mixtral, deepseek_v3, gpt_oss; qwen3_5_moe, glm_moe_dsa, minimax_m2, kimi_k2_5
  EXPECT_EQ(families, 10);
}
