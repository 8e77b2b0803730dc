// Latency curves (serve/sweep.h): each axis's client, a point that cannot be served
// recorded and not fatal, a bad value refused before any point is served, and the
// sweep's JSON and CSV.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "../simulate/helpers.h"
#include "core/error.h"
#include "serve/sweep.h"

namespace dayzero::serve {
namespace {

Client base() {
  Client c;
  c.requests = 300;
  c.shape = {2000, 100, 500};
  return c;
}

TEST(Sweep, EachAxisSetsItsPartOfTheClient) {
  const Client c = client_at(base(), SweepAxis::concurrency, 64);
  EXPECT_EQ(c.kind, ClientKind::closed_loop);
  EXPECT_EQ(c.concurrency, 64);
  EXPECT_EQ(c.requests, 5 * 64);                                          // five requests per slot
  EXPECT_EQ(c.warmup, 64);                                                // the first wave left out
  EXPECT_EQ(client_at(base(), SweepAxis::concurrency, 2).requests, 200);  // at least 200
  const Client r = client_at(base(), SweepAxis::request_rate, 2.5);
  EXPECT_EQ(r.kind, ClientKind::open_loop);
  EXPECT_DOUBLE_EQ(r.rate_per_s, 2.5);
  EXPECT_EQ(r.warmup, 30);
  const Client in = client_at(base(), SweepAxis::input_len, 300);
  EXPECT_EQ(in.shape.input_len, 300);
  EXPECT_EQ(in.shape.cached_prefix, 299);  // a cached prefix never covers the whole prompt
  EXPECT_EQ(client_at(base(), SweepAxis::output_len, 7).shape.output_len, 7);
  EXPECT_THROW(client_at(base(), SweepAxis::concurrency, 0), std::invalid_argument);
  EXPECT_THROW(client_at(base(), SweepAxis::concurrency, 2.5), std::invalid_argument);
  EXPECT_THROW(client_at(base(), SweepAxis::request_rate, -1), std::invalid_argument);
}

TEST(Sweep, PointsAreServedInOrderAndFailuresRecorded) {
  std::vector<int64_t> seen;
  const Sweep s = run_sweep(SweepAxis::concurrency, {1, 4, 16}, base(), [&](const Client& c, SweepPoint& p) {
    seen.push_back(c.concurrency);
    if (c.concurrency == 16) throw std::invalid_argument("the KV cache cannot hold one request");
    p.layout = "tp1";
    p.served.output_tokens_per_s = 10.0 * static_cast<double>(c.concurrency);
  });
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 4, 16}));
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_DOUBLE_EQ(s.points[1].served.output_tokens_per_s, 40);
  EXPECT_EQ(s.points[2].error, "the KV cache cannot hold one request");
  int served = 0;
  EXPECT_THROW(run_sweep(SweepAxis::concurrency, {1, 0}, base(), [&](const Client&, SweepPoint&) { ++served; }),
               std::invalid_argument);
  EXPECT_EQ(served, 0);  // refused before any point
  EXPECT_THROW(run_sweep(SweepAxis::concurrency, {}, base(), [](const Client&, SweepPoint&) {}), std::invalid_argument);
}

// A real plan: more requests in flight never serve fewer tokens per second here, and
// the curve's TPOT grows with the batch.
TEST(Sweep, ConcurrencyCurveOfARealPlan) {
  const model::Model m = simulate::testing::load_model("Llama-3.1-8B");
  const topology::Cluster c = simulate::testing::load_cluster("h100x1");
  simulate::Simulator sim(m, c);
  const plan::Plan p = simulate::testing::plan(1);
  ServeOptions o;
  o.engine = default_profile(Engine::vllm);
  o.max_points = 0;
  Client b;
  b.shape = {1000, 100, 0};
  const Sweep s = run_sweep(SweepAxis::concurrency, {1, 8, 64}, b, [&](const Client& cl, SweepPoint& pt) {
    o.client = cl;
    pt.served = simulate_serving(sim, p, o);
  });
  EXPECT_LT(s.points[0].served.tpot_s.mean, s.points[2].served.tpot_s.mean);
  EXPECT_LT(s.points[0].served.output_tokens_per_s, s.points[1].served.output_tokens_per_s);
  EXPECT_LT(s.points[1].served.output_tokens_per_s, s.points[2].served.output_tokens_per_s);
}

Sweep sample() {
  Sweep s;
  s.axis = SweepAxis::request_rate;
  s.title = "a \"quoted\" title";
  s.max_ttft_s = 2;
  s.max_tpot_s = 0.05;
  s.points.resize(2);
  s.points[0].x = 0.5;
  s.points[0].layout = "8 dev: pp1 tp8 dp1";
  s.points[0].devices = 8;
  s.points[0].served.ttft_s = {0.2, 0.19, 0.3, 0.4, 100};
  s.points[0].served.tpot_s = {0.02, 0.02, 0.025, 0.03, 100};
  s.points[0].served.output_tokens_per_s = 1234.5;
  s.points[1].x = 1;
  s.points[1].error = "no plan fits";
  return s;
}

TEST(Sweep, JsonRoundTripAndCsv) {
  const Sweep s = sample();
  const nlohmann::json j = sweep_to_json(s);
  EXPECT_EQ(j.at("axis"), "request_rate");
  EXPECT_EQ(j.at("unit"), "requests/s");
  const Sweep back = sweep_from_json(j, "sweep.json");
  EXPECT_EQ(sweep_to_json(back), j);
  EXPECT_DOUBLE_EQ(back.points[0].served.ttft_s.p90, 0.3);
  EXPECT_EQ(back.points[1].error, "no plan fits");
  std::ostringstream csv;
  write_sweep_csv(csv, s);
  const std::string text = csv.str();
  EXPECT_EQ(text.rfind("request_rate,layout,devices,ttft_s_mean,ttft_s_p50", 0), 0u) << text;
  EXPECT_NE(text.find("0.5,\"8 dev: pp1 tp8 dp1\",8,0.2,0.19,0.3,0.4"), std::string::npos) << text;
  EXPECT_NE(text.find("1,\"\",0,,,,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"no plan fits\"\n"), std::string::npos) << text;
}

TEST(Sweep, BadJsonNamesTheField) {
  nlohmann::json j = sweep_to_json(sample());
  j["axis"] = "batch";
  try {
    sweep_from_json(j, "bad-sweep.json");
    ADD_FAILURE() << "no error";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad-sweep.json: field 'axis'"), std::string::npos) << e.what();
  }
  j = sweep_to_json(sample());
  j["points"][0]["ttft_s"]["p95"] = 1;
  EXPECT_THROW(sweep_from_json(j, "bad-sweep.json"), core::InputError);
  j = sweep_to_json(sample());
  j["points"][0]["x"] = -1;
  EXPECT_THROW(sweep_from_json(j, "bad-sweep.json"), core::InputError);
}

}  // namespace
}  // namespace dayzero::serve
