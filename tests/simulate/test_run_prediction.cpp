// The simulator's prediction of a measured run as a whole (simulate/run_prediction.h):
// the run's workload on its plan, and the comparison against its measured steps.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "simulate/run_prediction.h"
#include "simulate/simulator.h"
#include "topology/cluster.h"
#include "topology/cluster_config.h"
#include "topology/device.h"

namespace dayzero::simulate {
namespace {

// A 2-replica run (attention DP 2) of 3 sequences, 2 decode steps.
plan::Measurements two_replica_run() {
  plan::Measurements m;
  m.world_size = 2;
  m.plan.attention.dp = 2;
  m.plan.prefill_chunk_tokens = 64;
  m.prompts = {{1, 2, 3, 4}, {5, 6, 7, 8, 9, 10}, {11, 12, 13, 14, 15}};
  m.tokens = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}};
  m.prefill_s = 0.020;
  m.decode_step_s = {0.004, 0.006};
  return m;
}

TEST(RunPrediction, WorkloadIsTheRuns) {
  const plan::Plan p = plan_of_run(two_replica_run());
  EXPECT_EQ(p.workload.batch, 3);
  EXPECT_EQ(p.workload.input_len, 5);   // (4 + 6 + 5) / 3
  EXPECT_EQ(p.workload.output_len, 3);  // 2 decode steps + 1: mean decode context input + 1.5
  EXPECT_EQ(p.attention.dp, 2);
  EXPECT_EQ(p.prefill_chunk_tokens, 64);
  plan::Measurements none;
  EXPECT_THROW(plan_of_run(none), std::invalid_argument);
}

// The prediction is the simulator's own: prefill = the fullest replica's prompts
// (2 of 3, round robin) x TTFT, decode = TPOT; errors against the measured steps.
TEST(RunPrediction, MatchesTheSimulatorAndTheMeasuredSteps) {
  const plan::Measurements m = two_replica_run();
  const model::Model model = model::load_model(std::string(DAYZERO_FIXTURES_DIR) + "/tiny/llama");
  const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  const topology::Cluster cluster(
      topology::load_cluster_config(std::string(DAYZERO_DATA_DIR) + "/clusters/cpu-host-1x4.json"), catalog);
  const Efficiency eff = EfficiencyTable::load_builtin(DAYZERO_DATA_DIR).for_device("cpu-host");
  const RunPrediction r = predict_run(m, model, cluster, eff);

  Simulator sim(model, cluster, eff);
  plan::Plan p = plan_of_run(m);
  p.cluster = cluster.config().name;
  const Prediction direct = sim.simulate(p);
  EXPECT_EQ(r.prompts_per_replica, 2);
  EXPECT_DOUBLE_EQ(r.predicted_prefill_s, 2 * direct.ttft_s);
  EXPECT_DOUBLE_EQ(r.predicted_decode_step_s, direct.tpot_s);
  EXPECT_DOUBLE_EQ(r.measured_prefill_s, 0.020);
  EXPECT_DOUBLE_EQ(r.measured_decode_step_s, 0.005);  // the mean of 4 and 6 ms
  EXPECT_NEAR(r.prefill_error_pct, (r.predicted_prefill_s - 0.020) / 0.020 * 100, 1e-9);
  EXPECT_NEAR(r.decode_error_pct, (r.predicted_decode_step_s - 0.005) / 0.005 * 100, 1e-9);
  EXPECT_GT(r.predicted_prefill_s, 0);
  EXPECT_GT(r.predicted_decode_step_s, 0);

  plan::Measurements no_decode = m;  // a run without decode steps has no decode error
  no_decode.decode_step_s.clear();
  EXPECT_TRUE(std::isnan(predict_run(no_decode, model, cluster, eff).decode_error_pct));
}

}  // namespace
}  // namespace dayzero::simulate
