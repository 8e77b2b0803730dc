// The op inventory and the weight list must describe the same model: every weight
// is read by an op, GEMM FLOPs equal 2 x the matrix parameters a token touches,
// and KV / attention figures match hand arithmetic.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "model/model.h"

using namespace dayzero::model;

namespace {
Model load(const std::string& name) { return load_model(std::string(DAYZERO_DATA_DIR) + "/models/" + name); }

const char* kAll[] = {"Llama-3.1-8B",     "Qwen3-32B",   "Qwen3-30B-A3B", "Mixtral-8x7B",    "DeepSeek-V3",
                      "DeepSeek-V2-Lite", "gpt-oss-20b", "Qwen2.5-0.5B",  "Kimi-K2-Instruct"};

std::vector<const Op*> all_ops(const Model& m) {
  std::vector<const Op*> ops;
  for (const auto& op : m.pre_ops) ops.push_back(&op);
  for (const auto& l : m.layers)
    for (const auto& op : l.ops) ops.push_back(&op);
  for (const auto& op : m.post_ops) ops.push_back(&op);
  return ops;
}
}  // namespace

TEST(OpInventory, EveryWeightReadByExactlyOneOp) {
  for (const char* name : kAll) {
    SCOPED_TRACE(name);
    const Model m = load(name);
    std::map<std::string, int> reads;
    for (const Op* op : all_ops(m))
      for (const auto& w : op->weights) ++reads[w];
    for (const auto& w : m.weights) {
      // A tied head reads the embedding table a second time.
      const int expected = (m.config.tie_word_embeddings && w.name == "model.embed_tokens.weight") ? 2 : 1;
      EXPECT_EQ(reads[w.name], expected) << w.name;
    }
    EXPECT_EQ(reads.size(), m.weights.size());
  }
}

TEST(OpInventory, OpParamsSumToModelParams) {
  for (const char* name : kAll) {
    SCOPED_TRACE(name);
    const Model m = load(name);
    int64_t params = 0, active = 0, bytes = 0;
    for (const Op* op : all_ops(m)) {
      if (op->name == "lm_head" && m.config.tie_word_embeddings) continue;  // same table as the embedding
      params += op->params;
      active += op->active_params;
      bytes += op->weight_bytes;
    }
    EXPECT_EQ(params, m.params_total() + m.params_mtp());
    EXPECT_EQ(bytes, m.weights_bytes(WeightPrecision::checkpoint) + m.weights_bytes(WeightPrecision::checkpoint, true));
    int64_t mtp_active = 0;
    for (const auto& l : m.layers)
      if (l.mtp)
        for (const auto& op : l.ops) mtp_active += op.active_params;
    EXPECT_EQ(active - mtp_active, m.params_active());
  }
}

// Each matrix parameter a token touches costs one multiply-add: 2 FLOPs.
TEST(OpInventory, GemmFlopsAreTwiceActiveMatrixParams) {
  for (const char* name : kAll) {
    SCOPED_TRACE(name);
    const Model m = load(name);
    int64_t flops = 0;
    for (const auto& l : m.layers) {
      if (l.mtp) continue;
      for (const auto& op : l.ops)
        if (op.kind == OpKind::gemm || op.kind == OpKind::expert_gemm || op.kind == OpKind::router)
          flops += op.flops_per_token();
    }
    flops += m.post_ops.back().flops_per_token();  // LM head
    int64_t matrix_active = 0;
    for (const auto& w : m.weights) {
      // Projection matrices, router and head matrices; not biases, norms or embeddings.
      const bool gemm_matrix = w.matrix || (w.shape.size() == 2 && (w.part == Part::router || w.part == Part::head));
      if (w.mtp || !gemm_matrix) continue;
      matrix_active += w.part == Part::experts ? w.params() / w.experts * m.config.moe.experts_per_token : w.params();
    }
    if (m.config.tie_word_embeddings) matrix_active += m.params_embedding();
    EXPECT_EQ(flops, 2 * matrix_active);
  }
}

TEST(OpInventory, LlamaHandComputed) {
  const Model m = load("Llama-3.1-8B");
  const Layer& l = m.layers[0];
  const Op* q = nullptr;
  const Op* attn = nullptr;
  for (const auto& op : l.ops) {
    if (op.name == "q_proj") q = &op;
    if (op.kind == OpKind::attention) attn = &op;
  }
  ASSERT_TRUE(q && attn);
  EXPECT_EQ(q->n, 4096);
  EXPECT_EQ(q->k, 4096);
  EXPECT_EQ(q->flops_per_token(), 2LL * 4096 * 4096);         // 33,554,432
  EXPECT_EQ(q->weight_bytes, 4096LL * 4096 * 2);              // BF16
  EXPECT_EQ(attn->attn.flops_per_ctx_token(), 4 * 32 * 128);  // QK^T + PV: 2*32*128 each
  EXPECT_EQ(attn->attn.kv_elems_per_token, 2 * 8 * 128);      // K and V, 8 KV heads
  // KV per token: 2 * 8 heads * 128 dims * 32 layers * 2 bytes = 131,072.
  EXPECT_EQ(m.kv_bytes_per_token(2), 131'072);
  EXPECT_EQ(m.kv_bytes_per_token(1), 65'536);
  EXPECT_EQ(m.kv_cache_bytes(1000, 2), 131'072'000);
}

TEST(OpInventory, DeepSeekMlaHandComputed) {
  const Model m = load("DeepSeek-V3");
  EXPECT_FALSE(m.layers[2].moe);
  EXPECT_TRUE(m.layers[3].moe);
  EXPECT_TRUE(m.layers[61].mtp);
  // MLA caches the latent (512) + decoupled rope key (64) per layer, shared by all
  // heads: 576 * 61 layers * 2 bytes = 70,272 bytes per token (MTP not included).
  EXPECT_EQ(m.kv_bytes_per_token(2), 576 * 61 * 2);
  for (const auto& op : m.layers[3].ops) {
    if (op.kind == OpKind::attention) {
      EXPECT_EQ(op.attn.flops_per_ctx_token(false), 2 * 128 * 192 + 2 * 128 * 128);
      EXPECT_EQ(op.attn.flops_per_ctx_token(true), 2 * 128 * (512 + 64) + 2 * 128 * 512);
    }
    if (op.name == "experts.gate_proj") {
      EXPECT_EQ(op.experts, 256);
      EXPECT_EQ(op.active_experts, 8);
      EXPECT_EQ(op.flops_per_token(), 2LL * 2048 * 7168 * 8);
      EXPECT_EQ(op.params, 256LL * 2048 * 7168);
      EXPECT_EQ(op.weight_bytes, 256LL * (2048 * 7168 + 16 * 56 * 4));  // FP8 + block scales
    }
  }
}

TEST(OpInventory, GptOssSlidingLayersCapKvAtWindow) {
  const Model m = load("gpt-oss-20b");
  EXPECT_EQ(m.config.sliding_window, 128);
  EXPECT_EQ(m.layers[0].attention, LayerAttention::sliding);
  EXPECT_EQ(m.layers[1].attention, LayerAttention::full);
  // Per layer and token: K and V, 8 KV heads x 64 dims = 1,024 elements = 2,048 BF16 bytes.
  // 131,072 tokens: 12 full layers x 131,072 x 2,048 + 12 sliding layers x 128 x 2,048.
  EXPECT_EQ(m.kv_cache_bytes(131072, 2), 12LL * 131072 * 2048 + 12LL * 128 * 2048);
  EXPECT_EQ(m.kv_cache_bytes(100, 2), 24LL * 100 * 2048);  // below the window every layer grows
  EXPECT_EQ(m.kv_bytes_per_token(2), 24 * 2048);
}

// The one sharding truth: how TP splits each op, as the simulator costs it and the
// executor shards it (Megatron-LM's column / row parallel linear layers; vLLM's
// VocabParallelEmbedding and ParallelLMHead; MLA's latent projections replicated).
TEST(OpInventory, TpSplitOfEveryOp) {
  auto splits = [](const Model& m) {
    std::map<std::string, TpSplit> s;
    for (const Op* op : all_ops(m))
      if (!op->weights.empty() || op->kind == OpKind::attention) s[op->name] = op->tp_split;
    return s;
  };
  const auto llama = splits(load("Llama-3.1-8B"));
  const std::map<std::string, TpSplit> want_llama = {
      {"embed_tokens", TpSplit::vocab}, {"input_layernorm", TpSplit::replicated},
      {"q_proj", TpSplit::column},      {"k_proj", TpSplit::kv_heads},
      {"v_proj", TpSplit::kv_heads},    {"attention", TpSplit::column},
      {"o_proj", TpSplit::row},         {"post_attention_layernorm", TpSplit::replicated},
      {"gate_proj", TpSplit::column},   {"up_proj", TpSplit::column},
      {"down_proj", TpSplit::row},      {"norm", TpSplit::replicated},
      {"lm_head", TpSplit::vocab}};
  EXPECT_EQ(llama, want_llama);

  const auto ds = splits(load("DeepSeek-V3"));
  EXPECT_EQ(ds.at("q_a_proj"), TpSplit::replicated);
  EXPECT_EQ(ds.at("kv_a_proj_with_mqa"), TpSplit::replicated);
  EXPECT_EQ(ds.at("q_b_proj"), TpSplit::column);
  EXPECT_EQ(ds.at("kv_b_proj"), TpSplit::column);
  EXPECT_EQ(ds.at("o_proj"), TpSplit::row);
  EXPECT_EQ(ds.at("router"), TpSplit::replicated);
  EXPECT_EQ(ds.at("experts.gate_proj"), TpSplit::column);
  EXPECT_EQ(ds.at("experts.down_proj"), TpSplit::row);
  EXPECT_EQ(ds.at("shared_experts.up_proj"), TpSplit::column);
  EXPECT_EQ(ds.at("shared_experts.down_proj"), TpSplit::row);
  EXPECT_EQ(ds.at("eh_proj"), TpSplit::replicated);
  EXPECT_EQ(ds.at("shared_head"), TpSplit::vocab);

  const auto mixtral = splits(load("Mixtral-8x7B"));
  EXPECT_EQ(mixtral.at("experts.w1"), TpSplit::column);
  EXPECT_EQ(mixtral.at("experts.w3"), TpSplit::column);
  EXPECT_EQ(mixtral.at("experts.w2"), TpSplit::row);
  const auto oss = splits(load("gpt-oss-20b"));
  EXPECT_EQ(oss.at("attention"), TpSplit::column);  // its sinks: one per head, split with the heads
  EXPECT_EQ(oss.at("experts.gate_up_proj"), TpSplit::column);
  EXPECT_EQ(oss.at("experts.down_proj"), TpSplit::row);
}
