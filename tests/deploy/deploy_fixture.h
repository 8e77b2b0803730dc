#pragma once
// Shared by the deploy tests: a model and a cluster from the shipped data, and plans
// made on them.
#include <string>

#include "deploy/launch.h"
#include "plan/plan_json.h"
#include "search/session.h"
#include "topology/device.h"

namespace dayzero::deploy::testing {

inline const std::filesystem::path kData = DAYZERO_DATA_DIR;

struct World {
  model::Model model;
  topology::Cluster cluster;
};

inline World world(const std::string& model_folder, const std::string& cluster) {
  topology::DeviceCatalog catalog = topology::DeviceCatalog::load_builtin(kData);
  return {model::load_model(kData / "models" / model_folder),
          topology::Cluster::load(kData / "clusters" / (cluster + ".json"), catalog)};
}

// A plan with the given layout (batch over the whole worker).
inline plan::Plan layout(int pp, int tp, int dp, plan::MoeLayout moe, int64_t batch) {
  plan::Plan p;
  p.pp = pp;
  p.attention = {tp, dp};
  p.moe = moe;
  p.workload.batch = batch;
  p.workload.input_len = 2048;
  p.workload.output_len = 512;
  return p;
}

inline EngineArgs args(plan::Engine e) { return EngineArgs::pinned(e, kData); }

}  // namespace dayzero::deploy::testing
