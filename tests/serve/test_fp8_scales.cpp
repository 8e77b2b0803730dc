// Which measured runs' FP8 weights carry one scale per tensor (serve/bench_loader.h,
// per_tensor_fp8), and that their engine profile then quantizes no block-FP8 activations;
// the serving simulation takes the engine's kernels into its steps.
#include <gtest/gtest.h>

#include "../simulate/helpers.h"
#include "serve/bench_loader.h"
#include "serve/simulation.h"

namespace dayzero::serve {
namespace {

using simulate::testing::load_cluster;
using simulate::testing::load_model;

BenchRow row(const char* gemm, const char* moe) {
  BenchRow r;
  r.gemm_quant = gemm;
  r.moe_quant = moe;
  return r;
}

// aiconfigurator's modes: `fp8` is per-tensor FP8, `fp8_block` 128 x 128 blocks (either
// column says so); a checkpoint stored in FP8 keeps its own blocks whatever the row says.
TEST(BenchFp8Scales, PerTensorOnlyForConvertedWeightsNamedFp8) {
  const model::Model llama = load_model("Llama-3.1-70B");     // BF16 checkpoint
  const model::Model qwen = load_model("Qwen3.5-397B-A17B");  // BF16 checkpoint
  const model::Model minimax = load_model("MiniMax-M2.5");    // FP8, 128 x 128 blocks
  EXPECT_TRUE(detail::per_tensor_fp8(row("fp8", "fp8"), llama));
  EXPECT_TRUE(detail::per_tensor_fp8(row("fp8_static", ""), llama));
  EXPECT_FALSE(detail::per_tensor_fp8(row("fp8", "fp8_block"), qwen));  // InferenceX's Qwen3.5 FP8
  EXPECT_FALSE(detail::per_tensor_fp8(row("fp8_block", "fp8_block"), llama));
  EXPECT_FALSE(detail::per_tensor_fp8(row("fp8", "fp8"), minimax));
  EXPECT_FALSE(detail::per_tensor_fp8(row("", ""), llama));
  EXPECT_FALSE(detail::per_tensor_fp8(row("nvfp4", "nvfp4"), llama));
  EngineProfile v = default_profile(Engine::vllm);
  detail::apply_fp8_scales(row("fp8", "fp8_block"), qwen, v);
  EXPECT_TRUE(v.separate_activation_quant);
  detail::apply_fp8_scales(row("fp8", "fp8"), llama, v);
  EXPECT_FALSE(v.separate_activation_quant);
}

// One request of Llama-3.1-8B at FP8 on one H100, served by vLLM with and without the
// quantization kernels: each decode step is longer by the step model's difference for
// one sequence, so the TPOT is.
TEST(BenchFp8Scales, ServingTakesTheEnginesKernels) {
  const model::Model m = load_model("Llama-3.1-8B");
  const topology::Cluster c = load_cluster("h100x8");
  plan::Plan p = simulate::testing::plan(1);
  p.dtypes.attention = p.dtypes.dense_mlp = model::WeightPrecision::fp8;
  plan::validate_plan(p, m, c.num_devices(), "test");
  simulate::Simulator sim(m, c);
  ServeOptions o;
  o.client.concurrency = 1;
  o.client.requests = 1;
  o.client.warmup = 0;
  o.client.shape = {256, 64, 0};
  o.engine = default_profile(Engine::vllm);
  const ServeResult on = simulate_serving(sim, p, o);
  o.engine.separate_activation_quant = false;
  const ServeResult off = simulate_serving(sim, p, o);
  simulate::StepBatch one;
  one.decode_contexts = {300};
  const double step_on = sim.step_time(*sim.prepare(p, {true}), one).time_s;
  const double step_off = sim.step_time(*sim.prepare(p), one).time_s;
  EXPECT_GT(step_on, step_off);
  EXPECT_NEAR(on.tpot_s.mean - off.tpot_s.mean, step_on - step_off, 0.02 * (step_on - step_off));
}

}  // namespace
}  // namespace dayzero::serve
