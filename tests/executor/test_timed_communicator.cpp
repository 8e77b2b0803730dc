// TimedCommunicator (executor/timed_communicator.h): each collective's shape timed once on
// scratch, as nccl-tests times a size, and tensors handed on where they lie.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "executor/communicator.h"
#include "executor/measurements.h"
#include "executor/timed_communicator.h"
#include "mirror_backend.h"

namespace dayzero::executor {
namespace {

// Rank 0 of an in-process two-rank world whose peer always contributes what rank 0 does.
class FakeTwoRanks final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(std::span<float> d) override {
    ++calls;
    for (float& v : d) v *= 2;
  }
  void all_gather(std::span<const float> in, std::span<float> out) override {
    ++calls;
    std::copy(in.begin(), in.end(), out.begin());
    std::copy(in.begin(), in.end(), out.begin() + static_cast<std::ptrdiff_t>(in.size()));
  }
  void reduce_scatter_sum(std::span<const float> in, std::span<float> out) override {
    ++calls;
    for (size_t i = 0; i < out.size(); ++i) out[i] = 2 * in[i];
  }
  void all_to_all_v(std::span<const float> send, std::span<const int64_t>, std::span<float> recv,
                    std::span<const int64_t>) override {
    ++calls;
    std::copy(send.begin(), send.end(), recv.begin());
  }
  void send(std::span<const float>, int) override { ++calls; }
  void recv(std::span<float>, int) override { ++calls; }
  void barrier() override { ++barriers; }
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SelfCommunicator>(); }
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> d) override {
    return {std::vector<std::byte>(d.begin(), d.end()), std::vector<std::byte>(d.begin(), d.end())};
  }
  int calls = 0, barriers = 0;
};

TEST(Collectives, TimedCommunicatorTimesEachShapeOnceOnScratch) {
  FakeTwoRanks fake;
  TimedCommunicator t(fake, 3);
  EXPECT_EQ(t.size(), 2);
  std::vector<float> a(16, 1.0f);
  t.all_reduce_sum(a);
  EXPECT_EQ(fake.calls, 4);                    // the real call (warm-up), then 3 timed repeats
  EXPECT_EQ(fake.barriers, 3);                 // ranks lined up before each repeat
  EXPECT_EQ(a, std::vector<float>(16, 2.0f));  // the repeats did not touch the real buffer
  t.all_reduce_sum(a);
  EXPECT_EQ(fake.calls, 5);  // same shape: the real call only
  EXPECT_EQ(a, std::vector<float>(16, 4.0f));
  std::vector<float> in(8, 3.0f), out(16);
  t.all_gather(in, out);
  EXPECT_EQ(out, std::vector<float>(16, 3.0f));
  t.send(in, 1);
  const auto r = t.results();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].collective, core::Collective::all_reduce);
  EXPECT_EQ(r[0].ranks, 2);
  EXPECT_EQ(r[0].size_bytes, 64);
  EXPECT_EQ(r[0].calls, 2);
  EXPECT_EQ(r[0].iterations, 3);
  EXPECT_GT(r[0].min_s, 0.0);
  EXPECT_LE(r[0].min_s, r[0].mean_s);
  EXPECT_EQ(r[1].collective, core::Collective::all_gather);
  EXPECT_EQ(r[1].size_bytes, 64);  // the gathered output, as nccl-tests counts it
  EXPECT_EQ(r[2].collective, core::Collective::send_recv);
  EXPECT_DOUBLE_EQ(r[0].algbw_GBps(), 64 / r[0].min_s / 1e9);
  EXPECT_DOUBLE_EQ(r[0].busbw_GBps(), r[0].algbw_GBps() * 1.0);
  EXPECT_DOUBLE_EQ(r[1].busbw_GBps(), r[1].algbw_GBps() * 0.5);
  EXPECT_GT(t.overhead_s(), 0.0);

  const auto j = collective_to_json(r[0]);
  for (const char* k : {"collective", "ranks", "size_bytes", "calls", "warmup_iterations", "iterations", "mean_s",
                        "min_s", "bus_factor", "algbw_GBps", "busbw_GBps"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j.at("collective"), "all_reduce");
  EXPECT_EQ(j.at("size_bytes"), 64);
  EXPECT_DOUBLE_EQ(j.at("busbw_GBps").get<double>(), j.at("algbw_GBps").get<double>());

  Measurements ms;
  ms.collectives = r;
  EXPECT_EQ(measurements_to_json(ms).at("collectives").size(), 3u);
}

// Rank 0 of a two-rank world that carries a tensor's values where they lie, as NCCL does a
// device backend's (its peer contributes what rank 0 does): it counts the calls that
// found the values on the mirror and those that came through the host.
class FakeDeviceTwoRanks final : public Communicator {
 public:
  using Mirror = testing::HostMirror;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(std::span<float> d) override {
    ++host_calls;
    for (float& v : d) v *= 2;
  }
  void all_gather(std::span<const float>, std::span<float>) override { ++host_calls; }
  void reduce_scatter_sum(std::span<const float>, std::span<float>) override { ++host_calls; }
  void all_to_all_v(std::span<const float> send, std::span<const int64_t>, std::span<float> recv,
                    std::span<const int64_t>) override {
    ++host_calls;
    std::copy(send.begin(), send.end(), recv.begin());
  }
  void send(std::span<const float>, int) override { ++host_calls; }
  void recv(std::span<float>, int) override { ++host_calls; }
  void all_reduce_sum(TensorValues& d) override {
    const auto* m = dynamic_cast<const Mirror*>(d.device());
    if (!m) return Communicator::all_reduce_sum(d);
    ++device_calls;
    std::vector<float> v = m->values;
    for (float& x : v) x *= 2;
    d.set_device(std::make_shared<Mirror>(std::move(v)), d.size());
  }
  void all_to_all_v(const TensorValues& send, std::span<const int64_t> sc, TensorValues& recv,
                    std::span<const int64_t> rc) override {
    const auto* m = dynamic_cast<const Mirror*>(send.device());
    if (!m) return Communicator::all_to_all_v(send, sc, recv, rc);
    ++device_calls;
    recv.set_device(std::make_shared<Mirror>(m->values), recv.size());
  }
  void recv(TensorValues& d, int) override {
    ++device_calls;
    d.set_device(std::make_shared<Mirror>(std::vector<float>(d.size(), 7.0f)), d.size());
  }
  void barrier() override {}
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SelfCommunicator>(); }
  std::vector<std::vector<std::byte>> all_gather_bytes(std::span<const std::byte> d) override {
    return {std::vector<std::byte>(d.begin(), d.end()), std::vector<std::byte>(d.begin(), d.end())};
  }
  int host_calls = 0, device_calls = 0;
};

TensorValues on_mirror(std::vector<float> v) {
  TensorValues t(v.size());
  const size_t n = v.size();
  t.set_device(std::make_shared<testing::HostMirror>(std::move(v)), n);
  return t;
}

// The tensors' overloads hand the values on as they lie, to the real call and to every
// timed repeat (which start from a copy sharing them), and leave the real result alone.
TEST(Collectives, TimedCommunicatorHandsTensorsOnWhereTheyLie) {
  FakeDeviceTwoRanks fake;
  TimedCommunicator t(fake, 3);
  TensorValues a = on_mirror(std::vector<float>(16, 1.0f));
  t.all_reduce_sum(a);
  EXPECT_EQ(fake.device_calls, 4);  // the real call, then 3 timed repeats, all on the mirror
  EXPECT_EQ(fake.host_calls, 0);
  EXPECT_FALSE(a.host_valid());
  EXPECT_EQ(a, std::vector<float>(16, 2.0f));  // once: the repeats worked on copies
  const std::vector<int64_t> counts = {4, 4};
  const TensorValues send = on_mirror({1, 2, 3, 4, 5, 6, 7, 8});
  TensorValues got(8);
  t.all_to_all_v(send, counts, got, counts);
  EXPECT_EQ(fake.device_calls, 8);  // an all-to-all is repeated on every call
  EXPECT_EQ(got, std::vector<float>({1, 2, 3, 4, 5, 6, 7, 8}));
  TensorValues message(3);
  t.recv(message, 1);
  EXPECT_EQ(fake.device_calls, 12);
  EXPECT_EQ(message, std::vector<float>(3, 7.0f));
  TensorValues host(4, 1.0f);  // values on the host only: the host path, as before
  t.all_reduce_sum(host);
  EXPECT_EQ(fake.host_calls, 4);
  EXPECT_EQ(host, std::vector<float>(4, 2.0f));
  const auto r = t.results();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].collective, core::Collective::all_reduce);
  EXPECT_EQ(r[0].iterations, 3);
  EXPECT_EQ(r[1].collective, core::Collective::all_to_all);
  EXPECT_EQ(r[1].size_bytes, 32);
  EXPECT_EQ(r[2].collective, core::Collective::send_recv);
  EXPECT_EQ(r[3].size_bytes, 16);
}

TEST(Collectives, NoRepeatsWithoutIterationsAndNothingOnOneRank) {
  FakeTwoRanks fake;
  TimedCommunicator t(fake, 0);
  std::vector<float> a(4, 1.0f);
  t.all_reduce_sum(a);
  EXPECT_EQ(fake.calls, 1);
  ASSERT_EQ(t.results().size(), 1u);
  EXPECT_EQ(t.results()[0].iterations, 0);
  EXPECT_EQ(t.results()[0].busbw_GBps(), 0.0);
  SelfCommunicator self;
  TimedCommunicator one(self, 3);
  one.all_reduce_sum(a);
  EXPECT_TRUE(one.results().empty());
}

}  // namespace
}  // namespace dayzero::executor
