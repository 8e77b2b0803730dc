// The step model for one serving step (Simulator::step_time): a batch of exactly
// these decoding sequences and prefill chunks, against the prediction's own prefill
// and decode steps and against hand arithmetic; and the KV budget of a replica.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "helpers.h"

namespace dayzero::simulate {
namespace {

using testing::expect_close;
using testing::load_cluster;
using testing::load_model;
using testing::plan;

void expect_same_step(const StepTime& got, const StepTime& want) {
  expect_close(got.time_s, want.time_s, 1e-12);
  ASSERT_EQ(got.by_kind_s.size(), want.by_kind_s.size());
  for (const auto& [k, v] : want.by_kind_s) expect_close(got.by_kind_s.at(k), v, 1e-12);
}

// A whole prompt as one chunk is the prediction's prefill step (one prompt, one
// chunk), and B sequences each attending over D tokens are its decode step at the
// mean context D = input + output / 2.
TEST(StepBatch, OneChunkAndOneDecodeBatchAreThePredictionsSteps) {
  struct Case {
    const char* model;
    const char* cluster;
    plan::Plan p;
  };
  plan::Plan ds = plan(1, 8, 1, 8);
  ds.workload.batch = 64;
  plan::Plan llama = plan(2, 2);
  llama.workload.batch = 32;
  // GLM-5 with an 8K prompt: sparse attention reads at most index_topk (2048) tokens per
  // query, in a serving step as in the prediction.
  plan::Plan glm = plan(1, 8, 1, 8);
  glm.workload.batch = 16;
  glm.workload.input_len = 8192;
  for (const auto& [model, cluster, p] : {Case{"Llama-3.1-8B", "h100x8", llama}, Case{"DeepSeek-V3", "h200-2x8", ds},
                                          Case{"gpt-oss-20b", "h100x8", plan(1)}, Case{"GLM-5-FP8", "h200x8", glm}}) {
    SCOPED_TRACE(model);
    const auto m = load_model(model);
    const auto c = load_cluster(cluster);
    plan::validate_plan(p, m, c.num_devices(), "test");
    Simulator sim(m, c);
    const Prediction pred = sim.simulate(p);
    const auto prepared = sim.prepare(p);
    StepBatch prefill;
    prefill.prefills.push_back({p.workload.input_len, 0, true});
    expect_same_step(sim.step_time(*prepared, prefill), pred.prefill);
    // Decode: the new token of a sequence with D - 1 cached tokens attends over D.
    const int64_t mean_ctx = p.workload.input_len + p.workload.output_len / 2;
    StepBatch decode;
    decode.decode_contexts.assign(static_cast<size_t>(p.workload.batch / p.attention.dp), mean_ctx - 1);
    expect_same_step(sim.step_time(*prepared, decode), pred.decode);
  }
}

// The split by figure adds up to the step, bubble included (pp 2, two micro-batches),
// and scaling one efficiency figure scales exactly its part: halving gemm_memory
// doubles the gemm_memory part of a decode step and leaves the rest alone.
TEST(StepBatch, FigurePartsAddUpAndScaleWithTheirEfficiency) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(2, 2);
  p.workload.batch = 32;
  plan::validate_plan(p, m, c.num_devices(), "test");
  StepBatch b;
  b.decode_contexts.assign(16, 1500);
  b.prefills.push_back({512, 0, true});
  Simulator sim(m, c);
  const StepTime st = sim.step_time(*sim.prepare(p), b);
  double sum = 0;
  for (double v : st.by_figure_s) sum += v;
  expect_close(sum, st.time_s, 1e-12);
  EXPECT_GT(st.by_figure_s[static_cast<size_t>(TimeFigure::communication)], 0);  // pipeline sends, TP all-reduces

  StepBatch decode;
  decode.decode_contexts.assign(4, 100);
  const plan::Plan one = plan(1);
  Efficiency slow;
  slow.gemm_memory /= 2;
  Simulator fast_sim(m, c), slow_sim(m, c, slow);
  const StepTime a = fast_sim.step_time(*fast_sim.prepare(one), decode);
  const StepTime z = slow_sim.step_time(*slow_sim.prepare(one), decode);
  const auto part = [](const StepTime& s, TimeFigure f) { return s.by_figure_s[static_cast<size_t>(f)]; };
  EXPECT_GT(part(a, TimeFigure::gemm_memory), 0);
  expect_close(part(z, TimeFigure::gemm_memory), 2 * part(a, TimeFigure::gemm_memory), 1e-12);
  expect_close(z.time_s - a.time_s, part(a, TimeFigure::gemm_memory), 1e-12);
}

// A mixed step reads the weights once: it costs less than its prefill and decode
// parts apart, and more than either.
TEST(StepBatch, MixedStepSharesTheWeightReads) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  Simulator sim(m, c);
  const auto prepared = sim.prepare(plan(1));
  StepBatch decode, prefill, mixed;
  decode.decode_contexts.assign(32, 2000);
  prefill.prefills.push_back({48, 1024, false});  // 48 prompt tokens after 1,024 cached ones
  mixed = decode;
  mixed.prefills = prefill.prefills;
  const double d = sim.step_time(*prepared, decode).time_s, p = sim.step_time(*prepared, prefill).time_s,
               both = sim.step_time(*prepared, mixed).time_s;
  EXPECT_GT(both, std::max(d, p));
  EXPECT_LT(both, d + p);
  // 32 + 48 = 80 tokens -> 128 GEMM rows; no sequence samples but the decodes.
  EXPECT_EQ(sim.step_time(*prepared, mixed).tokens, 80);
}

// A later chunk attends over the chunks before it: with p cached tokens and n new
// ones, token i sees p + i, so the context sum is n p + n (n + 1) / 2.
TEST(StepBatch, ChunkAttentionCountsTheCachedTokens) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  Simulator sim(m, c);
  const auto prepared = sim.prepare(plan(1));
  StepBatch first, second;
  first.prefills.push_back({4096, 0, false});
  second.prefills.push_back({4096, 4096, true});
  const double a1 = sim.step_time(*prepared, first).by_kind_s.at(CostKind::attention);
  const double a2 = sim.step_time(*prepared, second).by_kind_s.at(CostKind::attention);
  // Compute-bound at 4,096 x 4,096 / 2 vs 4,096 x 4,096 x 3 / 2 context products (+ n / 2).
  const double n = 4096;
  expect_close(a2 / a1, (n * n + n * (n + 1) / 2) / (n * (n + 1) / 2), 1e-9);
}

// Llama-3.1-8B (BF16) on one H100 with vLLM's rule, 0.9 of 85,899,345,920 B:
// weights 16,060,522,496 B; a step of 8,192 tokens holds 8,192 x (3 x 4,096 +
// 3 x 14,336) x 2 B = 905,969,664 B of activations and 256 x 128,256 x 4 B =
// 131,334,144 B of logits; 1 GiB of runtime; no communicators. A token's KV cache:
// 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B.
TEST(StepBatch, KvBudgetHandComputed) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x1");
  Simulator sim(m, c);
  const auto prepared = sim.prepare(plan(1));
  const KvBudget b = sim.kv_budget(*prepared, KvMemoryRule{0.9, false, 8192, 256});
  const double used = 16'060'522'496.0 + 905'969'664.0 + 131'334'144.0 + 1'073'741'824.0;
  expect_close(b.free_bytes, 0.9 * 85'899'345'920.0 - used, 1e-12);
  expect_close(b.full_bytes_per_token, 131'072.0, 1e-12);
  EXPECT_EQ(b.sliding_bytes_per_token, 0.0);
  // A 1,000-token sequence holds 63 blocks of 16 tokens.
  expect_close(b.sequence_bytes(1000), 63 * 16 * 131'072.0, 1e-12);
  // TensorRT-LLM's rule: 0.9 of what is free once the rest is placed.
  const KvBudget t = sim.kv_budget(*prepared, KvMemoryRule{0.9, true, 8192, 256});
  expect_close(t.free_bytes, 0.9 * (85'899'345'920.0 - used), 1e-12);
}

// A plan is held to the serving engine's KV room when SimulateOptions::engine_memory is
// set. vLLM's rule leaves 59,137,843,200 B for KV here (KvBudgetHandComputed); a
// sequence of 1,000 + 200 tokens holds round_up(1,199, 16) = 1,200 tokens x 131,072 B =
// 157,286,400 B, so 375 sequences fit (58,982,400,000 B) and 376 (59,139,686,400 B) do
// not, though the device's 80 GiB holds them.
TEST(StepBatch, EngineKvRoomBoundsTheBatch) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x1");
  Simulator sim(m, c);
  const KvMemoryRule vllm{0.9, false, 8192, 256};
  SimulateOptions o;
  o.engine_memory = &vllm;
  plan::Plan p = plan(1);
  p.workload.batch = 375;
  const Prediction held = sim.simulate(p, o);
  EXPECT_TRUE(held.fits);
  EXPECT_TRUE(held.engine_kv.checked);
  EXPECT_TRUE(held.engine_kv.fits);
  EXPECT_NEAR(static_cast<double>(held.engine_kv.free_bytes), 59'137'843'200.0, 1.0);
  EXPECT_EQ(held.engine_kv.needed_bytes, 375 * int64_t{157'286'400});
  p.workload.batch = 376;
  const Prediction short_of_room = sim.simulate(p, o);
  EXPECT_FALSE(short_of_room.fits);
  EXPECT_FALSE(short_of_room.engine_kv.fits);
  EXPECT_EQ(short_of_room.engine_kv.needed_bytes, 376 * int64_t{157'286'400});
  EXPECT_NE(short_of_room.fullest_reason.find("the serving engine's memory share (0.90 of the device's memory) "
                                              "leaves 59.14 GB per rank of stage 0 for KV cache, the batch needs "
                                              "59.14 GB"),
            std::string::npos)
      << short_of_room.fullest_reason;
  const Prediction device_only = sim.simulate(p);
  EXPECT_TRUE(device_only.fits);
  EXPECT_FALSE(device_only.engine_kv.checked);
}

// gpt-oss alternates sliding (128-token window) and full layers: a long sequence
// pays the full rate for every token and the sliding rate for window + one block.
TEST(StepBatch, KvBudgetSlidingLayersHoldTheirWindow) {
  const auto m = load_model("gpt-oss-20b");
  const auto c = load_cluster("h100x1");
  Simulator sim(m, c);
  const auto prepared = sim.prepare(plan(1));
  const KvBudget b = sim.kv_budget(*prepared, KvMemoryRule{});
  EXPECT_EQ(b.window, 128);
  // 12 sliding and 12 full layers of 8 KV heads x 64 x 2 (k, v) x 2 B = 2,048 B each.
  expect_close(b.full_bytes_per_token, 12 * 2048.0, 1e-12);
  expect_close(b.sliding_bytes_per_token, 12 * 2048.0, 1e-12);
  expect_close(b.sequence_bytes(10'000), 10'000 * 12 * 2048.0 + (128 + 16) * 12 * 2048.0, 1e-12);
}

}  // namespace
}  // namespace dayzero::simulate
