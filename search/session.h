#pragma once
// The one session loader: everything a scenario names, loaded — the scenario, its
// model, the cluster (on the shipped device catalog plus an optional extra one)
// and the efficiency figures of the cluster's device. `dayzero plan`, the GUI,
// the benchmarks and the tests all start here.
//
// A Simulator keeps references to `model` and `cluster`: keep the Session in
// place (e.g. behind a shared_ptr) while simulators or search results use it.

#include <filesystem>
#include <string>

#include "model/model.h"
#include "search/scenario.h"
#include "simulate/efficiency.h"
#include "topology/cluster.h"

namespace dayzero::search {

struct Session {
  Scenario scenario;
  model::Model model;
  topology::Cluster cluster;
  simulate::Efficiency efficiency;  // data_dir's table, for the cluster's device
  std::string efficiency_source;
};

// `scenario_file`: a path (resolve_scenario turns a bundled name into one).
// `data_dir`: the shipped data (core::data_dir()). `extra_catalog`, when not empty,
// adds or replaces devices. Throws core::InputError naming the file and the field.
Session load_session(const std::filesystem::path& scenario_file, const std::filesystem::path& data_dir,
                     const std::filesystem::path& extra_catalog = {});
// The same for a scenario built in code (its model_path and cluster_path set).
Session make_session(Scenario s, const std::filesystem::path& data_dir,
                     const std::filesystem::path& extra_catalog = {});

}  // namespace dayzero::search
