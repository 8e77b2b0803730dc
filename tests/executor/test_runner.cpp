// The runner on one rank: the tiny fixtures' reference goldens (prefill logits,
// cached decode steps, greedy tokens), determinism, and clear errors for plans
// that do not fit.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "executor/precision.h"
#include "executor/registry.h"
#include "executor/runner.h"
#include "golden.h"

namespace dayzero::executor {
namespace {

using testing::Golden;
using testing::max_abs_diff;
using testing::fixture_plan;
using testing::tiny_dir;

RunResult run_fixture(const std::string& family, int timing_iterations = 0, int64_t decode_steps = -1,
                      plan::KvDtype kv = plan::KvDtype::fp32) {
  const std::string dir = tiny_dir(family);
  const model::Model m = model::load_model(dir);
  const Golden g = testing::read_golden(dir);
  SelfCommunicator comm;
  RunnerOptions o;
  o.timing_iterations = timing_iterations;
  plan::Plan p = fixture_plan(m);
  p.dtypes.kv_cache = kv;
  Runner runner(m, p, comm, dir, o);
  return runner.run(g.prompt, decode_steps >= 0 ? decode_steps : static_cast<int64_t>(g.generated.size()) - 1);
}

class RunnerGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(RunnerGolden, MatchesReferenceGoldens) {
  const Golden g = testing::read_golden(tiny_dir(GetParam()));
  const RunResult res = run_fixture(GetParam());
  ASSERT_EQ(res.sequences.size(), 1u);
  const SequenceResult& r = res.sequences[0];
  ASSERT_EQ(r.prefill_logits.shape, g.prefill.shape);
  const double prefill_diff = max_abs_diff(r.prefill_logits.data.data(), g.prefill.data.data(), g.prefill.numel());
  EXPECT_LE(prefill_diff, testing::kLogitTolerance);
  ASSERT_EQ(r.decode_logits.size(), g.generated.size() - 1);
  double decode_diff = 0;
  for (size_t i = 0; i < r.decode_logits.size(); ++i)
    decode_diff = std::max(decode_diff, max_abs_diff(r.decode_logits[i].data.data(),
                                                     g.decode.row(static_cast<int64_t>(i)), g.decode.cols()));
  EXPECT_LE(decode_diff, testing::kLogitTolerance);
  EXPECT_EQ(r.tokens, g.generated);
  std::printf("%s: prefill max |diff| %.3g, decode max |diff| %.3g\n", GetParam(), prefill_diff, decode_diff);
}

// A step's activation memory is measured (the most tensor bytes it held), and the
// timer's repeats of each op do not add to it.
TEST_P(RunnerGolden, ActivationMemoryIsMeasuredWithoutTheTimersRepeats) {
  const RunResult plain = run_fixture(GetParam()), timed = run_fixture(GetParam(), 2);
  const int64_t a = plain.measurements.ranks.at(0).memory.workspace_bytes;
  EXPECT_GT(a, 0);
  EXPECT_EQ(a, timed.measurements.ranks.at(0).memory.workspace_bytes);
}

// Two runs, and a run with per-op timing (which repeats every op), give the same bits.
TEST_P(RunnerGolden, BitIdenticalAcrossRunsAndTiming) {
  const RunResult ra = run_fixture(GetParam()), rb = run_fixture(GetParam()), rt = run_fixture(GetParam(), 2);
  const SequenceResult &a = ra.sequences.at(0), &b = rb.sequences.at(0), &timed = rt.sequences.at(0);
  for (const SequenceResult* other : {&b, &timed}) {
    EXPECT_EQ(a.tokens, other->tokens);
    EXPECT_EQ(a.prefill_logits.data, other->prefill_logits.data);
    ASSERT_EQ(a.decode_logits.size(), other->decode_logits.size());
    for (size_t i = 0; i < a.decode_logits.size(); ++i)
      EXPECT_EQ(a.decode_logits[i].data, other->decode_logits[i].data);
  }
}

// The plan's KV dtype is what the cache stores: BF16 and FP8 (E4M3) halve and
// quarter the pools, and the logits move from the goldens by the rounding of keys
// and values alone (the weights and every other op stay float32).
TEST_P(RunnerGolden, ReducedPrecisionKvCache) {
  const RunResult full = run_fixture(GetParam());
  const SequenceResult& ref = full.sequences.at(0);
  double kl_bf16 = 0;
  for (const auto& [kv, bytes_ratio] : {std::pair{plan::KvDtype::bf16, 2}, std::pair{plan::KvDtype::fp8, 4}}) {
    const RunResult r = run_fixture(GetParam(), 0, -1, kv);
    LogitComparer cmp;
    cmp.add(ref.prefill_logits, r.sequences.at(0).prefill_logits);  // the same prompt: teacher-forced rows
    const LogitComparison& c = cmp.result();
    std::printf("%s kv %s: %lld rows, KL mean %.3g max %.3g nats, top-1 %.3f, max |diff| %.3g\n", GetParam(),
                std::string(plan::kv_dtype_name(kv)).c_str(), static_cast<long long>(c.rows), c.kl_mean_nats(),
                c.kl_max_nats, c.top1_agreement(), c.max_abs_diff);
    EXPECT_GT(c.max_abs_diff, 0.0) << "the cache should round";
    if (kv == plan::KvDtype::bf16) kl_bf16 = c.kl_mean_nats();
    else EXPECT_GT(c.kl_mean_nats(), kl_bf16) << "FP8 rounds coarser than BF16";
    const int64_t kv_full = full.measurements.ranks.at(0).memory.kv_bytes;
    const int64_t kv_reduced = r.measurements.ranks.at(0).memory.kv_bytes;
    EXPECT_LT(kv_reduced, kv_full);
    (void)bytes_ratio;
  }
}

INSTANTIATE_TEST_SUITE_P(TinyFixtures, RunnerGolden,
                         ::testing::Values("llama", "qwen3", "mixtral", "qwen3_moe", "deepseek_v3", "gpt_oss",
                                           "qwen3_5_moe", "glm_moe_dsa", "minimax_m2", "kimi_k2_5"));

// RoPE's rotation is the backend's (Backend::rope: the CUDA backend rotates on the
// device): the forward calls it for q and k of every layer in every step, and nothing
// else rotates.
int g_rope_calls = 0, g_rope_interleaved = 0;
void counting_rope(Tensor& x, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t> positions,
                   const RopeTable& table, RopeLayout layout) {
  ++g_rope_calls;
  g_rope_interleaved += layout == RopeLayout::interleaved ? 1 : 0;
  apply_rope(x, heads, stride, offset, positions, table, layout);
}

TEST(Runner, RotatesThroughTheBackendsRope) {
  Backend counting{"rope-counting", cpu_kernel_table()};
  counting.rope = &counting_rope;
  register_backend(counting);
  EXPECT_EQ(find_backend("cpu").rope, &apply_rope);
  for (const char* family : {"llama", "deepseek_v3"}) {
    const std::string dir = tiny_dir(family);
    const model::Model m = model::load_model(dir);
    const std::vector<int64_t> prompt{1, 5, 9, 2, 7};
    SelfCommunicator one;
    RunnerOptions o;
    Runner cpu(m, fixture_plan(m), one, dir, o);
    const RunResult want = cpu.run(prompt, 3);
    g_rope_calls = g_rope_interleaved = 0;
    o.backend = "rope-counting";
    Runner counted(m, fixture_plan(m), one, dir, o);
    const RunResult got = counted.run(prompt, 3);
    // q and k of each layer, in the prefill step and each of the 3 decode steps.
    EXPECT_EQ(g_rope_calls, 2 * m.config.num_layers * 4) << family;
    EXPECT_EQ(g_rope_interleaved > 0, m.config.rope.interleaved) << family;
    EXPECT_EQ(got.sequences.at(0).tokens, want.sequences.at(0).tokens) << family;
  }
}

// A device backend's weight placement (its first uploads, inside the steps) is load
// time: each step here "places" for 200 ms (before_step sleeps and reports it), and the
// step times leave it out while load_s takes it in.
double g_placed_s = 0;
double placed_seconds() { return g_placed_s; }

TEST(Runner, WeightPlacementIsLoadTimeNotStepTime) {
  Backend placing{"placing", cpu_kernel_table()};
  placing.weight_placement_seconds = &placed_seconds;
  register_backend(placing);
  const std::string dir = tiny_dir("llama");
  const model::Model m = model::load_model(dir);
  SelfCommunicator one;
  RunnerOptions o;
  o.backend = "placing";
  constexpr double kPlace_s = 0.2;
  o.before_step = [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kPlace_s));
    g_placed_s += kPlace_s;
  };
  g_placed_s = 0;
  Runner runner(m, fixture_plan(m), one, dir, o);
  const std::vector<int64_t> prompt{1, 5, 9, 2, 7};
  const RunResult r = runner.run(prompt, 3);
  const auto& rm = r.measurements.ranks.at(0);
  EXPECT_DOUBLE_EQ(g_placed_s, 4 * kPlace_s);  // the prefill step and 3 decode steps
  EXPECT_LT(rm.prefill_s, kPlace_s) << "placement left in the prefill step";
  ASSERT_EQ(rm.decode_step_s.size(), 3u);
  for (const double s : rm.decode_step_s) EXPECT_LT(s, kPlace_s) << "placement left in a decode step";
  EXPECT_GE(rm.load_s, 4 * kPlace_s);
}

// A warm-up pass (RunnerOptions::warmup_passes) runs the prompts' prefill and one
// decode step before the measured run, unrecorded, and gives its KV blocks back: the
// run's tokens, logits, ops and their call counts are the single pass's.
TEST(Runner, AWarmUpPassChangesNeitherTheResultsNorTheCounts) {
  for (const char* family : {"llama", "deepseek_v3", "qwen3_5_moe"}) {
    const std::string dir = tiny_dir(family);
    const model::Model m = model::load_model(dir);
    const Golden g = testing::read_golden(dir);
    const auto run = [&](int warmup, int64_t& steps) {
      SelfCommunicator one;
      RunnerOptions o;
      o.timing_iterations = 1;
      o.warmup_passes = warmup;
      o.before_step = [&](int64_t) { ++steps; };
      Runner runner(m, fixture_plan(m), one, dir, o);
      return runner.run(g.prompt, 3);
    };
    int64_t cold_steps = 0, warm_steps = 0;
    const RunResult cold = run(0, cold_steps), warm = run(1, warm_steps);
    EXPECT_EQ(cold_steps, 4) << family;      // the prefill and 3 decode steps
    EXPECT_EQ(warm_steps, 4 + 2) << family;  // and the warm-up's prefill and decode step
    const SequenceResult &a = cold.sequences.at(0), &b = warm.sequences.at(0);
    EXPECT_EQ(a.tokens, b.tokens) << family;
    EXPECT_EQ(a.prefill_logits.data, b.prefill_logits.data) << family;
    ASSERT_EQ(a.decode_logits.size(), b.decode_logits.size()) << family;
    for (size_t i = 0; i < a.decode_logits.size(); ++i)
      EXPECT_EQ(a.decode_logits[i].data, b.decode_logits[i].data) << family << " step " << i;
    const auto &ca = cold.measurements.ops, &wa = warm.measurements.ops;
    ASSERT_EQ(ca.size(), wa.size()) << family;
    for (size_t i = 0; i < ca.size(); ++i) {
      EXPECT_EQ(ca[i].name, wa[i].name) << family;
      EXPECT_EQ(ca[i].phase, wa[i].phase) << family;
      EXPECT_EQ(ca[i].calls, wa[i].calls) << family << " " << ca[i].name;
    }
    EXPECT_EQ(warm.measurements.ranks.at(0).decode_step_s.size(), 3u) << family;
    EXPECT_EQ(cold.measurements.ranks.at(0).memory.kv_bytes, warm.measurements.ranks.at(0).memory.kv_bytes)
        << family << ": the warm-up's blocks are reused";
  }
}

// Several sequences in one batch (each with its own KV pages, blocks of 4
// tokens), and prefill cut into chunks of 5 tokens, give each sequence what it
// gets alone: the same greedy tokens, logits within the fixtures' tolerance.
TEST(Runner, BatchedAndChunkedEqualOneSequenceAtATime) {
  for (const char* family : {"llama", "deepseek_v3", "gpt_oss"}) {
    const std::string dir = tiny_dir(family);
    const model::Model m = model::load_model(dir);
    const Golden g = testing::read_golden(dir);
    std::vector<std::vector<int64_t>> prompts{
        g.prompt, {g.prompt.begin(), g.prompt.begin() + 3}, {g.prompt.rbegin(), g.prompt.rend()}};
    SelfCommunicator comm;
    plan::Plan p = fixture_plan(m);
    p.kv_block_tokens = 4;
    p.prefill_chunk_tokens = 5;
    Runner batched(m, p, comm, dir);
    const RunResult all = batched.run(prompts, 3);
    ASSERT_EQ(all.sequences.size(), 3u);
    int64_t blocks = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      blocks += (static_cast<int64_t>(prompts[i].size()) + 3 + 3) / 4;  // prompt + 3 fed tokens, rounded up
      Runner alone(m, fixture_plan(m), comm, dir);
      const RunResult one = alone.run(prompts[i], 3);
      const SequenceResult &a = all.sequences[i], &b = one.sequences[0];
      EXPECT_EQ(a.index, static_cast<int64_t>(i));
      EXPECT_EQ(a.tokens, b.tokens) << family << " sequence " << i;
      ASSERT_EQ(a.prefill_logits.shape, b.prefill_logits.shape);
      EXPECT_LE(max_abs_diff(a.prefill_logits.data.data(), b.prefill_logits.data.data(), a.prefill_logits.numel()),
                testing::kLogitTolerance);
      for (size_t s = 0; s < a.decode_logits.size(); ++s)
        EXPECT_LE(
            max_abs_diff(a.decode_logits[s].data.data(), b.decode_logits[s].data.data(), a.decode_logits[s].numel()),
            testing::kLogitTolerance);
    }
    // The paged cache holds whole blocks: layers x blocks x 4 tokens x (key + value floats) x 4 bytes.
    const auto& c = m.config;
    const bool mla = c.attention == model::AttentionKind::mla;
    const int64_t row = mla ? c.mla.kv_lora_rank + c.mla.qk_rope_head_dim : 2 * c.num_kv_heads * c.head_dim;
    EXPECT_EQ(all.measurements.ranks.at(0).memory.kv_bytes, c.num_layers * blocks * 4 * row * 4) << family;
  }
}

TEST(Runner, LoadsOnlyWhatItNeedsZeroCopy) {
  const model::Model m = model::load_model(tiny_dir("mixtral"));
  SelfCommunicator one;
  Runner r(m, fixture_plan(m), one, tiny_dir("mixtral"));
  EXPECT_EQ(r.weights().files_opened(), 1);
  EXPECT_EQ(r.weights().mapped_bytes(), m.weights_bytes(model::WeightPrecision::checkpoint));
}

}  // namespace
}  // namespace dayzero::executor
