// The serving simulation against hand-computed cases: one request alone is its
// prefill and decode steps exactly; a closed loop obeys Little's law; a KV cache too
// small for the concurrency queues requests and the TTFT shows it; the two
// scheduling policies order prefill and decode as the engines do.
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

ServeOptions options(int64_t concurrency, int64_t requests, int64_t input, int64_t output) {
  ServeOptions o;
  o.engine = default_profile(Engine::vllm);
  o.engine.step_overhead_s = 0;
  o.client.concurrency = concurrency;
  o.client.requests = requests;
  o.client.shape = {input, output, 0};
  return o;
}

double step_s(Fixture& f, const simulate::StepBatch& b) {
  plan::Plan run = f.p;
  run.kv_block_tokens = default_profile(Engine::vllm).kv_block_tokens;
  return f.sim.step_time(*f.sim.prepare(run), b).time_s;
}

// One request of 1,000 + 10 tokens: TTFT is the prefill step, then 9 decode steps at
// contexts 1,000 ... 1,008 (each new token attends over its context and itself).
TEST(Serving, OneRequestAloneIsItsPrefillAndDecodeSteps) {
  Fixture f;
  const ServeResult r = simulate_serving(f.sim, f.p, options(1, 1, 1000, 10));
  simulate::StepBatch prefill;
  prefill.prefills.push_back({1000, 0, true});
  const double ttft = step_s(f, prefill);
  double decode = 0;
  for (int64_t ctx = 1000; ctx < 1009; ++ctx) {
    simulate::StepBatch d;
    d.decode_contexts.push_back(ctx);
    decode += step_s(f, d);
  }
  expect_close(r.ttft_s.mean, ttft, 1e-12);
  expect_close(r.e2e_s.mean, ttft + decode, 1e-12);
  expect_close(r.tpot_s.mean, decode / 9, 1e-12);
  EXPECT_EQ(r.steps, 10);
  EXPECT_EQ(r.itl_s.count, 9);
  expect_close(r.output_tokens_per_s, 10 / (ttft + decode), 1e-12);
}

// An admission delay of k steps: the request's TTFT and end-to-end latency grow by
// k of its own decode steps (its TPOT), and nothing else changes.
TEST(Serving, AdmissionDelayAddsThatManyOfTheRequestsOwnSteps) {
  Fixture f;
  const ServeResult base = simulate_serving(f.sim, f.p, options(1, 1, 1000, 10));
  ServeOptions o = options(1, 1, 1000, 10);
  o.engine.admission_delay_steps = 3;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  expect_close(r.ttft_s.mean, base.ttft_s.mean + 3 * base.tpot_s.mean, 1e-12);
  expect_close(r.e2e_s.mean, base.e2e_s.mean + 3 * base.tpot_s.mean, 1e-12);
  expect_close(r.tpot_s.mean, base.tpot_s.mean, 1e-12);
  expect_close(r.ttft_parts.request_overhead_s, 3 * base.tpot_s.mean, 1e-12);
  EXPECT_EQ(r.steps, base.steps);
}

// A 20,000-token prompt over a budget of 8,192 tokens: three chunks, each over the
// tokens before it.
TEST(Serving, LongPromptIsChunkedByTheTokenBudget) {
  Fixture f;
  const ServeResult r = simulate_serving(f.sim, f.p, options(1, 1, 20'000, 1));
  double ttft = 0;
  for (const auto& [n, cached] : {std::pair<int64_t, int64_t>{8192, 0}, {8192, 8192}, {3616, 16384}}) {
    simulate::StepBatch b;
    b.prefills.push_back({n, cached, cached + n == 20'000});
    ttft += step_s(f, b);
  }
  expect_close(r.ttft_s.mean, ttft, 1e-12);
  EXPECT_EQ(r.steps, 3);
}

// Little's law: with N requests always in flight, throughput = N / mean latency.
TEST(Serving, ClosedLoopObeysLittlesLaw) {
  Fixture f;
  ServeOptions o = options(16, 2000, 512, 64);
  o.client.warmup = 100;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(r.max_running, 16);
  EXPECT_NEAR(r.requests_per_s, 16 / r.e2e_s.mean, 0.01 * 16 / r.e2e_s.mean);
}

// Llama-3.1-8B on 8 H100s as 8 attention-DP replicas of one GPU.
struct Dp8 {
  model::Model m = load_model("Llama-3.1-8B");
  topology::Cluster c = load_cluster("h100x8");
  simulate::Simulator sim{m, c};
  plan::Plan p = simulate::testing::plan(1, 8);
};

// The warm-up is the whole deployment's: with attention DP, each replica leaves out
// its share of it (one replica stands for all dp), not the whole count.
TEST(Serving, WarmupIsSharedByTheDataParallelReplicas) {
  Dp8 f;
  f.p.workload.batch = 64;
  ServeOptions o = options(64, 320, 512, 32);
  o.client.warmup = 64;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(r.e2e_s.count, (320 - 64) / 8);  // one replica's share: 40 finished, 8 of them warm-up
  EXPECT_GT(r.tpot_s.mean, 0);
}

// Fewer requests in flight than replicas: only the busy replicas serve, so one request
// gets one replica's throughput, whatever the dp.
TEST(Serving, FewRequestsKeepFewReplicasBusy) {
  Dp8 f;
  auto& [m, c, sim, p] = f;
  const ServeResult one = simulate_serving(sim, p, options(1, 40, 512, 32));
  const ServeResult eight = simulate_serving(sim, p, options(8, 320, 512, 32));
  expect_close(one.ttft_s.mean, eight.ttft_s.mean, 1e-12);  // each busy replica holds one request
  expect_close(eight.output_tokens_per_s, 8 * one.output_tokens_per_s, 1e-12);
  const ServeResult twelve = simulate_serving(sim, p, options(12, 480, 512, 32));  // 2 per replica, 6 replicas' worth
  const ServeResult sixteen = simulate_serving(sim, p, options(16, 640, 512, 32));
  expect_close(twelve.output_tokens_per_s, 0.75 * sixteen.output_tokens_per_s, 1e-9);
}

// One request in flight on eight replicas keeps one busy: that replica serves every
// request, the warm-up's first one left out (a sweep's first points: concurrency 1, a
// wave of warm-up, a few hundred requests), not 1/8 of them.
TEST(Serving, FewerInFlightThanReplicasStillServesEveryRequest) {
  Dp8 f;
  ServeOptions o = options(1, 5, 512, 32);
  o.client.warmup = 1;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(r.e2e_s.count, 4);
  EXPECT_GT(r.output_tokens_per_s, 0);
}

// In a closed loop the latencies' parts are exact: TTFT's and TPOT's parts add up
// to their means, each step's overhead counts once per step, and with no time per
// step but the overhead, TPOT is exactly the overhead.
TEST(Serving, LatencyPartsAddUpToTheLatencies) {
  Fixture f;
  ServeOptions o = options(16, 200, 1000, 100);
  o.engine.step_overhead_s = 1e-3;
  o.engine.request_overhead_s = 0.02;
  o.engine.request_overhead_per_inflight_s = 1e-3;
  o.client.warmup = 16;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  expect_close(r.ttft_parts.total_s(), r.ttft_s.mean, 1e-9);
  expect_close(r.tpot_parts.total_s(), r.tpot_s.mean, 1e-9);
  expect_close(r.tpot_parts.step_overhead_s, 1e-3 * r.tpot_parts.steps, 1e-12);
  expect_close(r.tpot_parts.steps, 1.0, 1e-12);  // one step per output token after the first
  EXPECT_GE(r.ttft_parts.steps, 1.0);
  expect_close(r.ttft_parts.inflight, 16, 1e-12);  // a closed loop: every arrival finds the other 15 in flight
  expect_close(r.ttft_parts.request_overhead_s, 0.02 + 16e-3, 1e-12);
}

// Overlapped scheduling: host time shorter than a step is hidden behind it; longer,
// it sets the step. One request of 1 + 5 tokens: its 4 decode gaps are each a decode
// step (about 8 ms for Llama-3.1-8B on an H100), or 1 s when the host needs 1 s.
TEST(Serving, OverlappedSchedulingHidesHostTimeShorterThanAStep) {
  Fixture f;
  ServeOptions o = options(1, 1, 1, 5);
  const ServeResult bare = simulate_serving(f.sim, f.p, o);
  o.engine.overlap_scheduling = true;
  o.engine.step_overhead_s = 1e-4;  // well under a decode step
  const ServeResult hidden = simulate_serving(f.sim, f.p, o);
  expect_close(hidden.tpot_s.mean, bare.tpot_s.mean, 1e-12);
  EXPECT_EQ(hidden.tpot_parts.step_overhead_s, 0);
  o.engine.step_overhead_s = 1.0;  // far over it: each step waits for the host
  const ServeResult host_bound = simulate_serving(f.sim, f.p, o);
  expect_close(host_bound.tpot_s.mean, 1.0, 1e-12);
  expect_close(host_bound.tpot_parts.total_s(), 1.0, 1e-12);
  o.engine.overlap_scheduling = false;  // not overlapped: the sum
  const ServeResult serial = simulate_serving(f.sim, f.p, o);
  expect_close(serial.tpot_s.mean, bare.tpot_s.mean + 1.0, 1e-12);
}

// Overlapped scheduling forms a step's batch while the previous step runs, so a request
// that arrives during a step joins the one after the next. A (1,000 + 10 tokens) at 0;
// B (1,000 + 10) halfway through A's prompt step. Not overlapped, B's prompt rides with
// A's first decode (context 1,000); overlapped, A decodes once alone and B rides with
// its second (1,001). An idle engine takes a request in as it comes: A's TTFT is its
// prompt step either way. B arriving just as A's prompt step ends (as a closed loop's
// next request does) is taken by the next step when not overlapped, and overlapped
// misses the batch formed at that instant too: it rides with A's third decode (1,002).
TEST(Serving, OverlappedSchedulingAdmitsAStepLater) {
  Fixture f;
  simulate::StepBatch prefill;
  prefill.prefills.push_back({1000, 0, true});
  const double p_s = step_s(f, prefill);
  const auto decode_s = [&](int64_t context, bool with_prompt) {
    simulate::StepBatch b;
    b.decode_contexts.push_back(context);
    if (with_prompt) b.prefills.push_back({1000, 0, true});
    return step_s(f, b);
  };
  ServeOptions o = options(1, 2, 1000, 10);
  o.client.kind = ClientKind::open_loop;
  o.client.trace = {{0.0, {1000, 10, 0}}, {p_s / 2, {1000, 10, 0}}};
  const ServeResult serial = simulate_serving(f.sim, f.p, o);
  expect_close(serial.ttft_s.mean, (p_s + (p_s / 2 + decode_s(1000, true))) / 2, 1e-9);
  o.engine.overlap_scheduling = true;  // no host time to hide: only the admission moves
  const ServeResult overlapped = simulate_serving(f.sim, f.p, o);
  expect_close(overlapped.ttft_s.mean, (p_s + (p_s / 2 + decode_s(1000, false) + decode_s(1001, true))) / 2, 1e-9);
  EXPECT_EQ(overlapped.steps, serial.steps + 1);
  // B's parts count from the first step that started after it arrived, not from the one
  // it joined (the open loop leaves out the rest of the running step).
  expect_close(overlapped.ttft_parts.total_s(), (p_s + decode_s(1000, false) + decode_s(1001, true)) / 2, 1e-9);

  o.client.trace[1].arrival_s = p_s;
  o.engine.overlap_scheduling = false;
  expect_close(simulate_serving(f.sim, f.p, o).ttft_s.mean, (p_s + decode_s(1000, true)) / 2, 1e-9);
  o.engine.overlap_scheduling = true;
  const double waited = decode_s(1000, false) + decode_s(1001, false) + decode_s(1002, true);
  const ServeResult boundary = simulate_serving(f.sim, f.p, o);
  expect_close(boundary.ttft_s.mean, (p_s + waited) / 2, 1e-9);
  expect_close(boundary.ttft_parts.total_s(), boundary.ttft_s.mean, 1e-9);  // arrived as a step ended: all of it
}

// SGLang's admission estimate: with the ratio held at 0.7 (no decay), a request of
// 1,000 + 1,000 tokens counts as 1,000 + 700 = 1,700; a cache for 2.9 such requests
// runs 2 at a time (3 x 1,700 > 2.9 x 1,700) and never needs to retract, since 2 whole
// requests (2 x 2,000 tokens) fit. Without the estimate, admission by prompt runs more
// at once and retracts as they grow.
TEST(Serving, SglangAdmitsByItsEstimateOfTheTokensToCome) {
  Fixture f;
  ServeOptions o = options(8, 24, 1000, 1000);
  o.engine.future_tokens.on = true;
  o.engine.future_tokens.decay_steps = int64_t{1} << 40;  // the ratio stays at 0.7
  const ServeResult ample = simulate_serving(f.sim, f.p, o);
  const double cap = f.c.device_spec().mem_bytes;
  const double used = o.engine.memory.memory_fraction * cap - ample.kv.free_bytes;
  o.engine.memory.memory_fraction = (used + 2.9 * ample.kv.sequence_bytes(1700)) / cap;
  const ServeResult est = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(est.max_running, 2);
  EXPECT_EQ(est.preemptions, 0);
  o.engine.future_tokens.on = false;
  const ServeResult by_prompt = simulate_serving(f.sim, f.p, o);
  EXPECT_GT(by_prompt.max_running, 2);
  EXPECT_GT(by_prompt.preemptions, 0);
}

// A KV cache for 4.5 full requests under a concurrency of 16: requests wait for room
// (and running ones are preempted as they grow), so TTFT grows far beyond the
// ample cache's.
TEST(Serving, SmallKvCacheQueuesRequests) {
  Fixture f;
  ServeOptions o = options(16, 400, 2000, 500);
  const ServeResult ample = simulate_serving(f.sim, f.p, o);
  // The fraction of the device that leaves room for 4.5 requests of 2,500 tokens.
  const double cap = f.c.device_spec().mem_bytes;
  const double used = o.engine.memory.memory_fraction * cap - ample.kv.free_bytes;  // weights, activations, runtime
  o.engine.memory.memory_fraction = (used + 4.5 * ample.kv.sequence_bytes(2500)) / cap;
  const ServeResult small = simulate_serving(f.sim, f.p, o);
  expect_close(small.kv.free_bytes, 4.5 * ample.kv.sequence_bytes(2500), 1e-9);
  EXPECT_LE(small.max_running, 9);  // admitted by their prompts (2,000 tokens), evicted as they grow
  EXPECT_GT(small.ttft_s.mean, 3 * ample.ttft_s.mean);
  EXPECT_LT(small.output_tokens_per_s, ample.output_tokens_per_s);
  EXPECT_EQ(ample.preemptions, 0);
  for (const auto& pt : small.series) EXPECT_LE(pt.kv_used, 1.0 + 1e-12);
}

// TensorRT-LLM's defaults: no chunked prefill (a prompt enters a step whole) and no
// eviction (a request is admitted only with room to its last token): with room for
// 4.5 requests, at most 4 run, nothing is preempted, and a prompt longer than a step
// is refused.
TEST(Serving, NoEvictAdmitsWholeRequestsOnly) {
  Fixture f;
  ServeOptions o = options(16, 200, 2000, 500);
  o.engine = default_profile(Engine::trtllm);
  const ServeResult ample = simulate_serving(f.sim, f.p, o);
  const double cap = f.c.device_spec().mem_bytes;
  const double rest = cap - ample.kv.free_bytes / o.engine.memory.memory_fraction;  // weights, activations, runtime
  o.engine.memory.memory_fraction = 4.5 * ample.kv.sequence_bytes(2500) / (cap - rest);
  const ServeResult small = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(small.max_running, 4);
  EXPECT_EQ(small.preemptions, 0);
  EXPECT_GT(small.ttft_s.mean, 2 * ample.ttft_s.mean);
  o.client.shape.input_len = 9000;
  EXPECT_THROW(simulate_serving(f.sim, f.p, o), std::invalid_argument);
}

// The engines' documented defaults (serve/engine.cpp names the sources).
// One request of 1,000 + 10 tokens on vLLM: no step runs past the CUDA graphs (a prompt
// step is not counted, a decode step of 1 token is within 512); with graphs off its 9
// decode steps do. Counted, not priced (runs_eagerly's rule: test_engine_settings.cpp).
TEST(Serving, StepsPastTheCudaGraphsAreCounted) {
  Fixture f;
  ServeOptions o = options(1, 1, 1000, 10);
  const ServeResult one = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(one.steps, 10);
  EXPECT_EQ(one.eager_steps, 0);
  o.engine.cuda_graph_max_batch = 0;
  const ServeResult eager = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(eager.eager_steps, 9);                          // the decode steps
  expect_close(eager.ttft_s.mean, one.ttft_s.mean, 1e-12);  // counted, not priced
}

// B arrives while A decodes. SGLang's prefill-first runs B's prompt alone (A waits);
// vLLM's mixed steps carry A's token with B's prompt: B's first token comes sooner
// under prefill-first, A's last one later.
TEST(Serving, PrefillFirstPausesDecodesMixedCarriesThem) {
  Fixture f;
  ServeOptions o = options(1, 2, 1000, 50);
  o.client.kind = ClientKind::open_loop;
  o.client.trace = {{0.0, {1000, 50, 0}}, {0.1, {4000, 50, 0}}};
  const ServeResult mixed = simulate_serving(f.sim, f.p, o);
  o.engine.policy = PrefillPolicy::prefill_first;
  const ServeResult first = simulate_serving(f.sim, f.p, o);
  // TTFT of B (the larger of the two) is shorter, A's latency (the smaller E2E) longer.
  EXPECT_LT(first.ttft_s.p99, mixed.ttft_s.p99);
  EXPECT_GT(first.itl_s.p99, 0.0);
  EXPECT_GT(first.e2e_s.mean - first.ttft_s.mean, mixed.e2e_s.mean - mixed.ttft_s.mean);
}

// SGLang's --scheduler-recv-interval 5: B arrives just after A's prefill step; the
// scheduler, which took in arrivals right after that step, next looks after five of
// A's decode steps (contexts 1,000 ... 1,004), then prefills B alone (prefill-first).
// With the interval at 1, B waits for one decode step only.
TEST(Serving, SchedulerReceivesArrivalsEveryIntervalOfDecodeSteps) {
  Fixture f;
  simulate::StepBatch prefill;
  prefill.prefills.push_back({1000, 0, true});
  const double p_s = step_s(f, prefill);
  std::vector<double> d_s;
  for (int64_t ctx = 1000; ctx < 1005; ++ctx) {
    simulate::StepBatch d;
    d.decode_contexts.push_back(ctx);
    d_s.push_back(step_s(f, d));
  }
  const double eps = 1e-6;
  ServeOptions o = options(1, 2, 1000, 50);
  o.engine.policy = PrefillPolicy::prefill_first;
  o.client.kind = ClientKind::open_loop;
  o.client.trace = {{0.0, {1000, 50, 0}}, {p_s + eps, {1000, 50, 0}}};
  const ServeResult every = simulate_serving(f.sim, f.p, o);
  expect_close(every.ttft_s.mean, (p_s + (d_s[0] + p_s - eps)) / 2, 1e-9);
  o.engine.recv_interval_steps = 5;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  const double waited = d_s[0] + d_s[1] + d_s[2] + d_s[3] + d_s[4];
  expect_close(r.ttft_s.mean, (p_s + (waited + p_s - eps)) / 2, 1e-9);
  // B's TTFT parts count from the end of the step it arrived in, as with every
  // arrival: four decode steps and its prefill (A's: its prefill).
  EXPECT_DOUBLE_EQ(r.ttft_parts.steps, (1 + 5) / 2.0);
  o.engine.recv_interval_steps = 0;
  EXPECT_THROW(simulate_serving(f.sim, f.p, o), std::invalid_argument);
}

// Requests far apart never queue: each TTFT is the prefill step alone.
TEST(Serving, SparsePoissonArrivalsDoNotQueue) {
  Fixture f;
  ServeOptions o = options(1, 200, 1000, 20);
  o.client.kind = ClientKind::open_loop;
  o.client.rate_per_s = 0.01;
  o.client.seed = 7;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  simulate::StepBatch prefill;
  prefill.prefills.push_back({1000, 0, true});
  expect_close(r.ttft_s.p50, step_s(f, prefill), 1e-9);
  EXPECT_EQ(r.requests, 200);
}

// --random-range-ratio 0.8 as benchmark_serving draws it: every prompt and output
// length uniform in [0.8 x, 1 x]. One request at a time, so each request's steps and
// TTFT are its own: 400 requests take sum(output lengths) steps, 90 per request on
// average (the integers 80..100; their mean's standard error over 400 draws is 0.3),
// and every TTFT lies between the prefill of 800 and of 1,000 tokens.
TEST(Serving, RandomRangeRatioDrawsLengthsAsTheBenchmarkClientDoes) {
  Fixture f;
  ServeOptions o = options(1, 400, 1000, 100);
  o.client.range_ratio = 0.8;
  o.client.seed = 3;
  const ServeResult r = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(r.requests, 400);
  EXPECT_NEAR(static_cast<double>(r.steps) / 400, 90.0, 1.5);
  simulate::StepBatch shortest, longest;
  shortest.prefills.push_back({800, 0, true});
  longest.prefills.push_back({1000, 0, true});
  EXPECT_GE(r.ttft_s.p50, step_s(f, shortest));
  EXPECT_LE(r.ttft_s.p99, step_s(f, longest) * (1 + 1e-12));
  EXPECT_GT(r.ttft_s.p90, r.ttft_s.p50);  // the lengths do differ
  // The draws follow the seed, and only it.
  const ServeResult again = simulate_serving(f.sim, f.p, o);
  EXPECT_EQ(again.steps, r.steps);
  o.client.seed = 4;
  EXPECT_NE(simulate_serving(f.sim, f.p, o).steps, r.steps);
  // Ratio 1: every request at the full lengths.
  o.client.range_ratio = 1.0;
  EXPECT_EQ(simulate_serving(f.sim, f.p, o).steps, 400 * 100);
}

TEST(Serving, BadClientsAreRefused) {
  Fixture f;
  ServeOptions o = options(0, 10, 100, 10);
  EXPECT_THROW(simulate_serving(f.sim, f.p, o), std::invalid_argument);
  o = options(1, 10, 100, 10);
  o.client.kind = ClientKind::open_loop;
  EXPECT_THROW(simulate_serving(f.sim, f.p, o), std::invalid_argument);  // no rate
  o = options(1, 10, 2'000'000, 10);
  EXPECT_THROW(simulate_serving(f.sim, f.p, o), std::invalid_argument);  // longer than the KV cache
  o = options(1, 10, 100, 10);  // a trace's request longer than the KV cache: refused, not stuck
  o.client.kind = ClientKind::open_loop;
  o.client.trace = {{0.0, {100, 10, 0}}, {1.0, {2'000'000, 10, 0}}};
  EXPECT_THROW(simulate_serving(f.sim, f.p, o), std::invalid_argument);
  for (double ratio : {0.0, -0.5, 1.5, std::nan("")}) {
    o = options(1, 10, 100, 10);
    o.client.range_ratio = ratio;
    EXPECT_THROW(simulate_serving(f.sim, f.p, o), std::invalid_argument) << ratio;
  }
}

TEST(Stats, PercentilesInterpolateBetweenRanks) {
  // numpy.percentile([1, 2, 3, 4], [50, 90, 99]) = 2.5, 3.7, 3.97
  const LatencyStats s = latency_stats({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  // The same samples as (value, count) pairs.
  const LatencyStats w = weighted_latency_stats({{2, 1}, {1, 1}, {4, 1}, {3, 1}});
  EXPECT_DOUBLE_EQ(w.p90, 3.7);
  const LatencyStats many = weighted_latency_stats({{1, 3}, {10, 1}});  // 1, 1, 1, 10
  EXPECT_DOUBLE_EQ(many.p50, 1);
  EXPECT_DOUBLE_EQ(many.mean, 13.0 / 4);
  EXPECT_NEAR(many.p90, 1 + 9 * 0.7, 1e-12);
}

}  // namespace
}  // namespace dayzero::serve
