#include "gui/session.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "core/data_dir.h"
#include "topology/device.h"

namespace dayzero::gui {

std::filesystem::path resolve_scenario(const std::string& arg) {
  return search::resolve_scenario(arg, core::data_dir());
}

Session load_session(const std::filesystem::path& scenario_file) {
  return search::load_session(scenario_file, core::data_dir());
}

Knobs knobs_of(const search::Evaluated& e) {
  return Knobs{e.plan.workload.batch, e.plan.workload.input_len, e.weights, e.plan.dtypes.kv_cache,
               e.plan.world_size()};
}

plan::Plan with_devices(plan::Plan p, int devices) {
  const int unit = p.pp * p.attention.tp;
  if (devices < 1 || devices % unit != 0)
    throw std::invalid_argument(std::to_string(devices) +
                                " devices: not a multiple of pp x tp = " + std::to_string(p.pp) + " x " +
                                std::to_string(p.attention.tp) + " = " + std::to_string(unit));
  const int per_stage = devices / p.pp;
  p.attention.dp = per_stage / p.attention.tp;
  if (p.moe.ep > 1) {
    // Replicas of the expert set stay; the experts spread over the new ranks.
    if (per_stage % (p.moe.tp * p.moe.dp) != 0) p.moe.dp = 1;
    p.moe.ep = per_stage / (p.moe.tp * p.moe.dp);
  } else {
    p.moe.dp = per_stage / p.moe.tp;
  }
  if (!p.devices.empty()) {
    std::set<uint32_t> used;
    p.devices.resize(std::min(p.devices.size(), static_cast<size_t>(devices)));
    used.insert(p.devices.begin(), p.devices.end());
    for (uint32_t d = 0; static_cast<int>(p.devices.size()) < devices; ++d)
      if (!used.count(d)) p.devices.push_back(d);
  }
  return p;
}

plan::Plan apply_knobs(plan::Plan p, const Knobs& k) {
  if (k.devices > 0 && k.devices != p.world_size()) p = with_devices(std::move(p), k.devices);
  p.workload.batch = k.batch;
  p.workload.input_len = k.input_len;
  p.dtypes.kv_cache = k.kv_cache;
  search::apply_weight_choice(p, k.weights);
  return p;
}

std::vector<std::string> weight_choices() {
  std::vector<std::string> v;
  for (search::WeightChoice w : search::kAllWeightChoices) v.emplace_back(search::weight_choice_name(w));
  return v;
}

std::vector<std::string> kv_choices() {
  std::vector<std::string> v;
  for (plan::KvDtype d : plan::kAllKvDtypes) v.emplace_back(plan::kv_dtype_name(d));
  return v;
}

}  // namespace dayzero::gui
