// TensorRT-LLM's batch waiting in the serving simulation (EngineProfile::batch_waiting):
// new prompts wait beside running decodes until enough tokens gather or the timeout's
// steps have passed. Hand-computed: request A decodes alone, B arrives just after A's
// prompt step, and B's TTFT is the steps it waited plus the step that carries it.
#include <gtest/gtest.h>

#include "../simulate/helpers.h"
#include "serve/simulation.h"

namespace dayzero::serve {
namespace {

using simulate::testing::expect_close;
using simulate::testing::load_cluster;
using simulate::testing::load_model;

struct WaitFixture {
  model::Model m = load_model("Llama-3.1-8B");
  topology::Cluster c = load_cluster("h100x1");
  simulate::Simulator sim{m, c};
  plan::Plan p = simulate::testing::plan(1);
  EngineProfile engine = default_profile(Engine::trtllm);

  double step_s(const simulate::StepBatch& b) {
    plan::Plan run = p;
    run.kv_block_tokens = engine.kv_block_tokens;
    return sim.step_time(*sim.prepare(run), b).time_s;
  }
  double decode_s(int64_t context) {
    simulate::StepBatch b;
    b.decode_contexts.push_back(context);
    return step_s(b);
  }
};

// A closed loop of `concurrency` requests in flight, `requests` in all, with the
// fixture's engine profile and no host time.
ServeOptions closed_loop(const WaitFixture& f, int64_t concurrency, int64_t requests, RequestShape shape) {
  ServeOptions o;
  o.engine = f.engine;
  o.engine.step_overhead_s = 0;
  o.client.concurrency = concurrency;
  o.client.requests = requests;
  o.client.shape = shape;
  return o;
}

// A (1,000 + 50 tokens) at 0; B (`b_input` + 50) an instant after A's prompt step ends.
// Scheduling not overlapped, so that B reaches the scheduler as that step ends (overlapped,
// it would join a step later: Serving.OverlappedSchedulingAdmitsAStepLater).
ServeOptions two_requests(const WaitFixture& f, double prefill_s, int64_t b_input, BatchWaiting w) {
  ServeOptions o;
  o.engine = f.engine;
  o.engine.step_overhead_s = 0;
  o.engine.overlap_scheduling = false;
  o.engine.batch_waiting = w;
  o.client.kind = ClientKind::open_loop;
  o.client.requests = 2;
  o.client.trace = {{0.0, {1000, 50, 0}}, {prefill_s + 1e-6, {b_input, 50, 0}}};
  return o;
}

// Without waiting, B's prompt rides with A's second decode (context 1,001). With a
// timeout of 3 steps and a ratio B's 1,000 + 1 tokens do not reach (0.9 x 8,192), A
// decodes alone three times (contexts 1,001 ... 1,003), then B's prompt rides with the
// fourth (1,004).
TEST(BatchWaiting, PromptsWaitTheTimeoutsStepsBesideDecodes) {
  WaitFixture f;
  simulate::StepBatch prefill;
  prefill.prefills.push_back({1000, 0, true});
  const double p_s = f.step_s(prefill);
  const auto mixed_s = [&](int64_t context) {
    simulate::StepBatch b;
    b.decode_contexts.push_back(context);
    b.prefills.push_back({1000, 0, true});
    return f.step_s(b);
  };
  const double eps = 1e-6, d0 = f.decode_s(1000);
  const ServeResult off = simulate_serving(f.sim, f.p, two_requests(f, p_s, 1000, {}));
  expect_close(off.ttft_s.mean, (p_s + (d0 + mixed_s(1001) - eps)) / 2, 1e-9);
  const ServeResult on = simulate_serving(f.sim, f.p, two_requests(f, p_s, 1000, {3, 0.9}));
  const double waited = d0 + f.decode_s(1001) + f.decode_s(1002) + f.decode_s(1003);
  expect_close(on.ttft_s.mean, (p_s + (waited + mixed_s(1004) - eps)) / 2, 1e-9);
  EXPECT_EQ(on.steps, off.steps + 3);
}

// A prompt whose tokens reach the ratio at once runs at once; so does everything when
// either knob is 0 (the engine's count starts at 0 and any count of tokens reaches 0).
TEST(BatchWaiting, EnoughTokensOrAZeroKnobReleaseAtOnce) {
  WaitFixture f;
  simulate::StepBatch prefill;
  prefill.prefills.push_back({1000, 0, true});
  const double p_s = f.step_s(prefill);
  // 7,400 + 1 decode token >= 0.9 x 8,192 = 7,372.8.
  const ServeResult big_off = simulate_serving(f.sim, f.p, two_requests(f, p_s, 7400, {}));
  const ServeResult big_on = simulate_serving(f.sim, f.p, two_requests(f, p_s, 7400, {40, 0.9}));
  EXPECT_DOUBLE_EQ(big_on.ttft_s.mean, big_off.ttft_s.mean);
  const ServeResult off = simulate_serving(f.sim, f.p, two_requests(f, p_s, 1000, {}));
  for (const BatchWaiting w : {BatchWaiting{40, 0}, BatchWaiting{0, 0.9}}) {
    const ServeResult r = simulate_serving(f.sim, f.p, two_requests(f, p_s, 1000, w));
    EXPECT_DOUBLE_EQ(r.ttft_s.mean, off.ttft_s.mean) << w.timeout_iters << " " << w.max_tokens_ratio;
    EXPECT_EQ(r.steps, off.steps);
  }
}

// Under attention DP (a MoE plan with dp 8) the engine balances instead and never
// waits this way; nor does a step without decodes (a closed loop's first wave).
TEST(BatchWaiting, NotUnderAttentionDpNorWithoutDecodes) {
  WaitFixture f;
  const model::Model moe = load_model("Qwen3-30B-A3B");
  const topology::Cluster c8 = load_cluster("h100x8");
  simulate::Simulator sim{moe, c8};
  const plan::Plan adp = simulate::testing::plan(1, 8, 1, 8);
  ServeOptions o = closed_loop(f, 64, 640, {512, 128, 0});
  const ServeResult off = simulate_serving(sim, adp, o);
  o.engine.batch_waiting = {40, 0.8};
  const ServeResult on = simulate_serving(sim, adp, o);
  EXPECT_DOUBLE_EQ(on.ttft_s.mean, off.ttft_s.mean);
  EXPECT_EQ(on.steps, off.steps);
  // One request at a time: no decodes run when each prompt arrives.
  ServeOptions one = closed_loop(f, 1, 3, {1000, 20, 0});
  const ServeResult alone = simulate_serving(f.sim, f.p, one);
  one.engine.batch_waiting = {40, 0.8};
  EXPECT_DOUBLE_EQ(simulate_serving(f.sim, f.p, one).ttft_s.mean, alone.ttft_s.mean);
}

// Many requests in a closed loop: the prompts that arrive one by one beside decodes wait,
// at most the timeout's 40 decode steps each, and so gather into fewer prompt steps.
TEST(BatchWaiting, ClosedLoopPromptsWaitAtMostTheTimeout) {
  WaitFixture f;
  ServeOptions o = closed_loop(f, 64, 640, {1024, 256, 0});
  o.client.range_ratio = 0.8;
  const ServeResult off = simulate_serving(f.sim, f.p, o);
  o.engine.batch_waiting = {40, 0.8};
  const ServeResult on = simulate_serving(f.sim, f.p, o);
  const double added_s = on.ttft_s.mean - off.ttft_s.mean;
  EXPECT_GT(added_s, 2 * on.tpot_s.mean);
  EXPECT_LT(added_s, 40 * on.tpot_s.mean);
}

}  // namespace
}  // namespace dayzero::serve
