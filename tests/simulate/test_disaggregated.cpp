// A disaggregated plan's steady state (simulate/disaggregated.h): the pools' request
// rates, TTFT with one KV transfer and, when the prefill pool is the slower, the
// queue in front of it by Little's law; the transfer's path; and Simulator::simulate
// of such a plan as its workers put together.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "simulate/disaggregated.h"
#include "topology/collective_model.h"

namespace dayzero::simulate {
namespace {

using testing::expect_close;
using testing::load_cluster;
using testing::load_model;

RankMemory rank(int r, int64_t total) {
  RankMemory m;
  m.rank = r;
  m.device = static_cast<uint32_t>(r);
  m.total_bytes = total;
  m.capacity_bytes = 100;
  return m;
}

// A decode worker of tp 1 x dp 2 at batch 64, 200 output tokens, its step 40 ms (its
// single-pool TPOT, 70 ms, counts prompts the decode pool never runs); prefill
// workers of 1 device, 0.5 s per prompt.
struct Hand {
  plan::Plan p;
  Prediction prefill, decode;
  Hand(int prefill_workers) {
    p = testing::plan(1, 2);
    p.workload.batch = 64;
    p.workload.output_len = 200;
    p.disaggregated = {prefill_workers, 1, {1, {1, 1}, {1, 1, 1}, 1}};
    prefill.fits = decode.fits = true;
    prefill.ttft_s = prefill.prefill.time_s = 0.5;
    prefill.ranks = {rank(0, 60)};
    decode.decode.time_s = 0.04;
    decode.tpot_s = 0.07;
    decode.ranks = {rank(0, 50), rank(1, 80)};
    decode.fullest_rank = 1;
  }
};

TEST(Disaggregated, PrefillBoundPoolQueuesByLittlesLaw) {
  Hand h(2);
  const Prediction d = combine_disaggregated(h.p, h.prefill, h.decode, 0.01);
  // Prefill: 2 workers x 1 replica / 0.5 s = 4 requests/s; decode: 64 / (200 x 0.04 s)
  // = 8 requests/s. 4 requests/s x 200 tokens over 2 + 2 devices.
  expect_close(d.throughput_tokens_per_s, 800, 1e-12);
  expect_close(d.throughput_tokens_per_s_per_device, 200, 1e-12);
  expect_close(d.tpot_s, 0.04, 1e-12);
  // 64 in flight at 4 requests/s: 16 s per request, 8 s of it decoding.
  expect_close(d.ttft_s, 64.0 / 4 - 200 * 0.04, 1e-12);
  expect_close(d.request_latency_s, 16, 1e-12);
}

TEST(Disaggregated, DecodeBoundTtftIsPromptTransferAndFirstStep) {
  for (int workers : {4, 5}) {  // 8 and 10 requests/s of prompts against 8 of decode
    Hand h(workers);
    const Prediction d = combine_disaggregated(h.p, h.prefill, h.decode, 0.01);
    expect_close(d.throughput_tokens_per_s, 8 * 200.0, 1e-12);
    expect_close(d.ttft_s, 0.5 + 0.01 + 0.04, 1e-12);  // the prompt, one transfer, the step that streams it
    expect_close(d.throughput_tokens_per_s_per_device, 1600.0 / (workers + 2), 1e-12);
  }
}

TEST(Disaggregated, RanksArePrefillThenDecodeAndBothMustFit) {
  Hand h(3);
  Prediction d = combine_disaggregated(h.p, h.prefill, h.decode, 0);
  ASSERT_EQ(d.ranks.size(), 3u);
  EXPECT_EQ(d.ranks[1].rank, 1);
  EXPECT_EQ(d.ranks[1].device, 3u);  // the decode worker after 3 one-device prefill workers
  EXPECT_EQ(d.ranks[2].device, 4u);
  EXPECT_EQ(d.fullest_rank, 2);  // the decode worker's 80 over the prefill's 60
  EXPECT_TRUE(d.fits);
  h.prefill.fits = false;
  EXPECT_FALSE(combine_disaggregated(h.p, h.prefill, h.decode, 0).fits);
}

// The KV cache moves from the first prefill device to the first decode device: NVLink
// inside a node, the NICs across nodes.
TEST(Disaggregated, TransferTakesThePathBetweenThePools) {
  const topology::Cluster c = load_cluster("h200-2x8");
  topology::CollectiveModel links(c);
  plan::Plan p = testing::plan(8);
  p.disaggregated = {1, 1, {1, {8, 1}, {1, 1, 8}, 1}};
  const topology::DeviceId across[2] = {0, 8};
  expect_close(kv_transfer_s(c, p, 1e9), links.cost(core::Collective::send_recv, across, 1e9).time_s, 1e-12);
  p = testing::plan(4);
  p.disaggregated = {1, 1, {1, {4, 1}, {1, 1, 4}, 1}};
  const topology::DeviceId inside[2] = {0, 4};
  expect_close(kv_transfer_s(c, p, 1e9), links.cost(core::Collective::send_recv, inside, 1e9).time_s, 1e-12);
  EXPECT_LT(kv_transfer_s(c, p, 1e9), 0.5 * links.cost(core::Collective::send_recv, across, 1e9).time_s);
}

// DeepSeek-V3 with a tp-8 prefill worker and a dp-8 decode worker on two nodes: the
// prediction is the workers' own, put together with one decode rank's KV shard of a
// prompt moved across the nodes.
TEST(Disaggregated, SimulateIsTheWorkersPutTogether) {
  const model::Model m = load_model("DeepSeek-V3");
  const topology::Cluster c = load_cluster("h200-2x8");
  Simulator sim(m, c);
  plan::Plan p = testing::plan(1, 8, 1, 8);
  p.workload.batch = 64;
  p.disaggregated = {1, 1, {1, {8, 1}, {1, 8, 1}, 1}};
  plan::validate_plan(p, m, c.num_devices(), "split.json");
  const Prediction whole = sim.simulate(p);
  const Prediction prefill = sim.simulate(p.prefill_worker());
  const Prediction decode = sim.simulate(p.decode_worker());
  const double kv_bytes = sim.kv_budget(*sim.prepare(p.decode_worker()), {}).sequence_bytes(p.workload.input_len);
  const Prediction want = combine_disaggregated(p, prefill, decode, kv_transfer_s(c, p, kv_bytes));
  EXPECT_EQ(whole.ranks.size(), 16u);
  EXPECT_EQ(whole.ranks.back().device, 15u);
  expect_close(whole.ttft_s, want.ttft_s, 1e-12);
  expect_close(whole.tpot_s, decode.decode.time_s, 1e-12);
  expect_close(whole.throughput_tokens_per_s, want.throughput_tokens_per_s, 1e-12);
  EXPECT_GT(whole.ttft_s, prefill.ttft_s + decode.decode.time_s);  // and a transfer
}

}  // namespace
}  // namespace dayzero::simulate
