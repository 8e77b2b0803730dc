// Block-scaled FP8 GEMMs under an engine that quantizes their activations in kernels of
// their own (EngineKernels::separate_activation_quant): the GEMM inputs a layer counts,
// and what the step model adds for them, against hand arithmetic.
#include <gtest/gtest.h>

#include <tuple>

#include "helpers.h"

namespace dayzero::simulate {
namespace {

using testing::expect_close;
using testing::load_cluster;
using testing::load_model;
using testing::plan;

const GemmInputs& inputs(const LayerClassCosts& lc, WeightClass w) { return lc.gemm_inputs[static_cast<size_t>(w)]; }

// Llama-3.1-8B (hidden 4096, 32 heads x 128, MLP 14336): q / k / v read the normed
// hidden state (one input), o_proj the attention's output (split by TP), gate / up the
// normed hidden state again, down_proj the MLP's activation (split by TP).
TEST(ActivationQuant, GemmInputsOfADenseLayer) {
  const ModelCosts mc = model_costs(load_model("Llama-3.1-8B"));
  ASSERT_EQ(mc.classes.size(), 1u);
  const LayerClassCosts& lc = mc.classes[0];
  EXPECT_EQ(inputs(lc, WeightClass::attn_sharded), (GemmInputs{2, 4096, 4096, 0}));
  EXPECT_EQ(inputs(lc, WeightClass::attn_kv), (GemmInputs{}));  // k / v share q's input
  EXPECT_EQ(inputs(lc, WeightClass::dense_mlp), (GemmInputs{2, 4096, 14336, 0}));
  EXPECT_EQ(inputs(lc, WeightClass::expert), (GemmInputs{}));
  EXPECT_FALSE(mc.block_fp8_activations[static_cast<size_t>(model::WeightPrecision::checkpoint)]);  // BF16
  EXPECT_TRUE(mc.block_fp8_activations[static_cast<size_t>(model::WeightPrecision::fp8)]);
  EXPECT_FALSE(mc.block_fp8_activations[static_cast<size_t>(model::WeightPrecision::nvfp4)]);
}

// DeepSeek-V3's MoE layer (hidden 7168; q_lora 1536, kv_lora 512, 128 heads x 128;
// experts and the shared expert 2048 wide): q_a and kv_a read the hidden state but are
// not neighbours (q_a_layernorm and q_b sit between), so each counts; the routed
// experts' gate / up read the token's hidden state, their down_proj a (token, expert)
// pair's activation. Its checkpoint's 128 x 128 blocks count as block FP8.
TEST(ActivationQuant, GemmInputsOfAnMlaMoeLayer) {
  const ModelCosts mc = model_costs(load_model("DeepSeek-V3"));
  const LayerClassCosts* moe = nullptr;
  for (const auto& lc : mc.classes)
    if (lc.moe && lc.count > 0) moe = &lc;
  ASSERT_NE(moe, nullptr);
  EXPECT_EQ(inputs(*moe, WeightClass::attn_replicated), (GemmInputs{2, 7168 + 7168, 0, 0}));      // q_a, kv_a
  EXPECT_EQ(inputs(*moe, WeightClass::attn_sharded), (GemmInputs{3, 1536 + 512, 128 * 128, 0}));  // q_b, kv_b, o
  EXPECT_EQ(inputs(*moe, WeightClass::expert), (GemmInputs{2, 7168, 0, 2048}));
  EXPECT_EQ(inputs(*moe, WeightClass::shared_experts), (GemmInputs{2, 7168, 2048, 0}));
  EXPECT_TRUE(mc.block_fp8_activations[static_cast<size_t>(model::WeightPrecision::checkpoint)]);
}

// A decode step of 8 sequences of Llama-3.1-8B at FP8 on one H100: each of the 32
// layers launches 4 quantizations more (kernel_overhead_s each) and reads / writes its
// 4 inputs, 4096 + 4096 + 4096 + 14336 elements per token, at 2 + 1 + 4 / 128 bytes
// per element (BF16 in, FP8 out, an F32 scale per 128), at the element-wise rate.
// A BF16 plan has nothing to quantize.
// Llama-3.1-8B at FP8 (attention and MLP) on one H100, 8 sequences.
struct Fp8Llama {
  model::Model m = load_model("Llama-3.1-8B");
  topology::Cluster c = load_cluster("h100x8");
  plan::Plan p = [] {
    plan::Plan q = plan(1);
    q.workload.batch = 8;
    q.dtypes.attention = q.dtypes.dense_mlp = model::WeightPrecision::fp8;
    return q;
  }();
  Fp8Llama() { plan::validate_plan(p, m, c.num_devices(), "test"); }
};

TEST(ActivationQuant, DecodeStepHandComputed) {
  const Fp8Llama f;
  const auto& [m, c, p] = std::tie(f.m, f.c, f.p);
  Simulator sim(m, c);
  StepBatch b;
  b.decode_contexts.assign(8, 1500);
  const StepTime off = sim.step_time(*sim.prepare(p), b);
  const StepTime on = sim.step_time(*sim.prepare(p, {true}), b);
  const Efficiency& e = sim.efficiency();
  const double bytes = 32 * 8 * (4096.0 + 4096 + 4096 + 14336) * (2 + 1 + 4.0 / 128);
  const double elementwise_s = bytes / (c.device_spec().mem_bw_Bps * e.elementwise_memory);
  const double launches_s = 32 * 4 * e.kernel_overhead_s;
  expect_close(on.by_kind_s.at(CostKind::kernel_overhead) - off.by_kind_s.at(CostKind::kernel_overhead), launches_s,
               1e-9);
  expect_close(on.by_kind_s.at(CostKind::elementwise) - off.by_kind_s.at(CostKind::elementwise), elementwise_s, 1e-9);
  expect_close(on.time_s - off.time_s, launches_s + elementwise_s, 1e-9);

  plan::Plan bf16 = p;
  bf16.dtypes.attention = bf16.dtypes.dense_mlp = model::WeightPrecision::bf16;
  EXPECT_EQ(sim.step_time(*sim.prepare(bf16, {true}), b).time_s, sim.step_time(*sim.prepare(bf16), b).time_s);
}

// The analytic prediction takes the same kernels through SimulateOptions: its decode
// step is the serving step's at the mean context.
TEST(ActivationQuant, PredictionTakesTheEngineKernels) {
  const Fp8Llama f;
  const auto& [m, c, p] = std::tie(f.m, f.c, f.p);
  Simulator sim(m, c);
  SimulateOptions so;
  so.kernels.separate_activation_quant = true;
  const Prediction pred = sim.simulate(p, so);
  StepBatch b;
  b.decode_contexts.assign(8, p.workload.input_len + p.workload.output_len / 2 - 1);
  expect_close(pred.decode.time_s, sim.step_time(*sim.prepare(p, {true}), b).time_s, 1e-12);
  EXPECT_GT(pred.decode.time_s, sim.simulate(p).decode.time_s);
}

}  // namespace
}  // namespace dayzero::simulate
