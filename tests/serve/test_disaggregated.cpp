// Disaggregated serving against hand-computed cases: one request alone is the prefill
// pool's prompt step, exactly one KV transfer, and the decode pool's steps; under load
// the prefill pool queues what it cannot keep up with.
#include "serve/disaggregated.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../simulate/helpers.h"

namespace dayzero::serve {
namespace {

using simulate::testing::expect_close;
using simulate::testing::load_cluster;
using simulate::testing::load_model;

struct Fixture {
  model::Model m = load_model("Llama-3.1-8B");
  topology::Cluster c = load_cluster("h100x8");
  simulate::Simulator sim{m, c};
};

DisaggOptions options(int64_t concurrency, int64_t requests, int64_t input, int64_t output) {
  DisaggOptions o;
  o.prefill.plan = simulate::testing::plan(1);
  o.decode.plan = simulate::testing::plan(1);
  for (Pool* p : {&o.prefill, &o.decode}) {
    p->engine = default_profile(Engine::vllm);
    p->engine.step_overhead_s = 0;
  }
  o.client.concurrency = concurrency;
  o.client.requests = requests;
  o.client.shape = {input, output, 0};
  return o;
}

double step_s(Fixture& f, const simulate::StepBatch& b) {
  plan::Plan run = simulate::testing::plan(1);
  run.kv_block_tokens = default_profile(Engine::vllm).kv_block_tokens;
  return f.sim.step_time(*f.sim.prepare(run), b).time_s;
}

// 1,000 + 10 tokens: the prompt on the prefill worker (GPU 0), its cache over NVLink
// to the decode worker (GPU 1) once, then 9 decode steps at contexts 1,000 ... 1,008;
// the first token reaches the client with the first of them.
TEST(Disaggregated, TtftIsThePromptAndExactlyOneKvTransfer) {
  Fixture f;
  const DisaggOptions o = options(1, 1, 1000, 10);
  const ServeResult r = simulate_disaggregated(f.sim, o);
  simulate::StepBatch prompt;
  prompt.prefills.push_back({1000, 0, true});
  plan::Plan run = o.decode.plan;
  run.kv_block_tokens = o.decode.engine.kv_block_tokens;
  const simulate::KvBudget kv = f.sim.kv_budget(*f.sim.prepare(run), o.decode.engine.memory);
  const double transfer = kv_transfer_s(f.c, o, kv, 1000);
  // 128 KiB per token (32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes), in whole 16-token blocks.
  EXPECT_DOUBLE_EQ(kv.sequence_bytes(1000), 1008.0 * 131072);
  EXPECT_GT(transfer, 0);
  double decode = 0, first = 0;
  for (int64_t ctx = 1000; ctx < 1009; ++ctx) {
    simulate::StepBatch d;
    d.decode_contexts.push_back(ctx);
    decode += step_s(f, d);
    if (ctx == 1000) first = decode;
  }
  expect_close(r.ttft_s.mean, step_s(f, prompt) + transfer + first, 1e-12);
  expect_close(r.kv_transfer_s, transfer, 1e-12);
  expect_close(r.tpot_s.mean, (decode - first) / 9, 1e-12);
  expect_close(r.e2e_s.mean, step_s(f, prompt) + transfer + decode, 1e-12);
  EXPECT_EQ(r.steps, 9);  // the busiest replica's: the decode replica's nine (the prefill replica ran one)
  // The TTFT's parts (calibrate --bench's features) are the prompt step on the prefill
  // replica, the one transfer and the decode replica's first step: they add up to it.
  expect_close(r.ttft_parts.kv_transfer_s, transfer, 1e-12);
  expect_close(r.ttft_parts.total_s(), r.ttft_s.mean, 1e-12);
  EXPECT_DOUBLE_EQ(r.ttft_parts.steps, 2.0);
  expect_close(r.tpot_parts.total_s(), r.tpot_s.mean, 1e-12);
  EXPECT_DOUBLE_EQ(r.tpot_parts.kv_transfer_s, 0.0);
}

// The engine's handoff time (EngineProfile::handoff_s, the decode pool's) delays the
// KV cache's arrival at the decode worker once: TTFT and end-to-end latency grow by it
// exactly, TPOT does not move, and the TTFT's parts carry it as one handoff.
TEST(Disaggregated, TheHandoffTimeIsInTtftOnce) {
  Fixture f;
  DisaggOptions o = options(1, 1, 1000, 10);
  const ServeResult without = simulate_disaggregated(f.sim, o);
  o.decode.engine.handoff_s = 0.05;
  const ServeResult with = simulate_disaggregated(f.sim, o);
  expect_close(with.ttft_s.mean, without.ttft_s.mean + 0.05, 1e-12);
  expect_close(with.e2e_s.mean, without.e2e_s.mean + 0.05, 1e-12);
  expect_close(with.tpot_s.mean, without.tpot_s.mean, 1e-12);
  EXPECT_DOUBLE_EQ(with.ttft_parts.handoffs, 1.0);
  EXPECT_DOUBLE_EQ(with.ttft_parts.handoff_s, 0.05);
  EXPECT_DOUBLE_EQ(without.ttft_parts.handoffs, 1.0);  // the feature, whatever the time
  expect_close(with.ttft_parts.total_s(), with.ttft_s.mean, 1e-12);
  EXPECT_DOUBLE_EQ(with.tpot_parts.handoffs, 0.0);
}

// A handed-off request reaches the decode pool's engine as a new request: it waits for
// the engine's admission delay there as it did at the prefill pool's, 2 x k of its own
// decode steps in all (one request alone: TPOT is its decode step), where an
// aggregated request waits k once. TPOT does not move.
TEST(Disaggregated, EachPoolsEngineAdmitsTheRequest) {
  Fixture f;
  DisaggOptions o = options(1, 1, 1000, 10);
  const ServeResult without = simulate_disaggregated(f.sim, o);
  o.decode.engine.admission_delay_steps = 3;
  const ServeResult with = simulate_disaggregated(f.sim, o);
  expect_close(with.ttft_s.mean, without.ttft_s.mean + 2 * 3 * without.tpot_s.mean, 1e-12);
  expect_close(with.tpot_s.mean, without.tpot_s.mean, 1e-12);
  expect_close(with.ttft_parts.total_s(), with.ttft_s.mean, 1e-12);
}

// A transfer between nodes takes the NICs, inside a node NVLink: slower across.
TEST(Disaggregated, TransferAcrossNodesIsSlowerThanInsideOne) {
  const auto m = load_model("Llama-3.1-8B");
  const auto two = load_cluster("h200-2x8");
  simulate::Simulator sim(m, two);
  DisaggOptions inside = options(1, 1, 1000, 10), across = inside;
  across.prefill.workers = 8;  // the prefill pool fills node 0, the decode pool starts on node 1
  const auto prepared = sim.prepare(inside.decode.plan);
  const simulate::KvBudget kv = sim.kv_budget(*prepared, inside.decode.engine.memory);
  EXPECT_GT(kv_transfer_s(two, across, kv, 4096), 2 * kv_transfer_s(two, inside, kv, 4096));
}

// One prefill worker for 64 requests in flight on four decode workers: prompts queue for
// the prefill worker, so TTFT grows far past one prompt; a second prefill worker halves
// the wait; every request is served once.
TEST(Disaggregated, PromptsQueueForThePrefillPool) {
  Fixture f;
  DisaggOptions o = options(64, 512, 2000, 100);
  o.decode.workers = 4;
  const ServeResult one = simulate_disaggregated(f.sim, o);
  o.prefill.workers = 2;
  const ServeResult two = simulate_disaggregated(f.sim, o);
  EXPECT_EQ(one.ttft_s.count, 512);
  EXPECT_EQ(two.e2e_s.count, 512);
  EXPECT_GT(one.ttft_s.mean, 5 * one.kv_transfer_s);
  EXPECT_LT(two.ttft_s.mean, 0.7 * one.ttft_s.mean);
  EXPECT_GT(two.output_tokens_per_s, one.output_tokens_per_s);
  o.prefill.workers = 8;  // 8 + 4 workers of one GPU on 8 GPUs
  EXPECT_THROW(simulate_disaggregated(f.sim, o), std::invalid_argument);
}

}  // namespace
}  // namespace dayzero::serve
