// The time model against hand-computed cases. Constants (simulate/efficiency.h):
// GEMM 0.70 of peak compute, 0.80 of HBM bandwidth; attention 0.50 / 0.70; 3 us per
// kernel; GEMM rows rounded up to 64. H100 SXM: 989.5 TFLOP/s BF16, 3.35 TB/s.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "topology/collective_model.h"

namespace dayzero::simulate {
namespace {

using testing::expect_close;
using testing::load_cluster;
using testing::load_model;
using testing::plan;
using testing::run;

// Llama-3.1-8B, one sequence on one H100.
// Layer GEMM bytes: 16,060,522,496 total - embedding 1,050,673,152 - head 1,050,673,152
// - norms 532,480 = 13,958,643,712 B; FLOPs per token: 2 x 6,979,321,856 params.
TEST(SimulateTime, Llama8BDecodeIsWeightStreaming) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(1));
  const auto& d = pred.decode.by_kind_s;
  // 1 token -> 64 rows: 2 x 6.98e9 x 64 / (989.5e12 x 0.7) = 1.29 ms < memory time:
  expect_close(d.at(CostKind::gemm), 13'958'643'712.0 / (3.35e12 * 0.8));  // 5.2085 ms
  // Attention, mean context 1000 + 200/2 = 1,100 tokens; per layer it reads
  // 1,100 x 2,048 elements x 2 B = 4,505,600 B at 0.7 x 3.35 TB/s (FLOPs: 1,100 x
  // 4 x 32 x 128 = 18.0 MFLOP, far below); 32 layers.
  expect_close(d.at(CostKind::attention), 32 * 4'505'600.0 / (3.35e12 * 0.7));
  // 12 ops per layer x 32 layers x 3 us (embedding and head add one each, apart).
  expect_close(d.at(CostKind::kernel_overhead), 32 * 12 * 3e-6);
  // LM head: 128,256 x 4096 x 2 B = 1,050,673,152 B streamed + one kernel.
  expect_close(d.at(CostKind::lm_head), 1'050'673'152.0 / (3.35e12 * 0.8) + 3e-6);
  expect_close(pred.tpot_s, pred.decode.time_s);
  // One sequence: 200 tokens every prompt (its share of a prefill step) + 200 decode steps.
  expect_close(pred.throughput_tokens_per_s, 200 / (pred.prompt_s + 200 * pred.tpot_s));
}

TEST(SimulateTime, Llama8BPrefillIsComputeBound) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(1));
  const auto& pf = pred.prefill.by_kind_s;
  // 1,000 tokens -> 1,024 rows: 2 x 6,979,321,856 x 1,024 / (989.5e12 x 0.7) = 20.64 ms,
  // above the 5.2 ms of weight reads.
  expect_close(pf.at(CostKind::gemm), 2.0 * 6'979'321'856 * 1024 / (989.5e12 * 0.7));
  // Causal attention: token i of 1,000 sees i keys: sum = 1000 x 1001 / 2 = 500,500;
  // x 4 x 32 x 128 FLOPs x 32 layers at 0.5 x 989.5 TFLOP/s.
  expect_close(pf.at(CostKind::attention), 32 * (500'500.0 * 16'384) / (989.5e12 * 0.5));
  EXPECT_EQ(pred.prefill.tokens, 1000);
}

// The steady state charges a prompt its share of a step of the token budget: 8,192 /
// 1,000 new tokens -> 8 prompts (a power of two) in one step of 8,000 rows (whole
// tiles): GEMMs 2 x 6,979,321,856 x 8,000 / (989.5e12 x 0.7) = 161.2 ms, 20.15 ms a
// prompt against 20.64 ms alone (1,024 rows); each prompt's attention its own; the
// step's launches (kernel_overhead and the embedding's one) and its LM head (64 rows
// either way, weight-bound) paid once for the 8. TTFT stays one prompt's prefill.
TEST(SimulateTime, PromptsShareAPrefillStepOfTheTokenBudget) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(1));
  EXPECT_EQ(pred.prompts_per_step, 8);
  const auto& pf = pred.prefill.by_kind_s;
  const double gemm_1 = 2.0 * 6'979'321'856 * 1024 / (989.5e12 * 0.7);
  const double gemm_8 = 2.0 * 6'979'321'856 * 8000 / (989.5e12 * 0.7);
  const double once = pf.at(CostKind::kernel_overhead) + pf.at(CostKind::lm_head) + 3e-6;
  expect_close(pred.prefill.time_s - pred.prompt_s, gemm_1 - gemm_8 / 8 + once * 7 / 8);
  expect_close(pred.ttft_s, pred.prefill.time_s);
  // A prompt longer than half the budget fills its step alone.
  plan::Plan p = plan(1);
  p.workload.input_len = 5000;
  const auto alone = run(m, c, p);
  EXPECT_EQ(alone.prompts_per_step, 1);
  EXPECT_EQ(alone.prompt_s, alone.prefill.time_s);
}

// The search reuses a group's prompt steps at its other batches (SimulateOptions::
// prompts_of): they do not depend on the batch, so the prediction is the same bit for bit.
TEST(SimulateTime, PromptStepsOfAnotherBatchAreTheSame) {
  const auto m = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200-2x8");
  plan::Plan p = plan(1, 8, 1, 8);
  p.workload.batch = 16;
  Simulator sim(m, c);
  const Prediction at_16 = sim.simulate(p);
  p.workload.batch = 64;
  const Prediction own = sim.simulate(p);
  SimulateOptions o;
  o.prompts_of = &at_16;
  const Prediction reused = sim.simulate(p, o);
  EXPECT_EQ(reused.prefill.time_s, own.prefill.time_s);
  EXPECT_EQ(reused.prompt_s, own.prompt_s);
  EXPECT_EQ(reused.tpot_s, own.tpot_s);
  EXPECT_EQ(reused.throughput_tokens_per_s, own.throughput_tokens_per_s);
  EXPECT_GT(own.prompts_per_step, 1);
}

// Sliding window in prefill: gpt-oss-20b, 1,000 new tokens, window 128: in a sliding
// layer token i sees min(i, 128) keys: 128 x 129 / 2 + 872 x 128 = 119,872 (vs 500,500).
TEST(SimulateTime, SlidingWindowPrefillAttention) {
  const auto m = load_model("gpt-oss-20b");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(1));
  // 64 heads x (64 + 64) x 2 = 16,384 FLOPs per context token; 12 full + 12 sliding layers.
  const double full = 500'500.0 * 16'384, sliding = 119'872.0 * 16'384;
  // Compute-bound: reading the 1,000-token cache of a layer (2 MB) takes far less.
  expect_close(pred.prefill.by_kind_s.at(CostKind::attention), 12 * (full + sliding) / (989.5e12 * 0.5));
}

// TP all-reduces: two per layer, each the cost topology/ gives for the TP group.
TEST(SimulateTime, TensorParallelAllReducesFromTopology) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(2));
  topology::CollectiveModel cm(c);
  const topology::DeviceId group[] = {0, 1};
  // Decode: 1 token x 4096 x 2 B per all-reduce; prefill: 1,000 tokens.
  const double dec = cm.cost(topology::Collective::all_reduce, group, 4096 * 2).time_s;
  const double pre = cm.cost(topology::Collective::all_reduce, group, 1000 * 4096 * 2).time_s;
  expect_close(pred.decode.by_kind_s.at(CostKind::tp_allreduce), 32 * 2 * dec);
  expect_close(pred.prefill.by_kind_s.at(CostKind::tp_allreduce), 32 * 2 * pre);
  // Half the weights per rank: decode GEMMs take half as long.
  expect_close(pred.decode.by_kind_s.at(CostKind::gemm), 13'958'643'712.0 / 2 / (3.35e12 * 0.8));
}

// Attention DP 8 with the experts split TP 8 (no EP, as SGLang's DP attention with
// `expert-parallel-size 1`): every rank's experts see all 8 replicas' tokens, gathered
// before and reduce-scattered after, the traffic of one all-reduce of all 8 replicas'
// hidden states per MoE layer. Mixtral-8x7B on 8 H100: prefill 8 x 1,000 tokens,
// decode 8 x 1 token, x 4,096 x 2 B, 32 MoE layers, no other TP collective.
TEST(SimulateTime, TensorParallelExpertsUnderAttentionDpReduceEveryReplicasTokens) {
  const auto m = load_model("Mixtral-8x7B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(1, 8);
  p.moe.tp = 8;
  p.moe.dp = 1;
  const auto pred = run(m, c, p);
  topology::CollectiveModel cm(c);
  const topology::DeviceId group[] = {0, 1, 2, 3, 4, 5, 6, 7};
  const double dec = cm.cost(topology::Collective::all_reduce, group, 8 * 4096 * 2).time_s;
  const double pre = cm.cost(topology::Collective::all_reduce, group, 8 * 1000 * 4096 * 2).time_s;
  expect_close(pred.decode.by_kind_s.at(CostKind::tp_allreduce), 32 * dec);
  expect_close(pred.prefill.by_kind_s.at(CostKind::tp_allreduce), 32 * pre);
  // Experts TP 4 x EP 2: a TP group reduces the gathered tokens routed to one of its EP
  // rank's 4 experts, all but those whose 2 experts both lie on the other rank:
  // 1 - (4 / 8) x (3 / 7) = 0.7857 of the 8,000.
  p.moe.tp = 4;
  p.moe.ep = 2;
  const auto mixed = run(m, c, p);
  const topology::DeviceId tp4[] = {0, 1, 2, 3};
  const double share = 1 - (4.0 / 8) * (3.0 / 7);
  const double pre4 = cm.cost(topology::Collective::all_reduce, tp4, share * 8 * 1000 * 4096 * 2).time_s;
  expect_close(mixed.prefill.by_kind_s.at(CostKind::tp_allreduce), 32 * pre4);
}

// Element-wise traffic by what splits it. Llama-3.1-8B per layer, elements read +
// written per token: two hidden-state norms 2 x 2 x 4,096 = 16,384 on every rank;
// RoPE over (32 + 8) heads x 128 = 2 x 5,120 = 10,240 and the SwiGLU activation
// 3 x 14,336 = 43,008 split by TP. Prefill of 1,000 tokens, BF16, 32 layers, at
// 0.7 x 3.35 TB/s.
TEST(SimulateTime, ElementwiseTrafficSplitsWithTensorParallel) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  const double bw = 0.7 * 3.35e12;
  for (const int tp : {1, 2, 4}) {
    const auto pred = run(m, c, plan(tp));
    const double elems = 16'384 + (10'240 + 43'008) / static_cast<double>(tp);
    expect_close(pred.prefill.by_kind_s.at(CostKind::elementwise), 32 * 1000 * 2 * elems / bw);
  }
}

// Mixtral-8x7B on one rank, 1,000 tokens: the expert activation (3 x 14,336 elements)
// runs once per (token, expert) pair, 2,000 of them; the two norms (16,384) and the
// combine ((2 + 1) x 4,096 = 12,288) once per token, and RoPE (2 x 40 x 128 = 10,240).
TEST(SimulateTime, ExpertActivationTrafficFollowsTheRoutedTokens) {
  const auto m = load_model("Mixtral-8x7B");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(1));
  const double per_layer = 1000.0 * (16'384 + 12'288 + 10'240) + 2000.0 * 43'008;
  expect_close(pred.prefill.by_kind_s.at(CostKind::elementwise), 32 * 2 * per_layer / (0.7 * 3.35e12));
}

// Overlap hides that share of the communication.
TEST(SimulateTime, CommOverlapHidesCommunication) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(4);
  const auto a = run(m, c, p);
  p.comm_overlap = 0.75;
  const auto b = run(m, c, p);
  expect_close(b.decode.by_kind_s.at(CostKind::tp_allreduce), a.decode.by_kind_s.at(CostKind::tp_allreduce) * 0.25);
}

// MoE decode: with few tokens, the experts' cost is the distinct experts touched.
// Mixtral on one H100... does not fit; take EP=8 over 8 H100, batch 8 (1 per rank):
// 8 tokens x top-2 = 16 assignments over 8 uniform experts: the busiest (every) rank
// expects 16/8 = 2 rows on its expert, touched with p = 1 - (7/8)^16 = 0.8822.
TEST(SimulateTime, MoeDecodeReadsTouchedExperts) {
  const auto m = load_model("Mixtral-8x7B");
  const auto c = load_cluster("h100x8");
  const auto pred = run(m, c, plan(1, 8, 1, 8));
  const double touched = 1 - std::pow(7.0 / 8.0, 16);
  const double expert_bytes = 3.0 * 4096 * 14336 * 2;  // BF16
  // Memory-bound: touched x 352 MB at 0.8 x 3.35 TB/s beats 64 padded rows of FLOPs.
  expect_close(pred.decode.by_kind_s.at(CostKind::experts), 32 * touched * expert_bytes / (3.35e12 * 0.8));
  EXPECT_GT(pred.decode.by_kind_s.at(CostKind::ep_alltoall), 0);
}

// Offload: cold experts that a step touches come over the host link (PCIe Gen5,
// 64 GB/s on H200): time = touched cold experts x expert bytes / 64e9.
TEST(SimulateTime, OffloadFetchOverHostLink) {
  const auto m = load_model("DeepSeek-V3");
  const auto c = load_cluster("h200-2x8");
  plan::Plan p = plan(1, 16, 1, 16);
  p.offload.resident_experts = 64;
  const auto pred = run(m, c, p);
  ASSERT_GT(pred.decode.by_kind_s.count(CostKind::offload_fetch), 0u);
  // 16 tokens x 8 = 128 assignments over 256 uniform experts; per rank 16 experts,
  // 12 cold, each touched with 1 - (255/256)^128; 58 MoE layers; 44,050,944 B each.
  const double touched = 1 - std::pow(255.0 / 256.0, 128);
  // Uniform routing: every rank is as busy; which 12 are cold depends on the
  // permutation, so bound it: between 12 and 16 of the rank's experts may be cold.
  const double per_expert = 58 * touched * 44'050'944.0 / 64e9;
  EXPECT_GE(pred.decode.by_kind_s.at(CostKind::offload_fetch), 8 * per_expert * 0.999);
  EXPECT_LE(pred.decode.by_kind_s.at(CostKind::offload_fetch), 16 * per_expert * 1.001);
}

// Pipeline: m micro-batches through pp stages take sum + (m - 1) x slowest.
TEST(SimulateTime, PipelineMicroBatchesAndBubble) {
  const auto m = load_model("Llama-3.1-70B");
  const auto c = load_cluster("h200-2x8");
  plan::Plan p = plan(8, 1, 2);
  p.workload.batch = 8;
  const auto pred = run(m, c, p);
  EXPECT_EQ(pred.decode.micro_batches, 2);
  EXPECT_EQ(pred.prefill.micro_batches, 1);
  EXPECT_GT(pred.decode.by_kind_s.at(CostKind::pp_send), 0);
  EXPECT_GE(pred.decode.bubble_s, 0);
  // 8 sequences x 200 tokens every 200 decode steps and 8 prompts (each its share of a
  // prefill step); a sequence's tokens wait for the other 7 prompts too.
  const double cycle_s = 200 * pred.decode.time_s + 8 * pred.prompt_s;
  expect_close(pred.throughput_tokens_per_s, 8 * 200 / cycle_s);
  expect_close(pred.tpot_s, pred.decode.time_s + 7 * pred.prompt_s / 200);
  expect_close(pred.request_latency_s, pred.ttft_s + 200 * pred.tpot_s);
}

// FP8 weights on a device with an FP8 path run at the FP8 peak (W8A8), and stream half the bytes.
TEST(SimulateTime, Fp8WeightsHalveDecodeGemmTime) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x8");
  plan::Plan p = plan(1);
  const auto bf16 = run(m, c, p);
  p.dtypes.attention = p.dtypes.dense_mlp = model::WeightPrecision::fp8;
  const auto fp8 = run(m, c, p);
  const double ratio = fp8.decode.by_kind_s.at(CostKind::gemm) / bf16.decode.by_kind_s.at(CostKind::gemm);
  EXPECT_NEAR(ratio, 0.5, 0.01);  // + 128x128 block scales: 4 B per 16,384 elements
}

// GLM-5's sparse-attention indexer launches 11 kernels beyond its GEMMs and key norm
// (model_costs.cpp, from SGLang's indexer): a dense layer's 20 ops are 30 launches, a MoE
// layer's 26 are 36 (`dayzero inspect` lists them); 3 dense + 75 MoE layers at 3 us.
TEST(SimulateTime, SparseAttentionIndexerLaunchesItsKernels) {
  const auto m = load_model("GLM-5-FP8");
  const auto c = load_cluster("h200x8");
  const auto pred = run(m, c, plan(8));
  expect_close(pred.decode.by_kind_s.at(CostKind::kernel_overhead), (3 * 30 + 75 * 36) * 3e-6);
}

}  // namespace
}  // namespace dayzero::simulate
