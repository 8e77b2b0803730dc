#pragma once
// Internal to topology/: the pieces a Cluster graph is assembled from. Each fabric kind
// lives in its own file (fabric_*.cpp) and only adds vertices and links through Builder.

#include <string>
#include <vector>

#include "topology/cluster.h"
#include "topology/graph.h"

namespace dayzero::topology::detail {

struct Builder {
  const ClusterConfig& cfg;
  const DeviceSpec& spec;
  double host_link_bw_Bps;
  double intra_link_bw_Bps;
  std::vector<VertexInfo>& vertices;
  std::vector<LinkInfo>& links;
  BoostGraph& g;
  std::vector<uint32_t> host_vertices;  // per node
  std::vector<uint32_t> nic_vertices;   // node * nics.per_node + k

  uint32_t add_vertex(VertexKind kind, std::string name, int node = -1, int local = -1);
  void add_link(uint32_t a, uint32_t b, LinkKind kind, double bw_Bps, double latency_s);
  uint32_t device_vertex(int node, int local) const {
    return static_cast<uint32_t>(node * cfg.devices_per_node + local);
  }
  const std::string& node_name(int node) const { return cfg.node_names[static_cast<std::size_t>(node)]; }
};

// Hosts and the PCIe tree (or direct C2C links) from devices to their host.
void build_host_links(Builder& b);
// One NVSwitch vertex per NVLink domain (one node, or several as in NVL72).
void build_nvswitch(Builder& b);
// Point-to-point links between the devices of each node (full mesh or a listed subset).
void build_mesh(Builder& b);
// NIC vertices and their PCIe links to the devices behind them.
void build_nics(Builder& b);
// Joins leaf switches, each given with its total downlink bandwidth, through one
// aggregate spine vertex (no-op for a single leaf).
void add_spine(Builder& b, const std::vector<std::pair<uint32_t, double>>& leaves);
// Leaf switches over groups of nodes, joined by an (aggregated) spine.
void build_fat_tree(Builder& b);
// One leaf per rail (NIC index) per group of nodes, rails joined by an (aggregated) spine.
void build_rail_optimized(Builder& b);

}  // namespace dayzero::topology::detail
