// serve/two_batch_overlap.h: a step split into two micro-batches, against the formula
// worked by hand from the two micro-batches' own costs.
#include "serve/two_batch_overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "../simulate/helpers.h"
#include "serve/simulation.h"

namespace dayzero::serve {
namespace {

using simulate::testing::load_cluster;
using simulate::testing::load_model;
constexpr auto kComm = static_cast<size_t>(simulate::TimeFigure::communication);

simulate::StepBatch decodes(int n, int64_t context) {
  simulate::StepBatch b;
  b.decode_contexts.assign(static_cast<size_t>(n), context);
  return b;
}

// Llama-3.1-8B at TP `tp` on a bundled cluster, its plan prepared for step costs.
struct Llama8b {
  Llama8b(const char* cluster, int tp)
      : c(load_cluster(cluster)), sim(m, c), prepared(sim.prepare(simulate::testing::plan(tp))) {}
  model::Model m = load_model("Llama-3.1-8B");
  topology::Cluster c;
  simulate::Simulator sim;
  std::shared_ptr<const simulate::PreparedPlan> prepared;
};

EngineProfile tbo() {
  EngineProfile e = default_profile(Engine::sglang);
  e.two_batch_overlap = true;
  return e;
}

TEST(TwoBatchOverlap, SplitsDecodesInHalvesAndChunksByTokens) {
  simulate::StepBatch b = decodes(5, 100);
  b.prefills.push_back({300, 0, true});
  b.prefills.push_back({200, 0, true});
  const auto [first, second] = split_in_two(b);
  EXPECT_EQ(first.decode_contexts.size(), 3u);
  EXPECT_EQ(second.decode_contexts.size(), 2u);
  EXPECT_EQ(first.tokens(), 3 + 200);  // the 300-token chunk went to the lighter second
  EXPECT_EQ(second.tokens(), 2 + 300);
  EXPECT_EQ(first.tokens() + second.tokens(), b.tokens());
}

// Llama-3.1-8B at TP 8 on eight H100: 64 decodes in two micro-batches of 32. The step
// takes the longer of the compute and the communication streams plus the fill and
// drain, min / (2 x 32 layers).
TEST(TwoBatchOverlap, StepIsTheLongerStreamPlusFillAndDrain) {
  Llama8b f("h100x8", 8);
  simulate::Simulator& sim = f.sim;
  const auto& prepared = f.prepared;
  const simulate::StepBatch b = decodes(64, 2000);
  const simulate::StepTime one = sim.step_time(*prepared, b);
  const simulate::StepTime half = sim.step_time(*prepared, decodes(32, 2000));
  const double comm = 2 * half.by_figure_s[kComm], compute = 2 * (half.time_s - half.by_figure_s[kComm]);
  ASSERT_GT(comm, 0);
  const simulate::StepTime st = engine_step_time(sim, *prepared, b, tbo());
  EXPECT_NEAR(st.time_s, std::max(compute, comm) + std::min(compute, comm) / 64, 1e-12);
  double parts = 0;
  for (double s : st.by_figure_s) parts += s;
  EXPECT_NEAR(parts, st.time_s, 1e-12);  // the parts still add up to the step
  // Off, or 32 decodes (not above vLLM's threshold of 32): the plain step.
  EXPECT_DOUBLE_EQ(engine_step_time(sim, *prepared, b, default_profile(Engine::sglang)).time_s, one.time_s);
  EXPECT_DOUBLE_EQ(engine_step_time(sim, *prepared, decodes(32, 2000), tbo()).time_s, half.time_s);
  // One prompt chunk alone cannot be split.
  simulate::StepBatch prompt;
  prompt.prefills.push_back({4000, 0, true});
  EXPECT_DOUBLE_EQ(engine_step_time(sim, *prepared, prompt, tbo()).time_s, sim.step_time(*prepared, prompt).time_s);
}

// Its cost: with no communication to hide (one GPU), the step is the two half steps
// one after the other, longer than the whole step (the weights are read twice).
TEST(TwoBatchOverlap, WithNothingToHideItCostsTheSecondPass) {
  Llama8b f("h100x1", 1);
  simulate::Simulator& sim = f.sim;
  const auto& prepared = f.prepared;
  const simulate::StepBatch b = decodes(64, 2000);
  const double half = sim.step_time(*prepared, decodes(32, 2000)).time_s;
  const simulate::StepTime st = engine_step_time(sim, *prepared, b, tbo());
  EXPECT_NEAR(st.time_s, 2 * half, 1e-12);
  EXPECT_GT(st.time_s, sim.step_time(*prepared, b).time_s);
  // Served: the latencies' parts add up with the split steps too.
  ServeOptions o;
  o.engine = tbo();
  o.client.concurrency = 64;
  o.client.requests = 256;
  o.client.shape = {500, 50, 0};
  const ServeResult r = simulate_serving(sim, simulate::testing::plan(1), o);
  EXPECT_NEAR(r.ttft_parts.total_s(), r.ttft_s.mean, 1e-9 * r.ttft_s.mean);
  EXPECT_NEAR(r.tpot_parts.total_s(), r.tpot_s.mean, 1e-9 * r.tpot_s.mean);
}

}  // namespace
}  // namespace dayzero::serve
