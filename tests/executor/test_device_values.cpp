// Tensors whose values live on a device between kernels (executor/tensor_values.h):
// the class's rules, and whole runs of every tiny fixture through "cpu-mirror" (the
// CPU's kernels behind a device backend's contract, mirror_backend.h), which must give
// the CPU backend's logits bit for bit.
#include <gtest/gtest.h>

#include <cstdio>

#include "executor/registry.h"
#include "executor/runner.h"
#include "golden.h"
#include "mirror_backend.h"
#include "mirror_collectives.h"
#include "sharded.h"

namespace dayzero::executor {
namespace {

using testing::HostMirror;

std::shared_ptr<HostMirror> mirror(std::vector<float> v) { return std::make_shared<HostMirror>(std::move(v)); }

TEST(TensorValues, AResultOnTheDeviceComesBackOnceWhenReadAndGoesWhenWritten) {
  Tensor t({2, 2});
  const int64_t live = tensor_bytes_live();
  t.data.set_device(mirror({1, 2, 3, 4}));
  EXPECT_FALSE(t.data.host_valid());
  EXPECT_EQ(tensor_bytes_live(), live - 16);  // the host's copy is freed
  EXPECT_EQ(t.numel(), 4);                    // the size stays
  const int64_t downloads = TensorValues::downloads();
  const Tensor& c = t;
  EXPECT_EQ(c.data[2], 3.0f);  // read: brought back once, the device copy kept
  EXPECT_EQ(c.row(1)[1], 4.0f);
  EXPECT_EQ(TensorValues::downloads(), downloads + 1);
  EXPECT_NE(t.data.device(), nullptr);
  t.row(0)[0] = 9;  // written on the host: the device's copy is stale and dropped
  EXPECT_EQ(t.data.device(), nullptr);
  EXPECT_EQ(t.data, (std::vector<float>{9, 2, 3, 4}));
  EXPECT_EQ(TensorValues::downloads(), downloads + 1);
}

TEST(TensorValues, CopiesShareTheDeviceCopyAndMovesTakeIt) {
  Tensor a({3});
  a.data.set_device(mirror({1, 2, 3}));
  Tensor b = a;  // no download: both hold the device copy
  EXPECT_FALSE(b.data.host_valid());
  EXPECT_TRUE(a.data.device_shared());
  const int64_t downloads = TensorValues::downloads();
  b.data[0] = 7;  // b's own host values; a's device copy is untouched
  EXPECT_FALSE(a.data.device_shared());
  EXPECT_EQ(std::as_const(a).data, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(b.data, (std::vector<float>{7, 2, 3}));
  EXPECT_EQ(TensorValues::downloads(), downloads + 2);
  Tensor m = std::move(a);
  EXPECT_NE(m.data.device(), nullptr);
  EXPECT_EQ(a.numel(), 0);  // NOLINT(bugprone-use-after-move): a moved-from tensor is empty
  // Assigning host values drops the device copy; an input shared with the device keeps
  // both valid.
  m.data.assign(2, 5.0f);
  EXPECT_EQ(m.data.device(), nullptr);
  EXPECT_EQ(m.data, (std::vector<float>{5, 5}));
  m.data.share_device(mirror({5, 5}));
  EXPECT_TRUE(m.data.host_valid());
  EXPECT_NE(m.data.device(), nullptr);
  m.data.append(b.data.data(), b.data.data() + 1);
  EXPECT_EQ(m.data.device(), nullptr);
  EXPECT_EQ(m.data, (std::vector<float>{5, 5, 7}));
  EXPECT_THROW(m.data.set_device(nullptr), std::logic_error);
}

// Kernels chained on a device backend leave every intermediate on the device: nothing
// comes back to the host until the last result is read.
TEST(TensorValues, KernelsChainedOnTheDeviceBringNothingBack) {
  const Backend& be = testing::mirror_backend();
  const Backend& cpu = find_backend("cpu");
  Tensor x({2, 8});
  for (int64_t i = 0; i < x.numel(); ++i) x.data[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  const std::vector<float> gamma(8, 1.5f);
  std::vector<float> w(8 * 8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
  StoredWeight sw;
  sw.name = "w";
  sw.shape = {8, 8};
  sw.dtype = model::DType::f32;
  sw.data = std::as_bytes(std::span<const float>(w));
  const auto chain = [&](const Backend& b) {
    Tensor h = x;
    b.fn<NormFn>(model::OpKind::norm, "rms")(h, gamma, 1e-6);
    const Tensor g = b.fn<GemmFn>(model::OpKind::gemm, "f32")(h, sw, 0, {});
    const Tensor u = b.fn<GemmFn>(model::OpKind::gemm, "f32")(g, sw, 0, {});
    return b.fn<ActivationFn>(model::OpKind::activation, "swiglu")(g, u, {});
  };
  const int64_t downloads = TensorValues::downloads();
  const testing::MirrorCounts before = testing::mirror_counts();
  const Tensor on_device = chain(be);
  EXPECT_EQ(TensorValues::downloads(), downloads);
  EXPECT_EQ(testing::mirror_counts().uploads, before.uploads + 1);  // x, once
  EXPECT_EQ(testing::mirror_counts().results, before.results + 4);
  EXPECT_FALSE(on_device.data.host_valid());
  EXPECT_EQ(on_device.data, chain(cpu).data);  // read: the same bits as the CPU's
  EXPECT_EQ(TensorValues::downloads(), downloads + 1);
}

// The goldens' plan: one rank, the KV cache in float32.
plan::Plan golden_plan(const model::Model& m) {
  plan::Plan p;
  p.model = m.config.source;
  p.dtypes.kv_cache = plan::KvDtype::fp32;
  return p;
}

RunResult run_on(const std::string& backend, const std::string& family) {
  const std::string dir = testing::tiny_dir(family);
  const model::Model m = model::load_model(dir);
  const auto g = testing::read_golden(dir);
  SelfCommunicator comm;
  RunnerOptions o;
  o.backend = backend;
  Runner runner(m, golden_plan(m), comm, dir, o);
  return runner.run(g.prompt, static_cast<int64_t>(g.generated.size()) - 1);
}

class MirrorGolden : public ::testing::TestWithParam<const char*> {};

// The forward on tensors that live on a device between kernels gives the CPU's bits.
TEST_P(MirrorGolden, TensorsOnTheDeviceGiveTheCpusLogits) {
  testing::mirror_backend();
  const RunResult cpu = run_on("cpu", GetParam());
  const int64_t downloads = TensorValues::downloads();
  const testing::MirrorCounts before = testing::mirror_counts();
  const RunResult dev = run_on("cpu-mirror", GetParam());
  const testing::MirrorCounts after = testing::mirror_counts();
  const SequenceResult &a = cpu.sequences.at(0), &b = dev.sequences.at(0);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.prefill_logits.data, b.prefill_logits.data);
  ASSERT_EQ(a.decode_logits.size(), b.decode_logits.size());
  for (size_t i = 0; i < a.decode_logits.size(); ++i) EXPECT_EQ(a.decode_logits[i].data, b.decode_logits[i].data);
  EXPECT_GT(after.results, before.results);
  // Each step's logits come back and nothing else, every family's kernels being backend
  // ops where the stage is one rank (Forward::moe_local: DeepSeek-V3 brought back 47 values
  // before it, Mixtral 15; gpt-oss 29, its interleaved gate_up split on the host before
  // Backend::columns took it; MiniMax-M2 35, its RMSNorm across heads summing squares on
  // the host before Backend::row_sum_squares; Qwen3.5 50 with 30 sent up, its shared
  // expert's gate and its query / gate split on the host before the sigmoid gate took one
  // gate per row and the split went through Backend::columns). GLM-5's indexer keep masks
  // are read where they lie (the mirror read them on the host: 15 values).
  EXPECT_EQ(TensorValues::downloads() - downloads, static_cast<int64_t>(1 + b.decode_logits.size()));
  EXPECT_EQ(after.uploads, before.uploads) << "an input went up (the combine's zeros: Backend::zeros)";
  std::printf("%s on cpu-mirror: %lld kernel results on the device, %lld inputs uploaded, %lld brought back\n",
              GetParam(), static_cast<long long>(after.results - before.results),
              static_cast<long long>(after.uploads - before.uploads),
              static_cast<long long>(TensorValues::downloads() - downloads));
}

INSTANTIATE_TEST_SUITE_P(TinyFixtures, MirrorGolden,
                         ::testing::Values("llama", "qwen3", "mixtral", "qwen3_moe", "deepseek_v3", "gpt_oss",
                                           "qwen3_5_moe", "glm_moe_dsa", "minimax_m2", "kimi_k2_5"));

// Sharded over ranks (threads) with device tensors: the collectives read and write
// the host's values, which the rules bring back and send up.
TEST(MirrorGolden, ShardedRunsOnTheDeviceEqualOneRank) {
  testing::mirror_backend();
  for (const auto& [family, tp, ep] : {std::tuple{"llama", 2, 1}, std::tuple{"deepseek_v3", 2, 2},
                                       std::tuple{"gpt_oss", 2, 2}, std::tuple{"qwen3_5_moe", 2, 2}}) {
    const int64_t downloads = TensorValues::downloads();
    const testing::MirrorCounts before = testing::mirror_counts();
    const auto c = testing::sharded_vs_one_rank(family, tp, ep, "cpu-mirror");
    std::printf(
        "%s, tp %d ep %d on cpu-mirror (one rank, then two passes of the sharded run): %lld brought back, "
        "%lld sent up\n",
        family, tp, ep, static_cast<long long>(TensorValues::downloads() - downloads),
        static_cast<long long>(testing::mirror_counts().uploads - before.uploads));
    EXPECT_TRUE(c.tokens_equal) << family;
    EXPECT_LE(c.max_logit_diff, testing::kShardTolerance) << family;
    EXPECT_TRUE(c.repeat_identical) << family;
  }
}

// The collectives on the tensors where the kernels left them, as NCCL's on the CUDA
// backend's device values (mirror_collectives.h): the results stay one rank's, and a
// sharded run brings back what a run on one rank does (its logits), on each rank that
// holds logits, nothing of the activations the all-reduces, the expert exchange and the
// pipeline's messages carry.
TEST(MirrorGolden, CollectivesOnTheDeviceBringBackLess) {
  testing::mirror_backend();
  for (const auto& [family, tp, ep, pp] : {std::tuple{"llama", 2, 1, 1}, std::tuple{"llama", 1, 1, 2},
                                           std::tuple{"deepseek_v3", 2, 2, 1}, std::tuple{"qwen3_5_moe", 2, 2, 1}}) {
    int64_t before = TensorValues::downloads();
    (void)testing::sharded_vs_one_rank(family, 1, 1, "cpu-mirror", 3, testing::mirror_collectives);
    const int64_t one_rank = (TensorValues::downloads() - before) / 3;  // the reference and two passes
    before = TensorValues::downloads();
    const auto host = testing::sharded_vs_one_rank(family, tp, ep, "cpu-mirror", 3, nullptr, pp);
    const int64_t via_host = TensorValues::downloads() - before;
    before = TensorValues::downloads();
    const int64_t carried = testing::mirror_collectives_on_device();
    const auto dev = testing::sharded_vs_one_rank(family, tp, ep, "cpu-mirror", 3, testing::mirror_collectives, pp);
    const int64_t on_device = TensorValues::downloads() - before;
    std::printf(
        "%s, tp %d ep %d pp %d: collectives through the host %lld brought back, on the device %lld (%lld "
        "collectives carried there)\n",
        family, tp, ep, pp, static_cast<long long>(via_host), static_cast<long long>(on_device),
        static_cast<long long>(testing::mirror_collectives_on_device() - carried));
    EXPECT_TRUE(host.tokens_equal && dev.tokens_equal) << family;
    EXPECT_LE(dev.max_logit_diff, testing::kShardTolerance) << family;
    EXPECT_EQ(dev.max_logit_diff, host.max_logit_diff) << family << ": the same sums in the same order";
    EXPECT_TRUE(dev.repeat_identical) << family;
    EXPECT_GT(testing::mirror_collectives_on_device(), carried) << family;
    EXPECT_LT(on_device, via_host) << family;
    EXPECT_EQ(on_device, one_rank * (1 + 2 * tp)) << family << ": the reference, then 2 passes of tp ranks' logits";
  }
}

// A run that keeps only the logits that pick tokens (`dayzero run` without
// --check-precision) takes the prompt's last row where the hidden states lie: nothing
// but each step's logits comes back (the H200 run brought the whole prompt's hidden
// states back to pick one row: 16 MB at 1,024 tokens of Llama-3.1-8B).
TEST(MirrorGolden, PickingTheLastRowsBringsBackOnlyTheLogits) {
  testing::mirror_backend();
  for (const char* family : {"llama", "deepseek_v3"}) {
    const std::string dir = testing::tiny_dir(family);
    const model::Model m = model::load_model(dir);
    const auto g = testing::read_golden(dir);
    const auto run = [&](const char* backend) {
      SelfCommunicator comm;
      RunnerOptions o;
      o.backend = backend;
      o.keep_logits = false;
      Runner runner(m, golden_plan(m), comm, dir, o);
      return runner.run(g.prompt, 3);
    };
    const RunResult cpu = run("cpu");
    const int64_t downloads = TensorValues::downloads();
    const RunResult dev = run("cpu-mirror");
    EXPECT_EQ(cpu.sequences.at(0).tokens, dev.sequences.at(0).tokens) << family;
    if (std::string(family) == "llama") {  // dense: the prefill's logits row and 3 decode steps'
      EXPECT_EQ(TensorValues::downloads() - downloads, 1 + 3) << family;
    }
  }
}

// A batch of sequences of different lengths, prefill chunked across them: the
// per-sequence kernels get their rows through Backend::rows and their results are
// stacked by Backend::stack_rows, so that on a device backend nothing but the logits
// comes back (before: q and every sequence's result, each step and layer). Bit for bit
// the CPU's, on the families whose per-sequence kernels differ (GQA with sinks, MLA
// with the indexer, the gated delta-net).
TEST(MirrorBatch, SequencesApartAndTogetherOnTheDeviceGiveTheCpusBits) {
  testing::mirror_backend();
  for (const char* family : {"llama", "gpt_oss", "glm_moe_dsa", "qwen3_5_moe"}) {
    const std::string dir = testing::tiny_dir(family);
    const model::Model m = model::load_model(dir);
    const auto g = testing::read_golden(dir);
    const std::vector<std::vector<int64_t>> prompts{
        g.prompt, {g.prompt.begin(), g.prompt.begin() + 3}, {g.prompt.rbegin(), g.prompt.rend()}};
    const auto run = [&](const char* backend) {
      SelfCommunicator comm;
      RunnerOptions o;
      o.backend = backend;
      plan::Plan p = golden_plan(m);
      p.kv_block_tokens = 4;
      p.prefill_chunk_tokens = 5;
      Runner runner(m, p, comm, dir, o);
      return runner.run(prompts, 3);
    };
    const RunResult cpu = run("cpu");
    const int64_t downloads = TensorValues::downloads();
    const RunResult dev = run("cpu-mirror");
    const int64_t brought = TensorValues::downloads() - downloads;
    ASSERT_EQ(cpu.sequences.size(), dev.sequences.size()) << family;
    const int64_t steps = 3;  // decode steps, each one logits tensor
    for (size_t i = 0; i < cpu.sequences.size(); ++i) {
      const SequenceResult &a = cpu.sequences[i], &b = dev.sequences[i];
      EXPECT_EQ(a.tokens, b.tokens) << family << " sequence " << i;
      EXPECT_EQ(a.prefill_logits.data, b.prefill_logits.data) << family << " sequence " << i;
      ASSERT_EQ(a.decode_logits.size(), b.decode_logits.size()) << family;
      for (size_t s = 0; s < a.decode_logits.size(); ++s)
        EXPECT_EQ(a.decode_logits[s].data, b.decode_logits[s].data) << family << " sequence " << i << " step " << s;
    }
    const auto total = static_cast<int64_t>(prompts[0].size() + prompts[1].size() + prompts[2].size());
    const int64_t chunks = (total + 4) / 5;
    std::printf("%s, 3 sequences on cpu-mirror: %lld values brought back (%lld steps)\n", family,
                static_cast<long long>(brought), static_cast<long long>(chunks + steps));
    // The logits of each step and nothing else (before the row ops: every layer's q and
    // each sequence's attention result as well).
    EXPECT_EQ(brought, chunks + steps) << family;
  }
}

}  // namespace
}  // namespace dayzero::executor
