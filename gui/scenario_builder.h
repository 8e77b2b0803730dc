#pragma once
// "Build a scenario": what the New scenario dialog produces, written as the files
// `dayzero plan` reads (a scenario JSON, and an edited cluster JSON when the
// cluster was edited) and checked with the same loaders. Plain C++ (no Qt).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "topology/cluster_config.h"

namespace dayzero::gui {

struct NamedPath {
  std::string name;
  std::filesystem::path path;
};

// The bundled models (data_dir/models/<Name>/ holding a config.json) and clusters
// (data_dir/clusters/*.json), sorted by name.
std::vector<NamedPath> shipped_models(const std::filesystem::path& data_dir);
std::vector<NamedPath> shipped_clusters(const std::filesystem::path& data_dir);

// Edits of a cluster's shape. NICs matter only with a network between nodes: a
// cluster that had none gets a fat tree when it is given more than one node.
struct ClusterEdit {
  int nodes = 1;
  int devices_per_node = 1;
  std::string device;     // a device catalog name
  int nics_per_node = 0;  // 0: keep the cluster's
  double nic_bw_Bps = 0;  // 0: keep the cluster's
};

// The edit as the cluster stands (no change).
ClusterEdit edit_of(const topology::ClusterConfig& c);
bool has_network(const topology::ClusterConfig& c);
// The cluster JSON with the edit applied: placements that no longer fit the new
// shape (node names, NIC device lists, mesh links, NVLink domain, leaf size, PCIe
// switches) fall back to the loader's defaults.
nlohmann::json edited_cluster_json(const topology::ClusterConfig& base, const ClusterEdit& e);

struct ScenarioSpec {
  std::string name = "built";
  std::filesystem::path model;              // a config.json or a model directory
  std::filesystem::path cluster;            // a cluster JSON file
  std::optional<ClusterEdit> cluster_edit;  // none: the cluster file as it is
  int64_t input_len = 1024;
  int64_t output_len = 256;
  int64_t concurrency = 64;
  double prefix_hit_rate = 0;
  double routing_zipf_s = 0;
  double max_ttft_s = 0;                            // 0 = no limit
  double max_tpot_ms = 0;                           // 0 = no limit
  std::string objective = "throughput_per_device";  // latency, fewest_devices
};

// The scenario JSON (paths absolute, so the file may live anywhere).
nlohmann::json scenario_json(const ScenarioSpec& s, const std::filesystem::path& cluster_file);

// Writes `stem`.json (and `stem`-cluster.json when edited) into dir and checks
// them with search::load_scenario and the cluster loader (devices from the
// catalog in data_dir); returns the scenario file. Throws what the loaders throw.
std::filesystem::path write_scenario(const ScenarioSpec& s, const std::filesystem::path& dir, const std::string& stem,
                                     const std::filesystem::path& data_dir);

}  // namespace dayzero::gui
