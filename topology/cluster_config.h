#pragma once
// A cluster description as written in a cluster JSON file (scenarios/clusters/*.json):
// a plain struct, read and validated once at load. Unknown fields are errors that name
// the file, the field and the value. Figures left out default to the device catalog
// (link bandwidths) or to the named constants below (latencies).
//
// The model: `nodes` identical nodes of `devices_per_node` devices. Inside a node the
// devices reach each other over `intra_node.fabric` (an NVSwitch, possibly spanning
// several nodes as in an NVL72 rack; a point-to-point mesh; or only PCIe), and always
// reach their host over a PCIe tree (or a direct link such as NVLink-C2C). NICs sit
// behind given devices; nodes are joined by a fat tree or a rail-optimized network.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dayzero::topology {

// Per-link latencies. A GPU-to-GPU step crosses two links of the kind (through a
// switch), so each default is half of NCCL's per-step hardware latency for the LL
// protocol in src/graph/tuning.cc (hwLat, ring/LL: NVLink 0.47 us, PCI 1.0 us, NET 2.7 us).
inline constexpr double kDefaultNvlinkLinkLatency_s = 0.25e-6;  // 0.47 us / 2, rounded up
inline constexpr double kDefaultPcieLinkLatency_s = 0.5e-6;     // 1.0 us / 2
// A network step is GPU -> NIC (two PCIe links) -> switch -> NIC -> GPU (two PCIe links):
// (2.7 us - 4 x 0.5 us) / 2 network links = 0.35 us per network link.
inline constexpr double kDefaultNetworkLinkLatency_s = 0.35e-6;
// A mesh link joins two devices directly: one link stands for NCCL's whole NVLink step.
inline constexpr double kDefaultMeshLinkLatency_s = 2 * kDefaultNvlinkLinkLatency_s;
// A fabric without a stated oversubscription is non-blocking (1:1).
inline constexpr double kDefaultOversubscription = 1.0;

// Upper bounds on a cluster's counts, checked when it is read: they keep every count
// well inside `int` and the graph (a vertex per device, NIC and switch, a link per
// connection) small enough to build and search in seconds.
// Devices in all: 16,384, 32x the largest shipped cluster (h200-64x8, 512 GPUs) and far
// beyond one inference deployment. The path model searches the whole graph once per
// source device: `dayzero topo` takes 2.4 s on 2048 eight-GPU nodes and minutes at
// twice that, so training-scale clusters (100,000 GPUs) are refused, not half-built.
inline constexpr int64_t kMaxDevices = 1 << 14;
inline constexpr int64_t kMaxNodes = kMaxDevices;  // a node holds at least one device
// 1024 devices per node: 1.8x the 576 GPUs of one NVLink domain (NVL576), the most that
// share a switch, should one domain be written as a single node (DGX-2 holds 16).
inline constexpr int64_t kMaxDevicesPerNode = 1024;
// A full mesh has a link per device pair: 8x the 8 GPUs of an MI300X platform's mesh.
inline constexpr int64_t kMaxMeshDevicesPerNode = 64;
// 64 NICs per node: 6x a DGX H100's 10 (8 compute, 2 storage); also PCIe switches.
inline constexpr int64_t kMaxNicsPerNode = 64;
inline constexpr int64_t kMaxPcieSwitchesPerNode = 64;

enum class IntraFabric { nvswitch, pcie, mesh };
enum class InterFabric { none, fat_tree, rail_optimized };

std::string_view intra_fabric_name(IntraFabric f);
std::string_view inter_fabric_name(InterFabric f);

struct HostConfig {
  double mem_bytes = 0;                        // host DRAM per node; 0 = not stated
  int pcie_switches = 0;                       // 0: devices attach straight to the host
  std::optional<double> link_bw_Bps;           // device <-> host, per direction; default: catalog host_link
  std::optional<double> switch_uplink_bw_Bps;  // PCIe switch <-> host; default: link_bw_Bps
  double latency_s = kDefaultPcieLinkLatency_s;
};

struct IntraNodeConfig {
  IntraFabric fabric = IntraFabric::nvswitch;
  // nvswitch: each device's link to the switch; mesh: each point-to-point link; pcie: unused.
  // Default from the catalog's intra_node_link (divided by its `links` for a mesh).
  std::optional<double> bw_Bps;
  double latency_s = kDefaultNvlinkLinkLatency_s;
  int domain_nodes = 1;                         // nvswitch: nodes sharing one NVLink domain
  std::vector<std::pair<int, int>> mesh_links;  // mesh: local device pairs; empty = full mesh
};

struct NicConfig {
  int per_node = 0;                                  // 0: no NICs
  double bw_Bps = 0;                                 // per NIC, per direction
  std::vector<std::vector<int>> devices;             // per NIC: local indices of the devices behind it
  std::optional<double> pcie_bw_Bps;                 // device <-> NIC; default: the device's host link
  double latency_s = 2 * kDefaultPcieLinkLatency_s;  // device <-> NIC through a PCIe switch
};

struct InterNodeConfig {
  InterFabric fabric = InterFabric::none;
  int nodes_per_leaf = 0;  // nodes under one leaf (fat tree) or one rail group (rail-optimized); 0 = all
  double oversubscription = kDefaultOversubscription;  // leaf downlink : uplink bandwidth
  double latency_s = kDefaultNetworkLinkLatency_s;
};

struct ClusterConfig {
  std::string source;  // the file it was read from (or a label), for messages
  std::string name;
  std::string description;
  std::string device;  // a name in the device catalog
  int nodes = 1;
  int devices_per_node = 1;
  std::vector<std::string> node_names;  // one per node; default "n0", "n1", ...
  HostConfig host;
  IntraNodeConfig intra_node;
  NicConfig nics;
  InterNodeConfig inter_node;
};

ClusterConfig cluster_config_from_json(const nlohmann::json& j, const std::string& source);
ClusterConfig parse_cluster_config(std::string_view json_text, const std::string& source);
ClusterConfig load_cluster_config(const std::filesystem::path& file);
void to_json(nlohmann::json& j, const ClusterConfig& c);

}  // namespace dayzero::topology
