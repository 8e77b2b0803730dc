#pragma once
// What the GUI works on: a scenario with its model, cluster and efficiencies,
// loaded through the same library calls as `dayzero plan`, and the what-if knobs
// applied to a plan. Plain C++ (no Qt), so the window and the tests share it.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/model.h"
#include "plan/plan.h"
#include "search/scenario.h"
#include "search/search.h"
#include "search/session.h"
#include "simulate/efficiency.h"
#include "topology/cluster.h"

namespace dayzero::gui {

// A scenario file, or the name of a bundled scenario (as `dayzero plan` takes it).
std::filesystem::path resolve_scenario(const std::string& arg);

// The scenario with its model, cluster and efficiencies: the library's one loader.
using search::Session;
Session load_session(const std::filesystem::path& scenario_file);  // on core::data_dir()

// The knobs of the what-if panel.
struct Knobs {
  int64_t batch = 1;
  int64_t input_len = 1024;
  search::WeightChoice weights = search::WeightChoice::checkpoint;
  plan::KvDtype kv_cache = plan::KvDtype::bf16;
  int devices = 0;  // world size; 0 = as the plan has it
};

Knobs knobs_of(const search::Evaluated& e);
// The plan with the knobs applied; weights as the search sets them (search/space.cpp).
// Throws std::invalid_argument when the device count does not fit the layout.
plan::Plan apply_knobs(plan::Plan p, const Knobs& k);
// The plan on `devices` devices: TP and PP kept, attention DP = devices / (pp x tp);
// MoE keeps its TP and scales EP when it has expert parallelism (else its DP);
// ranks keep their devices, added ranks take the next unused ones. Throws
// std::invalid_argument when devices is not a multiple of pp x tp; what else
// does not fit (EP against the expert count, the cluster's size) is for validate_plan.
plan::Plan with_devices(plan::Plan p, int devices);
// The combo boxes' entries: every weight choice and KV dtype, by name.
std::vector<std::string> weight_choices();
std::vector<std::string> kv_choices();

}  // namespace dayzero::gui
