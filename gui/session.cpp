#include "gui/session.h"

#include <cstdlib>

#include "topology/device.h"

namespace dayzero::gui {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("DAYZERO_DATA_DIR"); env && *env) return env;
  return DAYZERO_DATA_DIR;
}

std::filesystem::path resolve_scenario(const std::string& arg) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return arg;
  const auto bundled = data_dir() / (arg + ".json");
  if (arg.find('/') == std::string::npos && std::filesystem::exists(bundled, ec)) return bundled;
  return arg;  // the loader reports the missing file by its given name
}

Session::Session(const std::filesystem::path& scenario_file)
    : scenario(search::load_scenario(scenario_file)),
      model(search::load_scenario_model(scenario)),
      cluster(topology::Cluster::load(scenario.cluster_path, topology::DeviceCatalog::load_builtin(data_dir()))),
      efficiency(simulate::EfficiencyTable::load_builtin(data_dir()).for_device(cluster.device_spec().name)) {}

Knobs knobs_of(const search::Evaluated& e) {
  return Knobs{e.plan.workload.batch, e.plan.workload.input_len, e.weights, e.plan.dtypes.kv_cache};
}

simulate::Plan apply_knobs(simulate::Plan p, const Knobs& k) {
  p.workload.batch = k.batch;
  p.workload.input_len = k.input_len;
  p.dtypes.kv_cache = k.kv_cache;
  if (k.weights == "experts-int4") {
    p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.embedding = "checkpoint";
    p.dtypes.experts = "int4";
  } else {
    p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.experts = k.weights;
    p.dtypes.embedding = k.weights == "int4" ? "checkpoint" : k.weights;  // embeddings stay 16-bit under INT4
  }
  return p;
}

std::vector<std::string> weight_choices() { return {"checkpoint", "bf16", "fp8", "int4", "experts-int4"}; }
std::vector<std::string> kv_choices() { return {"bf16", "fp8"}; }

}  // namespace dayzero::gui
