// Speculative decoding in the serving simulation, against hand-computed cases: with
// acceptance 0 every decode step is a verify step (and its drafting) that emits one
// token, so it costs more than plain decoding and gains nothing; with acceptance 1
// every step emits draft_tokens + 1.
#include <gtest/gtest.h>

#include <cmath>

#include "../simulate/helpers.h"
#include "serve/simulation.h"

namespace dayzero::serve {
namespace {

using simulate::testing::expect_close;
using simulate::testing::load_cluster;
using simulate::testing::load_model;

struct Fixture {
  model::Model m = load_model("Llama-3.1-8B");
  topology::Cluster c = load_cluster("h100x1");
  simulate::Simulator sim{m, c};
  plan::Plan p = simulate::testing::plan(1);
};

ServeOptions one_request(int64_t input, int64_t output) {
  ServeOptions o;
  o.engine = default_profile(Engine::vllm);
  o.engine.step_overhead_s = 0;
  o.client.concurrency = 1;
  o.client.requests = 1;
  o.client.shape = {input, output, 0};
  return o;
}

// A step as the simulation costs it: the step model's time, and the drafting after it.
double step_s(Fixture& f, const plan::Plan& p, const simulate::StepBatch& b) {
  plan::Plan run = p;
  run.kv_block_tokens = default_profile(Engine::vllm).kv_block_tokens;
  const auto prepared = f.sim.prepare(run);
  return f.sim.step_time(*prepared, b).time_s + f.sim.draft_time(*prepared, b).time_s;
}

simulate::StepBatch verify(int64_t ctx, int64_t width) {
  simulate::StepBatch b;
  b.decode_contexts.push_back(ctx);
  b.decode_width = width;
  return b;
}

simulate::StepBatch prompt(int64_t tokens) {
  simulate::StepBatch b;
  b.prefills.push_back({tokens, 0, true});
  return b;
}

// 1,000 + 10 tokens, three drafts never accepted: the first token comes with the
// prompt (and the draft's pass over it), then 9 verify steps of 4 tokens at contexts
// 1,000 ... 1,008, each emitting one token: 10 steps, as plain decoding, each dearer.
TEST(ServingSpeculative, AcceptanceZeroCostsAVerifyStepPerTokenAndGainsNothing) {
  Fixture f;
  const ServeResult plain = simulate_serving(f.sim, f.p, one_request(1000, 10));
  plan::Plan p = f.p;
  p.speculative = {plan::SpecMethod::eagle, 3, {0.0}};
  const ServeResult r = simulate_serving(f.sim, p, one_request(1000, 10));
  const double ttft = step_s(f, p, prompt(1000));
  double decode = 0;
  for (int64_t ctx = 1000; ctx < 1009; ++ctx) decode += step_s(f, p, verify(ctx, 4));
  expect_close(r.ttft_s.mean, ttft, 1e-12);
  expect_close(r.e2e_s.mean, ttft + decode, 1e-12);
  expect_close(r.tpot_s.mean, decode / 9, 1e-12);
  EXPECT_EQ(r.steps, plain.steps);
  EXPECT_EQ(r.itl_s.count, 9);
  EXPECT_GT(r.tpot_s.mean, plain.tpot_s.mean);
  expect_close(r.tokens_per_decode, 1, 1e-12);
}

// 1,000 + 13 tokens, three drafts always accepted: after the prompt's token, 12 more
// in 3 verify steps of 4 (contexts 1,000, 1,004, 1,008); with 1,000 + 12 the last step
// emits only the 3 tokens the request still wants.
TEST(ServingSpeculative, AcceptanceOneYieldsDraftTokensPlusOnePerStep) {
  Fixture f;
  plan::Plan p = f.p;
  p.speculative = {plan::SpecMethod::eagle, 3, {1.0}};
  const ServeResult r = simulate_serving(f.sim, p, one_request(1000, 13));
  const double ttft = step_s(f, p, prompt(1000));
  double decode = 0;
  for (int64_t ctx : {1000, 1004, 1008}) decode += step_s(f, p, verify(ctx, 4));
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(r.itl_s.count, 3);
  expect_close(r.e2e_s.mean, ttft + decode, 1e-12);
  expect_close(r.tpot_s.mean, decode / 12, 1e-12);
  expect_close(r.tokens_per_decode, 4, 1e-12);
  const ServeResult short_one = simulate_serving(f.sim, p, one_request(1000, 12));
  EXPECT_EQ(short_one.steps, 4);
  expect_close(short_one.tokens_per_decode, 11.0 / 3, 1e-12);
}

// Under load the drafts accepted match the rate: with one rate a per position over 3
// drafts, a step emits 1 + a + a^2 + a^3 tokens per sequence on average.
TEST(ServingSpeculative, TokensPerStepMatchTheAcceptanceUnderLoad) {
  Fixture f;
  plan::Plan p = f.p;
  p.speculative = {plan::SpecMethod::eagle, 3, {0.7}};
  ServeOptions o = one_request(512, 256);
  o.client.concurrency = 32;
  o.client.requests = 400;
  const ServeResult r = simulate_serving(f.sim, p, o);
  EXPECT_NEAR(r.tokens_per_decode, p.speculative.expected_tokens_per_step(), 0.03);
  const ServeResult plain = simulate_serving(f.sim, f.p, o);
  EXPECT_LT(r.tpot_s.mean, plain.tpot_s.mean);
  EXPECT_GT(r.output_tokens_per_s, plain.output_tokens_per_s);
}

}  // namespace
}  // namespace dayzero::serve
