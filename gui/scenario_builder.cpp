#include "gui/scenario_builder.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>

#include "search/scenario.h"
#include "topology/cluster.h"
#include "topology/device.h"

namespace dayzero::gui {

namespace fs = std::filesystem;

namespace {

std::vector<NamedPath> sorted(std::vector<NamedPath> v) {
  std::sort(v.begin(), v.end(), [](const NamedPath& a, const NamedPath& b) { return a.name < b.name; });
  return v;
}

void write_json(const fs::path& file, const nlohmann::json& j) {
  std::ofstream out(file);
  out << j.dump(2) << '\n';
  out.close();
  if (!out) throw std::runtime_error(file.string() + ": cannot write");
}

}  // namespace

std::vector<NamedPath> shipped_models(const fs::path& data_dir) {
  std::vector<NamedPath> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(data_dir / "models", ec))
    if (e.is_directory(ec) && fs::exists(e.path() / "config.json", ec))
      v.push_back({e.path().filename().string(), e.path()});
  return sorted(std::move(v));
}

std::vector<NamedPath> shipped_clusters(const fs::path& data_dir) {
  std::vector<NamedPath> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(data_dir / "clusters", ec))
    if (e.is_regular_file(ec) && e.path().extension() == ".json") v.push_back({e.path().stem().string(), e.path()});
  return sorted(std::move(v));
}

ClusterEdit edit_of(const topology::ClusterConfig& c) {
  return ClusterEdit{c.nodes, c.devices_per_node, c.device, c.nics.per_node, c.nics.bw_Bps};
}

bool has_network(const topology::ClusterConfig& c) { return c.inter_node.fabric != topology::InterFabric::none; }

nlohmann::json edited_cluster_json(const topology::ClusterConfig& base, const ClusterEdit& e) {
  nlohmann::json j = base;  // topology::to_json
  const bool nodes_changed = e.nodes != base.nodes;
  const bool dpn_changed = e.devices_per_node != base.devices_per_node;
  j["name"] = base.name + "-edited";
  j["description"] = "Edited from " + base.name + ": " + std::to_string(e.nodes) + " x " +
                     std::to_string(e.devices_per_node) + " " + e.device;
  j["device"] = e.device;
  j["nodes"] = e.nodes;
  j["devices_per_node"] = e.devices_per_node;
  if (nodes_changed) j.erase("node_names");  // n0, n1, ...
  auto& host = j["host"];
  host["pcie_switches"] = std::min(base.host.pcie_switches, e.devices_per_node);
  auto& intra = j["intra_node"];
  if (dpn_changed) intra.erase("links");  // a full mesh
  if (intra.contains("domain_nodes")) intra["domain_nodes"] = std::gcd(base.intra_node.domain_nodes, e.nodes);
  const bool network = has_network(base) || e.nodes > 1;
  if (network) {
    auto& nics = j["nics"];
    if (!nics.is_object()) nics = nlohmann::json::object();
    const int per_node = e.nics_per_node > 0 ? e.nics_per_node : std::max(base.nics.per_node, 1);
    const double bw = e.nic_bw_Bps > 0 ? e.nic_bw_Bps : (base.nics.bw_Bps > 0 ? base.nics.bw_Bps : 50e9);
    if (dpn_changed || per_node != base.nics.per_node) nics.erase("devices");  // NICs split the devices evenly
    nics["per_node"] = per_node;
    nics["bw_Bps"] = bw;
    if (!j.contains("inter_node")) j["inter_node"] = {{"fabric", "fat-tree"}};
    auto& inter = j["inter_node"];
    if (nodes_changed && inter.contains("nodes_per_leaf")) {  // "all nodes" stays all; a smaller leaf is capped
      const int npl = base.inter_node.nodes_per_leaf;
      inter["nodes_per_leaf"] = npl >= base.nodes ? e.nodes : std::min(npl, e.nodes);
    }
  }
  return j;
}

nlohmann::json scenario_json(const ScenarioSpec& s, const fs::path& cluster_file) {
  nlohmann::json w = {{"input_len", s.input_len},
                      {"output_len", s.output_len},
                      {"concurrency", s.concurrency},
                      {"prefix_hit_rate", s.prefix_hit_rate},
                      {"routing_zipf_s", s.routing_zipf_s}};
  nlohmann::json j = {{"schema_version", search::kScenarioSchemaVersion},
                      {"name", s.name},
                      {"description", "Built in dayzero-gui"},
                      {"model", fs::absolute(s.model).string()},
                      {"cluster", fs::absolute(cluster_file).string()},
                      {"workload", w},
                      {"objective", s.objective}};
  nlohmann::json sla = nlohmann::json::object();
  if (s.max_ttft_s > 0) sla["max_ttft_s"] = s.max_ttft_s;
  if (s.max_tpot_ms > 0) sla["max_tpot_s"] = s.max_tpot_ms / 1e3;
  if (!sla.empty()) j["sla"] = sla;
  return j;
}

fs::path write_scenario(const ScenarioSpec& s, const fs::path& dir, const std::string& stem, const fs::path& data_dir) {
  fs::path cluster_file = s.cluster;
  if (s.cluster_edit) {
    const topology::ClusterConfig base = topology::load_cluster_config(s.cluster);
    cluster_file = dir / (stem + "-cluster.json");
    write_json(cluster_file, edited_cluster_json(base, *s.cluster_edit));
  }
  const fs::path file = dir / (stem + ".json");
  write_json(file, scenario_json(s, cluster_file));
  // The loaders judge: the same calls Session makes, minus the (slower) model parse.
  const search::Scenario loaded = search::load_scenario(file);
  (void)topology::Cluster::load(loaded.cluster_path, topology::DeviceCatalog::load_builtin(data_dir));
  return file;
}

}  // namespace dayzero::gui
