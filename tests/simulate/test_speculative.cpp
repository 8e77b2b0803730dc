// Speculative decoding in the step model: the verify step (w tokens per sequence),
// the draft layer's forwards (Simulator::draft_time), the memory the draft adds, and
// the steady-state TPOT, each against hand arithmetic on Llama-3.1-8B (32 identical
// layers, TP 1) and DeepSeek-V3's MTP layer.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"

namespace dayzero::simulate {
namespace {

using testing::expect_close;
using testing::load_cluster;
using testing::load_model;

double kind(const StepTime& st, CostKind k) { return st.by_kind_s.count(k) ? st.by_kind_s.at(k) : 0; }

// The layers' part of a step: all but the embedding and the LM head.
double layers_part(const StepTime& st) {
  return st.time_s - kind(st, CostKind::embedding) - kind(st, CostKind::lm_head);
}

StepBatch decodes(size_t n, int64_t ctx, int64_t width = 1) {
  StepBatch b;
  b.decode_contexts.assign(n, ctx);
  b.decode_width = width;
  return b;
}

struct Llama {
  model::Model m = load_model("Llama-3.1-8B");
  topology::Cluster c = load_cluster("h100x1");
  Simulator sim{m, c};
  plan::Plan p = testing::plan(1);
};

// A verify step of 4 sequences x 4 tokens at context 1000 is, op for op, the step of
// 4 prompt chunks of 4 tokens over 1,000 cached ones (the same queries over the same
// contexts), but for the LM head, which runs on every verified position.
TEST(Speculative, VerifyStepIsItsTokensAsChunksButForTheHead) {
  Llama f;
  const auto prepared = f.sim.prepare(f.p);
  const StepTime verify = f.sim.step_time(*prepared, decodes(4, 1000, 4));
  StepBatch chunks;
  for (int i = 0; i < 4; ++i) chunks.prefills.push_back({4, 1000, true});
  const StepTime as_chunks = f.sim.step_time(*prepared, chunks);
  for (const auto& [k, v] : as_chunks.by_kind_s)
    if (k != CostKind::lm_head) expect_close(kind(verify, k), v, 1e-12);
  EXPECT_GE(kind(verify, CostKind::lm_head), kind(as_chunks, CostKind::lm_head));
  EXPECT_EQ(decodes(4, 1000, 4).tokens(), 16);
  EXPECT_EQ(decodes(4, 1000, 4).sampled(), 16);
}

// An EAGLE head on Llama is one more decoder layer: its first forward is one layer of
// the verify step plus the head for one row per sequence; each further draft is one
// layer of a plain decode step at the context after it, plus its head.
TEST(Speculative, DraftIsOneLayerPerForwardAndAHeadPerSequence) {
  Llama f;
  const auto plain = f.sim.prepare(f.p);
  const int64_t ctx = 1000;
  const StepTime verify = f.sim.step_time(*plain, decodes(8, ctx, 3));
  const StepTime first_head = f.sim.step_time(*plain, decodes(8, ctx + 3));
  const StepTime second = f.sim.step_time(*plain, decodes(8, ctx + 3));
  f.p.speculative = {plan::SpecMethod::eagle, 2, {0.7}};
  const auto drafting = f.sim.prepare(f.p);
  const StepTime d = f.sim.draft_time(*drafting, decodes(8, ctx, 3));
  const double want = layers_part(verify) / 32 + kind(first_head, CostKind::lm_head) + layers_part(second) / 32 +
                      kind(second, CostKind::lm_head);
  expect_close(d.time_s, want, 1e-9);
  expect_close(kind(d, CostKind::draft), d.time_s, 1e-12);
  double figures = 0;
  for (double v : d.by_figure_s) figures += v;
  expect_close(figures, d.time_s, 1e-9);
  EXPECT_EQ(f.sim.draft_time(*plain, decodes(8, ctx, 3)).time_s, 0);  // no draft without a method
}

// The draft layer's weights and KV cache: one decoder layer's on Llama (1/32 of the
// layers' bytes), DeepSeek-V3's MTP layer on the last stage (1/61 more KV per token).
TEST(Speculative, DraftLayerAddsOneLayersWeightsAndCache) {
  Llama f;
  f.p.workload.batch = 8;
  const Prediction off = testing::run(f.m, f.c, f.p);
  f.p.speculative = {plan::SpecMethod::eagle, 2, {0.7}};
  const Prediction on = testing::run(f.m, f.c, f.p);
  const ModelCosts& mc = f.sim.costs();
  const auto ck = static_cast<size_t>(model::WeightPrecision::checkpoint);
  const double layers = static_cast<double>(off.ranks[0].weights_bytes - mc.embedding_bytes[ck] - mc.head_bytes[ck] -
                                            mc.final_norm_bytes[ck]);
  expect_close(static_cast<double>(on.ranks[0].weights_bytes - off.ranks[0].weights_bytes), layers / 32, 1e-9);
  expect_close(static_cast<double>(on.ranks[0].kv_cache_bytes),
               static_cast<double>(off.ranks[0].kv_cache_bytes) * 33 / 32, 1e-9);

  const auto ds = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200-2x8");
  plan::Plan p = testing::plan(1, 16, 1, 16);
  p.workload.batch = 64;
  const Prediction ds_off = testing::run(ds, c, p);
  p.speculative = {plan::SpecMethod::mtp, 1, {}};
  const Prediction ds_on = testing::run(ds, c, p);
  EXPECT_GT(ds_on.ranks[0].weights_bytes, ds_off.ranks[0].weights_bytes);
  expect_close(static_cast<double>(ds_on.ranks[0].kv_cache_bytes),
               static_cast<double>(ds_off.ranks[0].kv_cache_bytes) * 62 / 61, 1e-9);
}

// The steady state: a decode step is the verify step of every sequence at the mean
// context and the drafting after it, and TPOT is that over the tokens a step emits on
// average (1 + 0.6 + 0.36 for two drafts accepted at 0.6), plus the other 7
// sequences' prompts (each its share of a prefill step) spread over the output.
TEST(Speculative, SteadyStateTpotIsVerifyAndDraftOverExpectedTokens) {
  Llama f;
  f.p.workload.batch = 8;
  f.p.speculative = {plan::SpecMethod::eagle, 2, {0.6}};
  const Prediction pred = testing::run(f.m, f.c, f.p);
  const auto prepared = f.sim.prepare(f.p);
  const StepBatch verify = decodes(8, f.p.workload.input_len + f.p.workload.output_len / 2, 3);
  const double step = f.sim.step_time(*prepared, verify).time_s + f.sim.draft_time(*prepared, verify).time_s;
  expect_close(pred.decode.time_s, step, 1e-9);
  expect_close(pred.tpot_s, step / 1.96 + 7 * pred.prompt_s / static_cast<double>(f.p.workload.output_len), 1e-9);
  expect_close(kind(pred.decode, CostKind::draft), f.sim.draft_time(*prepared, verify).time_s, 1e-9);
}

}  // namespace
}  // namespace dayzero::simulate
