#pragma once
// Shared fixtures of the simulate tests: bundled models and clusters, plans, and the
// hand-computed cases' check.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "../plan/helpers.h"
#include "model/model.h"
#include "plan/plan_json.h"
#include "simulate/simulator.h"
#include "topology/cluster.h"
#include "topology/device.h"

namespace dayzero::simulate::testing {

inline model::Model load_model(const std::string& name) {
  return model::load_model(std::string(DAYZERO_DATA_DIR) + "/models/" + name);
}

inline topology::Cluster load_cluster(const std::string& name) {
  const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  return topology::Cluster::load(std::string(DAYZERO_DATA_DIR) + "/clusters/" + name + ".json", catalog);
}

using plan::testing::plan;  // tests/plan/helpers.h

// |got - want| within rel x |want|.
inline void expect_close(double got, double want, double rel = 1e-9) { EXPECT_NEAR(got, want, std::abs(want) * rel); }

// Validates and simulates.
inline Prediction run(const model::Model& m, const topology::Cluster& c, const plan::Plan& p) {
  plan::validate_plan(p, m, c.num_devices(), "test-plan.json");
  Simulator sim(m, c);
  return sim.simulate(p);
}

}  // namespace dayzero::simulate::testing
