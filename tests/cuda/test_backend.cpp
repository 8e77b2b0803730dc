// The CUDA backend behind the executor's kernel table (cuda/backend.h): registered
// without a GPU, failing clearly without one, and on a GPU each kernel against the
// CPU backend's and whole runs of the tiny fixtures against transformers' goldens
// (the GEMMs of stored BF16 and FP8 weights: test_backend_weights.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../executor/golden.h"
#include "../executor/sharded.h"
#include "backend_util.h"
#include "cuda/backend.h"
#include "executor/kernels.h"
#include "executor/quantize.h"
#include "executor/registry.h"
#include "executor/runner.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

using executor::Tensor;
using model::OpKind;
using testing::cuda_backend;
using testing::expect_close;
using testing::fresh_cuda_backend;
using testing::wave;

TEST(CudaBackend, RegistersItsTableWithTheExecutorWithoutAGpu) {
  const executor::Backend& be = cuda_backend();
  register_cuda_backend();  // twice: still one backend
  EXPECT_EQ(be.name, "cuda");
  EXPECT_EQ(be.kernels.data(), cuda_kernel_table().data());
  int listed = 0;
  for (const auto& info : executor::backend_registry())
    if (info.name == "cuda") {
      ++listed;
      EXPECT_TRUE(info.available);
      EXPECT_EQ(info.ops.size(), cuda_kernel_table().size());
    }
  EXPECT_EQ(listed, 1);
  // Every op of every tiny fixture runs on both backends.
  for (const char* family : {"llama", "qwen3", "mixtral", "qwen3_moe", "gpt_oss", "deepseek_v3", "kimi_k2_5",
                             "minimax_m2", "glm_moe_dsa", "qwen3_5_moe"})
    for (const auto& c : executor::op_coverage(model::load_model(executor::testing::tiny_dir(family))))
      EXPECT_EQ(c.backends, (std::vector<std::string>{"cpu", "cuda"})) << family << " " << c.op.to_string();
  // What neither has (NVFP4 weights) stays a gap, named by the table that dispatches.
  EXPECT_THROW(be.kernel(OpKind::gemm, "nvfp4"), std::runtime_error);
}

executor::RunResult run_on(const std::string& backend, const std::string& family, int64_t decode_steps = -1) {
  const std::string dir = executor::testing::tiny_dir(family);
  const model::Model m = model::load_model(dir);
  const auto g = executor::testing::read_golden(dir);
  executor::SelfCommunicator comm;
  executor::RunnerOptions o;
  o.backend = backend;
  plan::Plan p;
  p.model = m.config.source;
  p.dtypes.kv_cache = plan::KvDtype::fp32;
  executor::Runner runner(m, p, comm, dir, o);
  return runner.run(g.prompt, decode_steps >= 0 ? decode_steps : static_cast<int64_t>(g.generated.size()) - 1);
}

TEST(CudaBackend, ARunWithoutAGpuFailsNamingTheReason) {
  cuda_backend();
  if (probe_cuda().count > 0) GTEST_SKIP() << "a GPU is present: the runs below check it";
  try {
    run_on("cuda", "llama");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("backend 'cuda': no CUDA device"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, DenseKernelsMatchTheCpu) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = fresh_cuda_backend();
  const auto& cpu = executor::find_backend("cpu");
  const std::vector<float> wv = wave(48 * 64, 0.2f, 0.3f);
  executor::StoredWeight w;
  w.name = "w";
  w.shape = {48, 64};
  w.data = std::as_bytes(std::span<const float>(wv));
  const Tensor x({5, 64}, wave(5 * 64, 1.5f, 0.9f));
  const std::vector<float> bias = wave(48, 0.5f, 0.1f);
  const auto gemm = [&](const executor::Backend& b) {
    return b.fn<executor::GemmFn>(OpKind::gemm, "f32")(x, w, 0, bias);
  };
  expect_close(gemm(be), gemm(cpu), 1e-5, "gemm f32 + bias");  // cuBLASLt's FP32 sum order against Eigen's
  w.input_major = true;                                        // gpt-oss's experts: [in, out]
  w.shape = {64, 48};                                          // 64 in, 48 out
  const auto gemm_im = [&](const executor::Backend& b) {
    return b.fn<executor::GemmFn>(OpKind::expert_gemm, "f32")(x, w, 0, {});
  };
  expect_close(gemm_im(be), gemm_im(cpu), 1e-5, "gemm input-major");
  Tensor a({4, 64}, wave(256, 3.0f, 0.4f)), b = a;
  const std::vector<float> nw = wave(16, 1.0f, 0.5f);  // per head of 16 (qk_norm)
  be.fn<executor::NormFn>(OpKind::norm, "rms")(a, nw, 1e-6);
  cpu.fn<executor::NormFn>(OpKind::norm, "rms")(b, nw, 1e-6);
  expect_close(a, b, 1e-6, "rms_norm");
  const executor::ActivationParams ap;
  for (const char* v : {"swiglu", "swiglu_clamped"}) {
    const Tensor g({3, 40}, wave(120, 9.0f, 0.1f)), u({3, 40}, wave(120, 9.0f, 0.6f));
    expect_close(be.fn<executor::ActivationFn>(OpKind::activation, v)(g, u, ap),
                 cpu.fn<executor::ActivationFn>(OpKind::activation, v)(g, u, ap), 1e-6, v);
  }
  w.input_major = false;
  w.shape = {48, 64};
  const std::vector<int64_t> tokens = {3, 0, 47, 3};
  const Tensor e = be.fn<executor::EmbeddingFn>(OpKind::embedding, "gather")(w, tokens);
  EXPECT_EQ(e.data, cpu.fn<executor::EmbeddingFn>(OpKind::embedding, "gather")(w, tokens).data);
  EXPECT_THROW(be.fn<executor::EmbeddingFn>(OpKind::embedding, "gather")(w, std::vector<int64_t>{48}),
               std::out_of_range);
}

// RoPE's rotation runs on the device (Backend::rope), as the CPU's within 2 float ulp
// (cos and sin in double on either side), in both layouts, YaRN's scale included; a
// shape that does not hold the heads is the CPU's error.
TEST(CudaBackend, RopeRotatesOnTheDeviceAsOnTheCpu) {
  const executor::Backend& be = cuda_backend();
  EXPECT_NE(be.rope, &executor::apply_rope);
  DAYZERO_NEED_GPU();
  be.begin_run();
  model::RopeConfig rc;
  rc.theta = 10000.0;
  executor::RopeTable table = executor::rope_default(rc, 32);
  table.attention_factor = 1.2;
  const std::vector<int64_t> positions{0, 1, 5, 4095, 131071};
  for (const auto layout : {executor::RopeLayout::half, executor::RopeLayout::interleaved}) {
    Tensor got({5, 3 * 48}, wave(5 * 3 * 48, 1.0f, 0.2f)), want = got;
    be.rope(got, 3, 48, 16, positions, table, layout);
    executor::apply_rope(want, 3, 48, 16, positions, table, layout);
    expect_close(got, want, 2.4e-7, layout == executor::RopeLayout::half ? "rope half" : "rope interleaved");
  }
  Tensor bad({5, 100}, std::vector<float>(500, 1.0f));
  EXPECT_THROW(be.rope(bad, 3, 48, 16, positions, table, executor::RopeLayout::half), std::invalid_argument);
}

TEST(CudaBackend, AttentionMatchesTheCpuWithWindowAndSinks) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = fresh_cuda_backend();
  const auto& cpu = executor::find_backend("cpu");
  const int64_t C = 300, T = 7, heads = 4, kv_heads = 2, d = 16;
  const Tensor k({C, kv_heads * d}, wave(C * kv_heads * d, 1.0f, 0.2f)),
      v({C, kv_heads * d}, wave(C * kv_heads * d, 1.0f, 0.8f)), q({T, heads * d}, wave(T * heads * d, 1.0f, 0.5f));
  std::vector<int32_t> one;
  const auto pages = executor::KvPages::contiguous(k, v, one);
  const std::vector<int64_t> pos = {0, 1, 50, 120, 200, 298, 299};
  const std::vector<float> sinks = {0.5f, -1.0f, 2.0f, 0.0f};
  for (int64_t window : {0, 64})
    for (bool with_sinks : {false, true}) {
      executor::AttentionParams p{heads, kv_heads, d, d, 0.25, window, {}, {}};
      if (with_sinks) p.sinks = sinks;
      const auto fn = [&](const executor::Backend& b) {
        return b.fn<executor::AttentionFn>(OpKind::attention, "gqa")(q, pos, pages, p);
      };
      // The device sums in float32, the CPU in double: an output is a weighted mean of at
      // most C values of |v| <= 1, so it differs by at most ~C u (u = 2^-24; Higham 3.1),
      // 1.8e-5 here; twice that for the exponentials' and the normalization's rounding.
      expect_close(fn(be), fn(cpu), 1e-6, with_sinks ? "attention + sinks" : "attention",
                   2.0 * C * std::ldexp(1.0, -24));
    }
}

// A whole prompt over many heads: enough blocks that the context is not split (one
// pass over the causal key tiles, each row tile skipping the keys past its last
// query), and a decode query whose context is split and combined.
TEST(CudaBackend, AttentionTilesAWholePromptAndSplitsADecodeContext) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = fresh_cuda_backend();
  const auto& cpu = executor::find_backend("cpu");
  const int64_t C = 300, heads = 64, kv_heads = 64, d = 16;
  const Tensor k({C, kv_heads * d}, wave(C * kv_heads * d, 1.0f, 0.2f)),
      v({C, kv_heads * d}, wave(C * kv_heads * d, 1.0f, 0.8f));
  std::vector<int32_t> one;
  const auto pages = executor::KvPages::contiguous(k, v, one);
  std::vector<int64_t> prompt(C);
  for (int64_t j = 0; j < C; ++j) prompt[static_cast<size_t>(j)] = j;
  std::vector<float> sinks(heads);
  for (int64_t h = 0; h < heads; ++h) sinks[static_cast<size_t>(h)] = 0.1f * static_cast<float>(h % 7) - 0.3f;
  for (const std::vector<int64_t>& pos : {prompt, std::vector<int64_t>{C - 1}}) {
    const auto T = static_cast<int64_t>(pos.size());
    const Tensor q({T, heads * d}, wave(T * heads * d, 1.0f, 0.5f));
    for (int64_t window : {0, 100}) {
      executor::AttentionParams p{heads, kv_heads, d, d, 0.25, window, {}, {}};
      p.sinks = sinks;
      const auto fn = [&](const executor::Backend& b) {
        return b.fn<executor::AttentionFn>(OpKind::attention, "gqa")(q, pos, pages, p);
      };
      expect_close(fn(be), fn(cpu), 1e-6, T > 1 ? "prompt" : "decode", 2.0 * C * std::ldexp(1.0, -24));
    }
  }
}

TEST(CudaBackend, OtherNormsAndTheSigmoidGateMatchTheCpu) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = fresh_cuda_backend();
  const auto& cpu = executor::find_backend("cpu");
  const std::vector<float> w = wave(32, 1.0f, 0.5f), b = wave(32, 0.3f, 0.9f), mean_sq = {0.5f, 2.0f, 0.01f};
  Tensor x1({3, 32}, wave(96, 3.0f, 0.4f)), x2 = x1;
  be.fn<executor::NormFn>(OpKind::norm, "rms_zero_centered")(x1, w, 1e-6);
  cpu.fn<executor::NormFn>(OpKind::norm, "rms_zero_centered")(x2, w, 1e-6);
  expect_close(x1, x2, 1e-6, "rms_zero_centered");
  Tensor y1({3, 32}, wave(96, 3.0f, 0.4f)), y2 = y1;
  be.fn<executor::LayerNormFn>(OpKind::norm, "layer_norm")(y1, w, b, 1e-6);
  cpu.fn<executor::LayerNormFn>(OpKind::norm, "layer_norm")(y2, w, b, 1e-6);
  expect_close(y1, y2, 1e-6, "layer_norm");  // tree-ordered sums against the CPU's sequential ones
  Tensor z1({3, 32}, wave(96, 3.0f, 0.4f)), z2 = z1;
  be.fn<executor::RmsGivenMeanFn>(OpKind::norm, "rms_across_heads")(z1, w, 1e-6, mean_sq);
  cpu.fn<executor::RmsGivenMeanFn>(OpKind::norm, "rms_across_heads")(z2, w, 1e-6, mean_sq);
  EXPECT_EQ(z1.data, z2.data);  // the same float operations
  const Tensor g({3, 32}, wave(96, 4.0f, 0.2f)), v({3, 32}, wave(96, 2.0f, 0.6f));
  const executor::ActivationParams ap;
  expect_close(be.fn<executor::ActivationFn>(OpKind::activation, "sigmoid_gate")(g, v, ap),
               cpu.fn<executor::ActivationFn>(OpKind::activation, "sigmoid_gate")(g, v, ap), 1e-6, "sigmoid_gate");
  const Tensor per_row({3, 1}, {-1.5f, 0.0f, 2.0f});  // Qwen3.5's shared-expert gate: one a row
  expect_close(be.fn<executor::ActivationFn>(OpKind::activation, "sigmoid_gate")(per_row, v, ap),
               cpu.fn<executor::ActivationFn>(OpKind::activation, "sigmoid_gate")(per_row, v, ap), 1e-6,
               "sigmoid_gate, one gate a row");
}

// MLA: the CUDA backend expands the latents at every shape; the CPU absorbs them at
// decode. The same attention either way, within float32 GEMM rounding.
TEST(CudaBackend, MlaAndTheIndexerMatchTheCpu) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = fresh_cuda_backend();
  const auto& cpu = executor::find_backend("cpu");
  const int64_t heads = 4, nope = 32, rope = 16, v = 24, rank = 32, C = 40;
  const std::vector<float> kvb = wave(heads * (nope + v) * rank, 0.2f, 0.1f);
  executor::StoredWeight kv_b;
  kv_b.name = "kv_b_proj";
  kv_b.shape = {heads * (nope + v), rank};
  kv_b.data = std::as_bytes(std::span<const float>(kvb));
  const Tensor latent({C, rank}, wave(C * rank, 1.0f, 0.3f)), rope_k({C, rope}, wave(C * rope, 1.0f, 0.7f));
  std::vector<int32_t> one;
  const auto pages = executor::KvPages::contiguous(latent, rope_k, one);
  const executor::MlaParams p{heads, nope, rope, rank, v, 0.144, {}};
  // Decode and a short chunk take the absorbed form, the whole prompt the expanded one
  // (executor::mla_absorbed), on both backends alike; the absorbed one with a keep mask too.
  std::vector<int64_t> prompt(C);
  for (int64_t j = 0; j < C; ++j) prompt[static_cast<size_t>(j)] = j;
  for (const std::vector<int64_t>& pos : {std::vector<int64_t>{39}, std::vector<int64_t>{30, 31, 32, 33, 34}, prompt}) {
    const auto T = static_cast<int64_t>(pos.size());
    ASSERT_EQ(executor::mla_absorbed(T, C, nope, rope, rank, v), T < C);
    const Tensor q({T, heads * (nope + rope)}, wave(T * heads * (nope + rope), 1.0f, 0.4f));
    std::vector<float> keep(static_cast<size_t>(T * C), 1.0f);
    for (size_t i = 0; i < keep.size(); i += 3) keep[i] = 0.0f;
    for (int64_t t = 0; t < T; ++t) keep[static_cast<size_t>(t * C + pos[static_cast<size_t>(t)])] = 1.0f;  // as top-k
    for (const bool masked : {false, true}) {
      executor::MlaParams pm = p;
      const Tensor keep_mask({T, C}, keep);
      if (masked) pm.keep = &keep_mask;
      const auto fn = [&](const executor::Backend& b) {
        return b.fn<executor::MlaFn>(OpKind::attention, masked ? "mla+sparse_topk" : "mla")(q, pos, pages, kv_b, pm);
      };
      // The attention's float32 mean of C latents (|latent| <= 1) differs from the CPU's
      // double one by ~C u, then goes out through kv_b's value half (sum |w| <= rank x
      // 0.2): C u 6.4 = 1.5e-5 at most.
      expect_close(fn(be), fn(cpu), 1e-4, T < C ? "mla absorbed" : "mla expanded", 2e-5);
    }
  }
  const int64_t H = 2, D = 8, T = 3;
  const Tensor iq({T, H * D}, wave(T * H * D, 1.0f, 0.2f)), iw({T, H}, wave(T * H, 1.0f, 0.9f)),
      ik({C, D}, wave(C * D, 1.0f, 0.5f));
  const auto ipages = executor::KvPages::contiguous(ik, ik, one);
  const std::vector<int64_t> ipos = {2, 20, 39};
  const executor::IndexerParams ip{H, D, 4};
  EXPECT_EQ(be.fn<executor::IndexerFn>(OpKind::indexer, "dsa_topk")(iq, iw, ipos, ipages, ip).data,
            cpu.fn<executor::IndexerFn>(OpKind::indexer, "dsa_topk")(iq, iw, ipos, ipages, ip).data);
}

// The gated delta-net: the device's recurrent form against the CPU's recurrent form
// (decode) and its chunked one (prefill), the state carried from one call to the next.
TEST(CudaBackend, GatedDeltaNetMatchesTheCpuAndCarriesItsState) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = fresh_cuda_backend();
  const auto& cpu = executor::find_backend("cpu");
  executor::LinearAttentionParams p{2, 4, 8, 6, 4};
  const std::vector<float> conv = wave(p.conv_dim() * 4, 0.5f, 0.1f), dt = wave(4, 0.5f, 0.2f),
                           a_log = wave(4, 0.5f, 0.3f), norm = wave(6, 0.2f, 0.4f);
  const executor::LinearAttentionWeights w{conv, dt, a_log, norm};
  const auto fresh = [&] { return executor::zero_linear_state(p); };
  executor::LinearState s_gpu = fresh(), s_cpu = fresh();
  const auto fn = [&](const executor::Backend& b, int64_t T, float phase, executor::LinearState& st, int64_t chunk) {
    const Tensor qkv({T, p.conv_dim()}, wave(T * p.conv_dim(), 1.0f, phase)), z({T, 24}, wave(T * 24, 1.0f, phase)),
        bb({T, 4}, wave(T * 4, 1.0f, phase + 0.1f)), a({T, 4}, wave(T * 4, 1.0f, phase + 0.2f));
    executor::LinearAttentionParams q = p;
    q.chunk = chunk;
    return b.fn<executor::LinearAttentionFn>(OpKind::linear_attention, "gated_delta_net")(qkv, z, bb, a, w, st, q);
  };
  expect_close(fn(be, 40, 0.3f, s_gpu, 16), fn(cpu, 40, 0.3f, s_cpu, 16), 2e-5, "prefill (CPU chunked)");
  expect_close(fn(be, 1, 0.9f, s_gpu, 0), fn(cpu, 1, 0.9f, s_cpu, 0), 2e-5, "decode");
  // The state stays where the kernel updated it: nothing came back to the host.
  EXPECT_FALSE(s_gpu.conv.data.host_valid());
  EXPECT_FALSE(s_gpu.recurrent.data.host_valid());
  EXPECT_EQ(std::as_const(s_gpu.conv).data, std::as_const(s_cpu.conv).data);  // the last inputs, copied
  for (size_t i = 0; i < s_gpu.recurrent.data.size(); ++i)
    EXPECT_NEAR(std::as_const(s_gpu.recurrent).data[i], std::as_const(s_cpu.recurrent).data[i], 2e-5) << i;
}

TEST(CudaBackend, RoutingAndCombineMatchTheCpu) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = fresh_cuda_backend();
  const auto& cpu = executor::find_backend("cpu");
  const Tensor logits({9, 16}, wave(144, 2.0f, 0.3f));
  const std::vector<float> bias = wave(16, 0.1f, 0.7f);
  for (const char* v : {"softmax_topk", "gpt_oss_topk_softmax", "sigmoid_group_topk"}) {
    executor::RouterParams p;
    p.top_k = 4;
    p.normalize = true;
    if (std::string(v) == "sigmoid_group_topk") {
      p.n_group = 4;
      p.topk_group = 2;
      p.routed_scaling_factor = 2.5;
      p.correction_bias = bias;
    }
    const auto a = be.fn<executor::RouterFn>(OpKind::router, v)(logits, p);
    const auto b = cpu.fn<executor::RouterFn>(OpKind::router, v)(logits, p);
    EXPECT_EQ(a.experts, b.experts) << v;
    ASSERT_EQ(a.weights.size(), b.weights.size()) << v;
    for (size_t i = 0; i < a.weights.size(); ++i) EXPECT_NEAR(a.weights[i], b.weights[i], 1e-6) << v << " " << i;
  }
  Tensor out_a({4, 24}, wave(96, 1.0f, 0.1f)), out_b = out_a;
  const Tensor y({5, 24}, wave(120, 2.0f, 0.4f));
  const std::vector<int64_t> rows = {2, 0, 2, 3, 1};
  const std::vector<float> w = {0.5f, 0.25f, 0.125f, 1.0f, 0.3f};
  be.fn<executor::CombineFn>(OpKind::moe_combine, "weighted_sum")(out_a, y, rows, w);
  cpu.fn<executor::CombineFn>(OpKind::moe_combine, "weighted_sum")(out_b, y, rows, w);
  EXPECT_EQ(out_a.data, out_b.data);  // the same float operations in the same order
}

// Several ranks on one GPU (threads of one process, each with its own context on the
// device; collectives through host memory, as MPI would carry them): TP=2 and EP=2
// equal one rank, and repeat bit for bit.
TEST(CudaBackend, TpAndEpOnOneGpuEqualOneRank) {
  DAYZERO_NEED_GPU();
  cuda_backend();
  for (const auto& [family, tp, ep] : {std::tuple{"llama", 2, 1}, std::tuple{"qwen3_moe", 2, 2},
                                       std::tuple{"deepseek_v3", 2, 2}, std::tuple{"gpt_oss", 2, 2}}) {
    const auto c = executor::testing::sharded_vs_one_rank(family, tp, ep, "cuda");
    EXPECT_TRUE(c.tokens_equal) << family;
    EXPECT_LE(c.max_logit_diff, executor::testing::kShardTolerance) << family;
    EXPECT_TRUE(c.repeat_identical) << family;
    std::printf("%s tp %d ep %d on one GPU: max |logit diff| %.3g against 1 rank\n", family, tp, ep, c.max_logit_diff);
  }
}

// Whole runs: the fixtures whose every op the CUDA table holds, against
// transformers' goldens at the CPU's tolerance, greedy tokens equal, and two runs
// bit-identical.
class CudaGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaGolden, MatchesReferenceGoldensAndRepeatsBitForBit) {
  DAYZERO_NEED_GPU();
  cuda_backend();
  const auto g = executor::testing::read_golden(executor::testing::tiny_dir(GetParam()));
  const executor::RunResult a = run_on("cuda", GetParam()), b = run_on("cuda", GetParam());
  ASSERT_EQ(a.sequences.size(), 1u);
  const auto& r = a.sequences[0];
  ASSERT_EQ(r.prefill_logits.shape, g.prefill.shape);
  const double prefill =
      executor::testing::max_abs_diff(r.prefill_logits.data.data(), g.prefill.data.data(), g.prefill.numel());
  double decode = 0;
  ASSERT_EQ(r.decode_logits.size(), g.generated.size() - 1);
  for (size_t i = 0; i < r.decode_logits.size(); ++i)
    decode = std::max(decode, executor::testing::max_abs_diff(r.decode_logits[i].data.data(),
                                                              g.decode.row(static_cast<int64_t>(i)), g.decode.cols()));
  EXPECT_LE(prefill, executor::testing::kLogitTolerance);
  EXPECT_LE(decode, executor::testing::kLogitTolerance);
  EXPECT_EQ(r.tokens, g.generated);
  EXPECT_EQ(r.prefill_logits.data, b.sequences[0].prefill_logits.data) << "two runs differ";
  const auto& mem = a.measurements.ranks.at(0).memory;  // the device's side of the run
  EXPECT_GT(mem.device_pool_peak_bytes, 0);
  EXPECT_GE(mem.device_used_bytes, mem.device_pool_peak_bytes);
  EXPECT_GT(mem.device_weights_bytes, 0);  // the run's weights stay on the device for the run
  EXPECT_GT(mem.device_workspace_peak_bytes, 0);
  EXPECT_LE(mem.device_weights_bytes, mem.device_pool_peak_bytes);  // parts of the pool
  EXPECT_LE(mem.device_workspace_peak_bytes, mem.device_pool_peak_bytes);
  // The KV cache's pools on the device, made once for the run's blocks (Runner::run
  // preallocates them): exactly the executor's count where every cached row is the
  // device's (Qwen3.5's delta-net states stay the host's).
  EXPECT_GT(mem.device_kv_bytes, 0);
  if (std::string(GetParam()) != "qwen3_5_moe") {
    EXPECT_EQ(mem.device_kv_bytes, mem.kv_bytes);
  }
  EXPECT_EQ(a.measurements.op_clock, plan::OpClock::device);
  std::printf("%s on cuda: prefill max |diff| %.3g, decode max |diff| %.3g\n", GetParam(), prefill, decode);
}

INSTANTIATE_TEST_SUITE_P(TinyFixtures, CudaGolden,
                         ::testing::Values("llama", "qwen3", "mixtral", "qwen3_moe", "gpt_oss", "deepseek_v3",
                                           "kimi_k2_5", "minimax_m2", "glm_moe_dsa", "qwen3_5_moe"));

}  // namespace
}  // namespace dayzero::cuda
