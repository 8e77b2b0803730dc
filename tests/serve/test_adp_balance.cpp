// TensorRT-LLM's attention-DP balancing in the serving simulation (EngineProfile::
// adp_balance): new prompts wait until every rank has one, or for the timeout, unless a
// rank has nothing to decode. Checked at its limits, where the rule says exactly what
// happens, and in between against the bound the timeout sets.
#include <gtest/gtest.h>

#include "../simulate/helpers.h"
#include "serve/simulation.h"

namespace dayzero::serve {
namespace {

using simulate::testing::load_cluster;
using simulate::testing::load_model;

struct AdpFixture {
  model::Model m = load_model("Qwen3-30B-A3B");
  topology::Cluster c = load_cluster("h100x8");
  simulate::Simulator sim{m, c};
  plan::Plan p = simulate::testing::plan(1, 8, 1, 8);  // attention DP 8, experts EP 8
};

ServeOptions adp_options(int64_t concurrency, int64_t input, int64_t output, AttentionDpBalance balance) {
  ServeOptions o;
  o.engine = default_profile(Engine::trtllm);
  o.engine.step_overhead_s = 0;
  o.engine.adp_balance = balance;
  o.client.concurrency = concurrency;
  o.client.requests = 20 * concurrency;
  o.client.shape = {input, output, 0};
  o.client.range_ratio = 0.8;  // lengths drawn from 0.8-1.0 of these, as the benchmark clients do
  return o;
}

// A timeout of one step releases the prompts at every step: the simulation is the one
// without balancing, step for step.
TEST(AdpBalance, ATimeoutOfOneStepChangesNothing) {
  AdpFixture f;
  const ServeResult off = simulate_serving(f.sim, f.p, adp_options(64, 512, 256, {}));
  const ServeResult on = simulate_serving(f.sim, f.p, adp_options(64, 512, 256, {true, 1, 0}));
  EXPECT_DOUBLE_EQ(on.ttft_s.mean, off.ttft_s.mean);
  EXPECT_DOUBLE_EQ(on.tpot_s.mean, off.tpot_s.mean);
  EXPECT_EQ(on.steps, off.steps);
}

// One request a rank: a rank whose request finished has nothing to decode when the next
// arrives, and a rank with nothing to decode releases the prompts at once.
TEST(AdpBalance, ARankWithNothingToDecodeReleasesThePrompts) {
  AdpFixture f;
  const ServeResult off = simulate_serving(f.sim, f.p, adp_options(8, 512, 64, {}));
  const ServeResult on = simulate_serving(f.sim, f.p, adp_options(8, 512, 64, {true, 60, 0}));
  EXPECT_DOUBLE_EQ(on.ttft_s.mean, off.ttft_s.mean);
  EXPECT_EQ(on.steps, off.steps);
}

// 16 requests a rank, each of 256 output tokens: a prompt arrives on a rank about every
// 16 steps, so the other seven rarely all hold one and most prompts wait for the
// timeout's release, which comes every 60 steps: about half of that on average, never
// more. TTFT grows by a few steps at least and by at most 60 decode steps; TPOT, which
// the held prompts no longer interrupt one by one, by little.
TEST(AdpBalance, PromptsWaitAtMostTheTimeout) {
  AdpFixture f;
  const ServeResult off = simulate_serving(f.sim, f.p, adp_options(128, 512, 256, {}));
  const ServeResult on = simulate_serving(f.sim, f.p, adp_options(128, 512, 256, {true, 60, 0}));
  const double added_s = on.ttft_s.mean - off.ttft_s.mean;
  EXPECT_GT(added_s, 5 * on.tpot_s.mean);
  EXPECT_LT(added_s, 60 * on.tpot_s.mean);
  EXPECT_NEAR(on.tpot_s.mean, off.tpot_s.mean, 0.15 * off.tpot_s.mean);
  // A shorter timeout waits less.
  const ServeResult shorter = simulate_serving(f.sim, f.p, adp_options(128, 512, 256, {true, 20, 0}));
  EXPECT_LT(shorter.ttft_s.mean, on.ttft_s.mean);
  EXPECT_GT(shorter.ttft_s.mean, off.ttft_s.mean);
}

// A dense model's data-parallel replicas are engines of their own (TensorRT-LLM runs
// attention DP for MoE models only; deploy/trtllm.cpp): nothing to balance.
TEST(AdpBalance, ADenseModelsReplicasAreNotBalanced) {
  AdpFixture f;
  f.m = load_model("Llama-3.1-8B");
  simulate::Simulator dense{f.m, f.c};
  const plan::Plan p = simulate::testing::plan(1, 8);
  const ServeResult off = simulate_serving(dense, p, adp_options(128, 512, 256, {}));
  const ServeResult on = simulate_serving(dense, p, adp_options(128, 512, 256, {true, 60, 0}));
  EXPECT_DOUBLE_EQ(on.ttft_s.mean, off.ttft_s.mean);
  EXPECT_EQ(on.steps, off.steps);
}

}  // namespace
}  // namespace dayzero::serve
