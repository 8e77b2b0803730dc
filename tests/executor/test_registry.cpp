// The op registry: one kernel table per backend, what each model needs, costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "executor/registry.h"
#include "model/model.h"

namespace dayzero::executor {
namespace {
using model::OpKind;

const std::string kTiny = std::string(DAYZERO_FIXTURES_DIR) + "/tiny/";
const char* const kFamilies[] = {"llama",   "qwen3",       "qwen3_moe",   "mixtral",    "deepseek_v3",
                                 "gpt_oss", "qwen3_5_moe", "glm_moe_dsa", "minimax_m2", "kimi_k2_5"};

bool needs(const std::vector<OpVariant>& ops, OpKind kind, const std::string& variant) {
  return std::find(ops.begin(), ops.end(), OpVariant{kind, variant}) != ops.end();
}

const BackendInfo& backend(const std::string& name) {
  for (const auto& b : backend_registry())
    if (b.name == name) return b;
  throw std::runtime_error("no backend " + name);
}

TEST(Registry, CpuCoversEveryTinyFixture) {
  for (const char* family : kFamilies) {
    const model::Model m = model::load_model(kTiny + family);
    const auto ops = required_ops(m);
    EXPECT_GE(ops.size(), 6u) << family;  // embedding, norm, gemm, rope, attention, activation at least
    for (const auto& op : ops) EXPECT_TRUE(backend("cpu").supports(op)) << family << " " << op.to_string();
    for (const auto& c : op_coverage(m)) EXPECT_EQ(c.backends, std::vector<std::string>{"cpu"}) << family;
  }
}

TEST(Registry, VariantsFollowTheConfig) {
  const auto llama = required_ops(model::load_model(kTiny + "llama"));
  EXPECT_TRUE(needs(llama, OpKind::rope, "llama3"));
  EXPECT_TRUE(needs(llama, OpKind::attention, "gqa"));
  EXPECT_TRUE(needs(llama, OpKind::gemm, "f32"));
  EXPECT_FALSE(needs(llama, OpKind::router, "softmax_topk"));
  const auto ds = required_ops(model::load_model(kTiny + "deepseek_v3"));
  EXPECT_TRUE(needs(ds, OpKind::attention, "mla"));
  EXPECT_TRUE(needs(ds, OpKind::rope, "yarn"));
  EXPECT_TRUE(needs(ds, OpKind::router, "sigmoid_group_topk"));
  EXPECT_TRUE(needs(ds, OpKind::moe_combine, "weighted_sum"));
  const auto oss = required_ops(model::load_model(kTiny + "gpt_oss"));
  EXPECT_TRUE(needs(oss, OpKind::attention, "gqa+sliding+sinks"));  // layer 0
  EXPECT_TRUE(needs(oss, OpKind::attention, "gqa+sinks"));          // layer 1
  EXPECT_TRUE(needs(oss, OpKind::activation, "swiglu_clamped"));
  EXPECT_TRUE(needs(oss, OpKind::router, "gpt_oss_topk_softmax"));
  const auto mix = required_ops(model::load_model(kTiny + "mixtral"));
  EXPECT_TRUE(needs(mix, OpKind::rope, "default"));
  EXPECT_TRUE(needs(mix, OpKind::router, "softmax_topk"));
  // Ops come in kind order, each once.
  EXPECT_TRUE(std::is_sorted(ds.begin(), ds.end(), [](auto& a, auto& b) { return a.kind < b.kind; }));
}

TEST(Registry, PublishedQuantizedCheckpoints) {
  const std::string models = std::string(DAYZERO_DATA_DIR) + "/models/";
  const auto v3 = required_ops(model::load_model(models + "DeepSeek-V3"));
  EXPECT_TRUE(needs(v3, OpKind::gemm, "fp8_block"));
  EXPECT_TRUE(needs(v3, OpKind::expert_gemm, "fp8_block"));
  const auto oss = required_ops(model::load_model(models + "gpt-oss-120b"));
  EXPECT_TRUE(needs(oss, OpKind::expert_gemm, "mxfp4"));
  EXPECT_TRUE(needs(oss, OpKind::gemm, "bf16"));
  for (const auto& op : v3) EXPECT_TRUE(backend("cpu").supports(op)) << op.to_string();
  for (const auto& op : oss) EXPECT_TRUE(backend("cpu").supports(op)) << op.to_string();
  // DeepSeek-V2-Lite routes with softmax + greedy top-k: the plain softmax kernel.
  const auto v2 = required_ops(model::load_model(models + "DeepSeek-V2-Lite"));
  EXPECT_TRUE(needs(v2, OpKind::router, "softmax_topk"));
}

TEST(Registry, OneTableDispatchesAndLists) {
  const auto table = cpu_kernel_table();
  const BackendInfo& cpu = backend("cpu");
  EXPECT_TRUE(cpu.available);
  ASSERT_EQ(cpu.ops.size(), table.size());
  for (size_t i = 0; i < table.size(); ++i)
    EXPECT_EQ(cpu.ops[i], (OpVariant{table[i].kind, std::string(table[i].variant)}));
  EXPECT_EQ(cpu_kernel<GemmFn>(OpKind::gemm, "fp8_block"), &linear_dequant);
  EXPECT_EQ(cpu_kernel<GemmFn>(OpKind::gemm, "f32"), &linear_f32);
  EXPECT_EQ(cpu_kernel<RopeTableFn>(OpKind::rope, "yarn"), &rope_yarn);
  EXPECT_EQ(cpu_kernel<MlaFn>(OpKind::attention, "mla"), &mla_attention);
  try {
    cpu_kernel<GemmFn>(OpKind::gemm, "nvfp4");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'cpu' has no kernel for gemm:nvfp4"), std::string::npos);
  }
  EXPECT_THROW(cpu_kernel<GemmFn>(OpKind::rope, "yarn"), std::logic_error);  // wrong signature
  const BackendInfo& cuda = backend("cuda");
  EXPECT_FALSE(cuda.available);
  EXPECT_TRUE(cuda.ops.empty());
}

TEST(Registry, CostsReuseTheOpInventory) {
  const model::Model m = model::load_model(kTiny + "llama");
  const model::Op* q = nullptr;
  const model::Op* attn = nullptr;
  for (const auto& op : m.layers[0].ops) {
    if (op.name == "q_proj") q = &op;
    if (op.kind == OpKind::attention) attn = &op;
  }
  ASSERT_TRUE(q && attn);
  const CostShape s{3, 10, 4};
  const OpCost c = find_kernel(cpu_kernel_table(), "cpu", OpKind::gemm, "f32").cost(*q, s);
  EXPECT_EQ(c.flops, 3 * 2 * 64 * 64);                  // tokens * 2 * n * k (q_proj: 4 heads x 16 from 64)
  EXPECT_EQ(c.bytes, 64 * 64 * 4 + 3 * (64 + 64) * 4);  // F32 weight + activations in and out
  const OpCost a = op_cost(*attn, s);
  EXPECT_EQ(a.flops, 3 * 10 * attn->attn.flops_per_ctx_token());  // 3 queries x 10 context tokens
  EXPECT_EQ(a.flops, 3 * 10 * (2 * 4 * 16 + 2 * 4 * 16));
}

// The 2026 families' costs on the tiny fixtures: GLM-5's indexer (8 heads of 32: 2 x 8 x 32 + 2 x 8 = 528
// FLOPs per query and token seen) and its MLA capped at index_topk 4; Qwen3.5's delta-net adds
// its state (4 value heads x 16 x 16 float32) read and written once per call.
// MLA expanded at any shape (the CUDA backend's form): the op's attention plus kv_b over
// the context. Tiny DeepSeek-V3: 4 heads, nope 32, rope 16, v 24, rank 32.
TEST(Registry, MlaExpandedCost) {
  const model::Model ds = model::load_model(kTiny + "deepseek_v3");
  const model::Op* attn = nullptr;
  for (const auto& op : ds.layers[0].ops)
    if (op.kind == OpKind::attention) attn = &op;
  ASSERT_TRUE(attn);
  const CostShape decode{1, 10, 4};
  const OpCost base = op_cost(*attn, decode), expanded = mla_expanded_cost(*attn, decode);
  EXPECT_EQ(expanded.flops - base.flops, 2 * 10 * 32 * 4 * (32 + 24));  // 143,360
  EXPECT_EQ(expanded.bytes - base.bytes, 10 * 4 * (32 + 16 + 24) * 4);  // 11,520: keys and values
  EXPECT_NE(mla_cost(*attn, decode).flops, expanded.flops);             // the CPU absorbs at decode
  const CostShape prefill{10, 10, 4};                                   // and expands at prefill
  EXPECT_EQ(mla_cost(*attn, prefill).flops, mla_expanded_cost(*attn, prefill).flops);
}

TEST(Registry, SparseAndLinearAttentionCosts) {
  const model::Model glm = model::load_model(kTiny + "glm_moe_dsa");
  const model::Op *ix = nullptr, *attn = nullptr;
  for (const auto& op : glm.layers[1].ops) {
    if (op.kind == OpKind::indexer) ix = &op;
    if (op.kind == OpKind::attention) attn = &op;
  }
  ASSERT_TRUE(ix && attn);
  const CostShape s{3, 10, 4};
  const OpCost c = indexer_cost(*ix, s);
  EXPECT_EQ(c.flops, 3 * 10 * (2 * 8 * 32 + 2 * 8));
  EXPECT_EQ(c.bytes, 10 * 32 * 4 + 3 * ix->k * 4);  // each cached key once, the queries
  EXPECT_EQ(attn->attn.topk, 4);
  const OpCost sparse = sparse_mla_cost(*attn, s), dense4 = mla_cost(*attn, CostShape{3, 4, 4});
  EXPECT_EQ(sparse.flops, dense4.flops);
  EXPECT_EQ(sparse.bytes, dense4.bytes);
  const model::Model qwen = model::load_model(kTiny + "qwen3_5_moe");
  for (const auto& op : qwen.layers[0].ops)
    if (op.kind == OpKind::linear_attention) {
      EXPECT_EQ(linear_attention_cost(op, s).bytes - op_cost(op, s).bytes, 2 * 4 * 16 * 16 * 4);
      return;
    }
  ADD_FAILURE() << "qwen3_5_moe layer 0 has no linear_attention op";
}

TEST(Registry, RopeConfigParsed) {
  const auto llama = model::load_config(kTiny + "llama");
  EXPECT_EQ(llama.rope.type, "llama3");
  EXPECT_EQ(llama.rope.theta, 500000.0);
  EXPECT_EQ(llama.rope.factor, 8.0);
  EXPECT_EQ(llama.rope.original_max_position_embeddings, 64);
  EXPECT_FALSE(llama.rope.interleaved);
  const auto qwen = model::load_config(kTiny + "qwen3");
  EXPECT_EQ(qwen.rope.type, "default");  // rope_scaling: null
  EXPECT_EQ(qwen.rope.theta, 1e6);
  const auto ds = model::load_config(kTiny + "deepseek_v3");
  EXPECT_EQ(ds.rope.type, "yarn");
  EXPECT_TRUE(ds.rope.interleaved);
  EXPECT_EQ(ds.rope.mscale_all_dim, 1.0);
  // MLA softmax scale: 48^-0.5 * (0.1 ln 40 + 1)^2 = 0.1443376 * 1.8738539 = 0.2704675
  EXPECT_NEAR(mla_softmax_scale(ds), 0.2704675, 1e-6);
  const auto oss = model::load_config(kTiny + "gpt_oss");
  EXPECT_FALSE(oss.rope.truncate);
  EXPECT_EQ(oss.rope.theta, 150000.0);
}

}  // namespace
}  // namespace dayzero::executor
