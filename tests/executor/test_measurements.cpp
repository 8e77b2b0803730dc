// SelfCommunicator, the OpTimer, and the Measurements JSON of a timed run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/error.h"
#include "executor/communicator.h"
#include "executor/measurements.h"
#include "executor/runner.h"
#include "executor/timed_communicator.h"
#include "golden.h"

namespace dayzero::executor {
namespace {

TEST(SelfCommunicator, CollectivesOnOneRank) {
  SelfCommunicator c;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  std::vector<float> a{1, 2, 3}, out(3);
  c.all_reduce_sum(a);
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3}));
  c.all_gather(a, out);
  EXPECT_EQ(out, a);
  c.reduce_scatter_sum(a, out);
  EXPECT_EQ(out, a);
  const std::vector<int64_t> counts{2};
  std::vector<float> recv(2);
  c.all_to_all_v(a, counts, recv, counts);
  EXPECT_EQ(recv, (std::vector<float>{1, 2}));
  c.send(a, 0);
  c.recv(out, 0);
  EXPECT_EQ(out, a);
  EXPECT_THROW(c.recv(out, 0), std::runtime_error);  // nothing pending: an error, not a hang
  EXPECT_THROW(c.send(a, 1), std::invalid_argument);
  std::vector<float> wrong(2);
  EXPECT_THROW(c.all_gather(a, wrong), std::invalid_argument);
  c.barrier();
}

TEST(OpTimer, TimesEachKeyOnceAndCountsCalls) {
  model::Op op;
  op.name = "q_proj";
  OpTimer t(3);
  int calls = 0;
  const OpKey key{&op, "f32", {4, 8}, {100, 200}};
  EXPECT_EQ(t.run(key, [&] { return ++calls; }), 1);  // the real call comes first and is returned
  EXPECT_EQ(calls, 4);                                // then 3 timed repeats
  t.run(key, [&] { return ++calls; });
  EXPECT_EQ(calls, 5);  // already timed: runs once
  Tensor x({1, 2}, {1, 2});
  t.run_inplace(OpKey{&op, "f32", {1, 2}, {}}, x, [](Tensor& v) { v.data[0] += 1; });
  EXPECT_EQ(x.data[0], 2.0f);  // repeats worked on copies
  const auto r = t.results();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].calls, 2);
  EXPECT_EQ(r[0].iterations, 3);
  EXPECT_LE(r[0].min_s, r[0].mean_s);
  EXPECT_EQ(r[0].flops, 100);
  EXPECT_GT(t.overhead_s(), 0.0);
}

// host_s is the host's wall time of the real calls alone: here the real call sleeps
// 10 ms and each of its 3 timed repeats 100 ms; an in-place op's real call (after its
// repeats) counts too.
TEST(OpTimer, HostSecondsAreTheRealCallsOnly) {
  model::Op op;
  op.name = "o_proj";
  OpTimer t(3);
  int calls = 0;
  const auto nap = [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  t.run(OpKey{&op, "f32", {4, 8}, {}}, [&] { return nap(++calls == 1 ? 10 : 100), calls; });
  Tensor x({1, 2}, {1, 2});
  int inplace = 0;
  t.run_inplace(OpKey{&op, "f32", {1, 2}, {}}, x, [&](Tensor&) { nap(++inplace == 4 ? 10 : 100); });
  const auto r = t.results();
  ASSERT_EQ(r.size(), 2u);
  for (const OpMeasurement& m : r) {
    EXPECT_GE(m.host_s, 0.010);
    EXPECT_LT(m.host_s, 0.200) << "a timed repeat counted as a real call";
  }
  t.set_recording(false);
  t.run(OpKey{&op, "f32", {4, 8}, {}}, [&] { return nap(50), 0; });
  EXPECT_EQ(t.results()[0].host_s, r[0].host_s) << "an unrecorded call counted";
}

// A backend's device clock (the CUDA backend's events) times the repeats instead of the
// host's: each repeat reads it once before (discarded: earlier work) and once after.
double g_device_s = 0;
double fake_device_clock() {
  g_device_s += 0.001;
  return g_device_s;  // before a repeat: 0.001 * (2i + 1); after: 0.001 * (2i + 2)
}

TEST(OpTimer, ADeviceClockTimesTheRepeats) {
  model::Op op;
  op.name = "o_proj";
  OpTimer t(3);
  EXPECT_FALSE(t.device_clock());
  t.set_device_clock(&fake_device_clock);
  EXPECT_TRUE(t.device_clock());
  t.run(OpKey{&op, "f32", {1, 8}, {}}, [] { return 0; });
  const auto r = t.results();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(r[0].min_s, 0.002);   // the after-reading of the first repeat
  EXPECT_DOUBLE_EQ(r[0].mean_s, 0.004);  // (0.002 + 0.004 + 0.006) / 3
  Measurements m;
  m.prompts = {{1}};
  m.tokens = {{2}};
  m.ranks = {RankMeasurements{}};
  m.op_clock = plan::OpClock::device;
  const nlohmann::json j = measurements_to_json(m);
  EXPECT_EQ(j["timing"]["clock"], "device");
  EXPECT_EQ(plan::measurements_from_json(j, "m.json").op_clock, plan::OpClock::device);
  nlohmann::json bad = j;
  bad["timing"]["clock"] = "wall";
  EXPECT_THROW(plan::measurements_from_json(bad, "m.json"), core::InputError);
  bad["timing"].erase("clock");  // files from before the field: the host's
  EXPECT_EQ(plan::measurements_from_json(bad, "m.json").op_clock, plan::OpClock::host);
}

// The device's clock is on only for the timed repeats: timing waits for each kernel, so
// the real call (and every later one) runs asynchronously.
bool g_clock_on = true;
void fake_clock_switch(bool on) { g_clock_on = on; }

TEST(OpTimer, TheDeviceClockIsOnOnlyForTheTimedRepeats) {
  model::Op op;
  op.name = "o_proj";
  OpTimer t(3);
  t.set_device_clock(&fake_device_clock, &fake_clock_switch);
  EXPECT_FALSE(g_clock_on);  // off from the start
  std::vector<bool> seen;
  const auto call = [&] {
    seen.push_back(g_clock_on);
    return 0;
  };
  t.run(OpKey{&op, "f32", {1, 8}, {}}, call);  // the real call, then 3 timed repeats
  t.run(OpKey{&op, "f32", {1, 8}, {}}, call);  // timed already: once, untimed
  EXPECT_EQ(seen, (std::vector<bool>{false, true, true, true, false}));
  EXPECT_FALSE(g_clock_on);
}

// Back to back: an op's repeats queue between one mark and one wait (the launches overlap
// the kernels, as in a run); its time is the span over the count, its min that mean. An
// in-place op keeps its per-repeat clock (its resets copy between repeats).
std::vector<std::string> g_span_log;
void fake_span_begin() { g_span_log.push_back("begin"); }
double fake_span_end() {
  g_span_log.push_back("end");
  return 0.012;  // 3 repeats: 4 ms each
}

TEST(OpTimer, ADeviceSpanTimesTheRepeatsBackToBack) {
  model::Op op;
  op.name = "gate_proj";
  OpTimer t(3);
  g_clock_on = true;
  t.set_device_clock(&fake_device_clock, &fake_clock_switch);
  t.set_device_span(&fake_span_begin, &fake_span_end);
  g_span_log.clear();
  t.run(OpKey{&op, "bf16", {1, 8}, {}}, [&] {
    g_span_log.push_back(g_clock_on ? "call, clock on" : "call");
    return 0;
  });
  EXPECT_EQ(g_span_log, (std::vector<std::string>{"call", "begin", "call", "call", "call", "end"}));
  const auto r = t.results();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].iterations, 3);
  EXPECT_DOUBLE_EQ(r[0].mean_s, 0.004);
  EXPECT_DOUBLE_EQ(r[0].min_s, 0.004);
  g_span_log.clear();
  Tensor x({1, 2}, {1, 2});
  t.run_inplace(OpKey{&op, "rms", {1, 2}, {}}, x, [](Tensor&) { g_span_log.push_back("in place"); });
  EXPECT_EQ(std::count(g_span_log.begin(), g_span_log.end(), "begin"), 0) << "an in-place op's repeats spanned";
  EXPECT_EQ(g_span_log.size(), 4u);  // 3 repeats and the real call
}

// A device backend's memory (pool peak, device in use) travels with the rank's memory;
// a CPU run's file has no such keys.
TEST(Measurements, DeviceMemoryOnlyForDeviceRuns) {
  Measurements m;
  m.prompts = {{1}};
  m.tokens = {{2}};
  m.ranks = {RankMeasurements{}};
  const nlohmann::json cpu = measurements_to_json(m);
  EXPECT_FALSE(cpu["ranks"][0]["memory"].contains("device_pool_peak_bytes"));
  m.ranks[0].memory.device_pool_peak_bytes = 1'234'567;
  m.ranks[0].memory.device_used_bytes = 600'000'000;
  m.ranks[0].memory.device_weights_bytes = 1'000'000;
  m.ranks[0].memory.device_workspace_peak_bytes = 234'567;
  m.ranks[0].memory.device_cached_bytes = 4'096;
  m.ranks[0].memory.device_runtime_bytes = 550'000'000;
  m.ranks[0].memory.device_kv_bytes = 65'536;
  const auto back = plan::measurements_from_json(measurements_to_json(m), "m.json");
  EXPECT_EQ(back.ranks[0].memory.device_kv_bytes, 65'536);
  EXPECT_EQ(back.ranks[0].memory.device_pool_peak_bytes, 1'234'567);
  EXPECT_EQ(back.ranks[0].memory.device_used_bytes, 600'000'000);
  EXPECT_EQ(back.ranks[0].memory.device_weights_bytes, 1'000'000);
  EXPECT_EQ(back.ranks[0].memory.device_workspace_peak_bytes, 234'567);
  EXPECT_EQ(back.ranks[0].memory.device_cached_bytes, 4'096);
  EXPECT_EQ(back.ranks[0].memory.device_runtime_bytes, 550'000'000);
  EXPECT_EQ(back.ranks[0].memory.peak_bytes(), 0);  // the host's categories, not the device's
  // The parts of the pool cannot exceed it: an error naming the field.
  for (const char* part : {"device_weights_bytes", "device_kv_bytes"}) {
    nlohmann::json bad = measurements_to_json(m);
    bad["ranks"][0]["memory"][part] = 2'000'000;
    try {
      (void)plan::measurements_from_json(bad, "m.json");
      ADD_FAILURE() << "accepted " << part << " above the pool's peak";
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("exceeds device_pool_peak_bytes (1234567)"), std::string::npos) << e.what();
    }
  }
}

TEST(Measurements, JsonHasTheKeysAndIsWrittenAtomically) {
  const std::string dir = testing::tiny_dir("llama");
  const model::Model m = model::load_model(dir);
  const testing::Golden g = testing::read_golden(dir);
  SelfCommunicator comm;
  plan::Plan plan;
  plan.model = m.config.source;
  Runner runner(m, plan, comm, dir, {3, "plan"});
  const RunResult r = runner.run(g.prompt, 2);
  const auto file = std::filesystem::temp_directory_path() / "dayzero_measurements_test.json";
  save_measurements(file, r.measurements);
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  for (const char* k : {"schema_version", "tokens", "ops", "collectives", "prefill_s", "decode_step_s", "peak_bytes",
                        "ranks", "plan", "machine", "timing", "prompts"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j.at("schema_version"), plan::kMeasurementsSchemaVersion);
  EXPECT_EQ(j.at("tokens").at(0).get<std::vector<int64_t>>(),
            (std::vector<int64_t>{g.generated.begin(), g.generated.begin() + 3}));
  EXPECT_EQ(j.at("prompts").at(0).get<std::vector<int64_t>>(), g.prompt);
  EXPECT_EQ(j.at("decode_step_s").size(), 2u);
  EXPECT_GT(j.at("prefill_s").get<double>(), 0.0);
  EXPECT_GT(j.at("peak_bytes").get<int64_t>(), m.weights_bytes(model::WeightPrecision::checkpoint));
  EXPECT_GT(j.at("ranks").at(0).at("memory").at("rss_hwm_bytes").get<int64_t>(), 0);
  EXPECT_EQ(j.at("peak_bytes"), j.at("ranks").at(0).at("memory").at("peak_bytes"));
  EXPECT_EQ(j.at("plan").at("attention").at("tp"), 1);
  EXPECT_TRUE(j.at("collectives").empty());  // one rank: no collectives
  for (const char* k : {"hostname", "cpu_model", "cores"}) EXPECT_TRUE(j.at("machine").contains(k)) << k;
  ASSERT_GT(j.at("ops").size(), 10u);
  bool saw_gemm = false;
  for (const auto& op : j.at("ops")) {
    for (const char* k : {"phase", "name", "kind", "variant", "shape", "calls", "iterations", "mean_s", "min_s",
                          "host_s", "flops", "bytes", "gflops_per_s", "gbytes_per_s"})
      ASSERT_TRUE(op.contains(k)) << k;
    EXPECT_EQ(op.at("iterations"), 3);
    EXPECT_GT(op.at("host_s").get<double>(), 0.0) << op.at("name");  // the real calls, on the host's clock
    EXPECT_LE(op.at("min_s").get<double>(), op.at("mean_s").get<double>());
    if (op.at("name") == "q_proj" && op.at("phase") == "prefill") {
      saw_gemm = true;
      EXPECT_EQ(op.at("calls"), 2);                                // two layers
      EXPECT_EQ(op.at("flops").get<int64_t>(), 2 * 12 * 64 * 64);  // tokens x 2 x hidden x heads*head_dim
      EXPECT_GT(op.at("gflops_per_s").get<double>(), 0.0);
    }
  }
  EXPECT_TRUE(saw_gemm);
  for (const auto& e : std::filesystem::directory_iterator(file.parent_path()))  // no temporary left behind
    EXPECT_EQ(e.path().string().find(file.string() + ".tmp"), std::string::npos) << e.path();

  // Read back: the same values, the same JSON.
  const Measurements back = plan::load_measurements(file);
  EXPECT_EQ(measurements_to_json(back), j);
  EXPECT_EQ(back.ops.size(), r.measurements.ops.size());
  EXPECT_EQ(back.tokens, r.measurements.tokens);
}

// The per-rank files of one run join into the run's: slowest step times, every
// rank's memory, ops and collectives, and each sequence's tokens from whoever knew them.
TEST(Measurements, MergeRanks) {
  auto rank = [](int r, double prefill, std::vector<double> decode, std::vector<std::vector<int64_t>> tokens) {
    Measurements m;
    m.prompts = {{1, 2}, {3}};
    m.tokens = std::move(tokens);
    m.prefill_s = prefill;
    m.decode_step_s = decode;
    RankMeasurements rm;
    rm.rank = r;
    rm.memory.weights_bytes = 100 * (r + 1);
    m.ranks = {rm};
    OpMeasurement o;
    o.rank = r;
    o.name = "q_proj";
    m.ops = {o};
    return m;
  };
  const Measurements m =
      plan::merge_rank_measurements({rank(1, 0.5, {0.1, 0.4}, {{}, {7, 8}}), rank(0, 0.7, {0.2, 0.3}, {{5, 6}, {}})});
  EXPECT_EQ(m.world_size, 2);
  EXPECT_DOUBLE_EQ(m.prefill_s, 0.7);
  EXPECT_EQ(m.decode_step_s, (std::vector<double>{0.2, 0.4}));
  EXPECT_EQ(m.tokens, (std::vector<std::vector<int64_t>>{{5, 6}, {7, 8}}));
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[0].rank, 0);
  EXPECT_EQ(m.peak_bytes(), 200);
  EXPECT_EQ(m.ops.size(), 2u);
  EXPECT_THROW(plan::merge_rank_measurements({rank(0, 1, {1}, {{5}, {}}), rank(1, 1, {1}, {{6}, {}})}),
               std::runtime_error);  // two ranks disagree on a sequence's tokens
}

// Bad Measurements files are errors naming the file and the field.
TEST(Measurements, StrictReader) {
  Measurements m;
  m.prompts = {{1}};
  m.tokens = {{2}};
  m.ranks = {RankMeasurements{}};
  nlohmann::json j = measurements_to_json(m);
  EXPECT_NO_THROW(plan::measurements_from_json(j, "m.json"));
  auto message = [](const nlohmann::json& bad) {
    try {
      plan::measurements_from_json(bad, "m.json");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json extra = j;
  extra["colour"] = 1;
  EXPECT_NE(message(extra).find("colour"), std::string::npos) << message(extra);
  nlohmann::json old = j;
  old["schema_version"] = 1;
  EXPECT_NE(message(old).find("schema_version"), std::string::npos) << message(old);
  nlohmann::json few = j;
  few["world_size"] = 2;
  EXPECT_NE(message(few).find("ranks"), std::string::npos) << message(few);
  EXPECT_NE(message(few).find("m.json"), std::string::npos) << message(few);
}

}  // namespace
}  // namespace dayzero::executor
