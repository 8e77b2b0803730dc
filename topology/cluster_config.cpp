#include "topology/cluster_config.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::topology {

using core::Fields;
using core::show;

std::string_view intra_fabric_name(IntraFabric f) {
  switch (f) {
    case IntraFabric::nvswitch: return "nvswitch";
    case IntraFabric::pcie: return "pcie";
    case IntraFabric::mesh: return "mesh";
  }
  return "?";
}

std::string_view inter_fabric_name(InterFabric f) {
  switch (f) {
    case InterFabric::none: return "none";
    case InterFabric::fat_tree: return "fat-tree";
    case InterFabric::rail_optimized: return "rail-optimized";
  }
  return "?";
}

namespace {

int local_index(Fields& r, const std::string& key, const nlohmann::json& v, int devices_per_node) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= devices_per_node)
    r.fail(key, v, "expected a device index from 0 to " + std::to_string(devices_per_node - 1));
  return static_cast<int>(v.get<int64_t>());
}

HostConfig host_from_json(const nlohmann::json& j, const std::string& file, int devices_per_node) {
  Fields r(j, file, "host.");
  HostConfig h;
  if (auto m = r.opt_positive("mem_bytes")) h.mem_bytes = *m;
  h.pcie_switches = static_cast<int>(r.opt_int("pcie_switches", 0, 0, kMaxPcieSwitchesPerNode));
  if (h.pcie_switches > devices_per_node)
    r.fail("pcie_switches", "more PCIe switches than devices per node (" + std::to_string(devices_per_node) + ")");
  h.link_bw_Bps = r.opt_positive("link_bw_Bps");
  h.switch_uplink_bw_Bps = r.opt_positive("switch_uplink_bw_Bps");
  h.latency_s = r.opt_non_negative("latency_s", kDefaultPcieLinkLatency_s);
  r.reject_unknown();
  return h;
}

IntraNodeConfig intra_from_json(const nlohmann::json& j, const std::string& file, int nodes, int per_node) {
  Fields r(j, file, "intra_node.");
  IntraNodeConfig c;
  const std::string fabric = r.req_string("fabric");
  if (fabric == "nvswitch") {
    c.fabric = IntraFabric::nvswitch;
  } else if (fabric == "pcie") {
    c.fabric = IntraFabric::pcie;
  } else if (fabric == "mesh") {
    c.fabric = IntraFabric::mesh;
  } else {
    r.fail("fabric", j.at("fabric"), "expected \"nvswitch\", \"mesh\" or \"pcie\"");
  }
  c.bw_Bps = r.opt_positive("bw_Bps");
  const double default_latency =
      c.fabric == IntraFabric::mesh ? kDefaultMeshLinkLatency_s : kDefaultNvlinkLinkLatency_s;
  c.latency_s = r.opt_non_negative("latency_s", default_latency);
  if (c.fabric == IntraFabric::nvswitch) {
    c.domain_nodes = static_cast<int>(r.opt_int("domain_nodes", 1, 1, kMaxNodes));
    if (nodes % c.domain_nodes != 0)
      r.fail("domain_nodes", j.at("domain_nodes"), "must divide nodes (" + std::to_string(nodes) + ")");
  }
  if (c.fabric == IntraFabric::mesh) {
    if (per_node > kMaxMeshDevicesPerNode)
      r.fail("fabric", "a mesh of more than " + std::to_string(kMaxMeshDevicesPerNode) +
                           " devices per node (devices_per_node = " + std::to_string(per_node) +
                           "); use \"nvswitch\" or \"pcie\"");
    if (const nlohmann::json* links = r.opt("links")) {
      if (!links->is_array() || links->empty()) r.fail("links", *links, "expected a list of [a, b] device pairs");
      std::set<std::pair<int, int>> seen;
      for (std::size_t i = 0; i < links->size(); ++i) {
        const auto& p = (*links)[i];
        const std::string key = "links[" + std::to_string(i) + "]";
        if (!p.is_array() || p.size() != 2) r.fail(key, p, "expected a pair [a, b] of local device indices");
        const int a = local_index(r, key, p[0], per_node), b = local_index(r, key, p[1], per_node);
        if (a == b) r.fail(key, p, "a link joins two different devices");
        if (!seen.insert({std::min(a, b), std::max(a, b)}).second) r.fail(key, p, "duplicate link");
        c.mesh_links.emplace_back(a, b);
      }
    }
  }
  r.reject_unknown();
  return c;
}

NicConfig nics_from_json(const nlohmann::json& j, const std::string& file, int per_node_devices) {
  Fields r(j, file, "nics.");
  NicConfig n;
  n.per_node = static_cast<int>(r.req_int("per_node", 1, kMaxNicsPerNode));
  n.bw_Bps = r.req_positive("bw_Bps");
  n.pcie_bw_Bps = r.opt_positive("pcie_bw_Bps");
  n.latency_s = r.opt_non_negative("latency_s", 2 * kDefaultPcieLinkLatency_s);
  if (const nlohmann::json* devs = r.opt("devices")) {
    if (!devs->is_array() || devs->size() != static_cast<std::size_t>(n.per_node))
      r.fail("devices", *devs, "expected one list of device indices per NIC (" + std::to_string(n.per_node) + ")");
    for (std::size_t i = 0; i < devs->size(); ++i) {
      const auto& list = (*devs)[i];
      const std::string key = "devices[" + std::to_string(i) + "]";
      if (!list.is_array() || list.empty()) r.fail(key, list, "expected a non-empty list of device indices");
      std::vector<int> locals;
      for (const auto& v : list) {
        const int d = local_index(r, key, v, per_node_devices);
        if (std::find(locals.begin(), locals.end(), d) != locals.end()) r.fail(key, list, "lists a device twice");
        locals.push_back(d);
      }
      n.devices.push_back(std::move(locals));
    }
  } else {
    // Default: NICs split the devices into equal contiguous blocks (NIC k serves
    // devices k*b .. k*b+b-1), or each NIC serves one device when there are more NICs.
    for (int k = 0; k < n.per_node; ++k) {
      std::vector<int> locals;
      if (n.per_node >= per_node_devices) {
        locals.push_back(k % per_node_devices);
      } else {
        if (per_node_devices % n.per_node != 0)
          r.fail("per_node", j.at("per_node"),
                 "does not divide devices_per_node (" + std::to_string(per_node_devices) +
                     "); list nics.devices explicitly");
        const int block = per_node_devices / n.per_node;
        for (int d = k * block; d < (k + 1) * block; ++d) locals.push_back(d);
      }
      n.devices.push_back(std::move(locals));
    }
  }
  r.reject_unknown();
  return n;
}

InterNodeConfig inter_from_json(const nlohmann::json& j, const std::string& file, int nodes) {
  Fields r(j, file, "inter_node.");
  InterNodeConfig c;
  const std::string fabric = r.req_string("fabric");
  if (fabric == "fat-tree") {
    c.fabric = InterFabric::fat_tree;
  } else if (fabric == "rail-optimized") {
    c.fabric = InterFabric::rail_optimized;
  } else {
    r.fail("fabric", j.at("fabric"), "expected \"fat-tree\" or \"rail-optimized\"");
  }
  c.nodes_per_leaf = static_cast<int>(r.opt_int("nodes_per_leaf", nodes, 1, kMaxNodes));
  c.oversubscription = r.opt_positive("oversubscription").value_or(kDefaultOversubscription);
  if (c.oversubscription < 1.0)
    r.fail("oversubscription", j.at("oversubscription"), "must be at least 1 (downlink:uplink bandwidth ratio)");
  c.latency_s = r.opt_non_negative("latency_s", kDefaultNetworkLinkLatency_s);
  r.reject_unknown();
  return c;
}

}  // namespace

ClusterConfig cluster_config_from_json(const nlohmann::json& j, const std::string& source) {
  Fields r(j, source, "");
  ClusterConfig c;
  c.source = source;
  c.name = r.req_string("name");
  c.description = r.opt_string("description", "");
  c.device = r.req_string("device");
  c.nodes = static_cast<int>(r.req_int("nodes", 1, kMaxNodes));
  c.devices_per_node = static_cast<int>(r.req_int("devices_per_node", 1, kMaxDevicesPerNode));
  if (int64_t{c.nodes} * c.devices_per_node > kMaxDevices)
    r.fail("nodes", "nodes x devices_per_node = " + std::to_string(int64_t{c.nodes} * c.devices_per_node) +
                        " devices; at most " + std::to_string(kMaxDevices) + " are accepted");
  if (const nlohmann::json* names = r.opt("node_names")) {
    if (!names->is_array() || names->size() != static_cast<std::size_t>(c.nodes))
      r.fail("node_names", *names, "expected a list of " + std::to_string(c.nodes) + " names (one per node)");
    for (std::size_t i = 0; i < names->size(); ++i) {
      const auto& v = (*names)[i];
      const std::string key = "node_names[" + std::to_string(i) + "]";
      if (!v.is_string() || v.get_ref<const std::string&>().empty()) r.fail(key, v, "expected a non-empty string");
      const auto& s = v.get_ref<const std::string&>();
      if (std::find(c.node_names.begin(), c.node_names.end(), s) != c.node_names.end())
        r.fail(key, v, "duplicate node name");
      c.node_names.push_back(s);
    }
  } else {
    for (int i = 0; i < c.nodes; ++i) c.node_names.push_back(std::string("n").append(std::to_string(i)));
  }
  if (const nlohmann::json* h = r.opt("host")) c.host = host_from_json(*h, source, c.devices_per_node);
  c.intra_node = intra_from_json(r.req("intra_node"), source, c.nodes, c.devices_per_node);
  if (const nlohmann::json* n = r.opt("nics")) c.nics = nics_from_json(*n, source, c.devices_per_node);
  if (const nlohmann::json* n = r.opt("inter_node")) {
    c.inter_node = inter_from_json(*n, source, c.nodes);
    if (c.nics.per_node == 0) r.fail("inter_node", *n, "a network between nodes needs NICs: add a \"nics\" section");
  }
  r.reject_unknown();
  return c;
}

ClusterConfig parse_cluster_config(std::string_view json_text, const std::string& source) {
  return cluster_config_from_json(core::parse_json_text(json_text, source), source);
}

ClusterConfig load_cluster_config(const std::filesystem::path& file) {
  return cluster_config_from_json(core::read_json_file(file), file.string());
}

void to_json(nlohmann::json& j, const ClusterConfig& c) {
  j = nlohmann::json::object();
  j["name"] = c.name;
  if (!c.description.empty()) j["description"] = c.description;
  j["device"] = c.device;
  j["nodes"] = c.nodes;
  j["devices_per_node"] = c.devices_per_node;
  j["node_names"] = c.node_names;
  auto& h = j["host"];
  h = nlohmann::json::object();
  if (c.host.mem_bytes > 0) h["mem_bytes"] = c.host.mem_bytes;
  h["pcie_switches"] = c.host.pcie_switches;
  if (c.host.link_bw_Bps) h["link_bw_Bps"] = *c.host.link_bw_Bps;
  if (c.host.switch_uplink_bw_Bps) h["switch_uplink_bw_Bps"] = *c.host.switch_uplink_bw_Bps;
  h["latency_s"] = c.host.latency_s;
  auto& in = j["intra_node"];
  in = {{"fabric", intra_fabric_name(c.intra_node.fabric)}, {"latency_s", c.intra_node.latency_s}};
  if (c.intra_node.bw_Bps) in["bw_Bps"] = *c.intra_node.bw_Bps;
  if (c.intra_node.fabric == IntraFabric::nvswitch) in["domain_nodes"] = c.intra_node.domain_nodes;
  if (!c.intra_node.mesh_links.empty()) {
    in["links"] = nlohmann::json::array();
    for (auto [a, b] : c.intra_node.mesh_links) in["links"].push_back({a, b});
  }
  if (c.nics.per_node > 0) {
    j["nics"] = {{"per_node", c.nics.per_node},
                 {"bw_Bps", c.nics.bw_Bps},
                 {"devices", c.nics.devices},
                 {"latency_s", c.nics.latency_s}};
    if (c.nics.pcie_bw_Bps) j["nics"]["pcie_bw_Bps"] = *c.nics.pcie_bw_Bps;
  }
  if (c.inter_node.fabric != InterFabric::none) {
    j["inter_node"] = {{"fabric", inter_fabric_name(c.inter_node.fabric)},
                       {"nodes_per_leaf", c.inter_node.nodes_per_leaf},
                       {"oversubscription", c.inter_node.oversubscription},
                       {"latency_s", c.inter_node.latency_s}};
  }
}

}  // namespace dayzero::topology
