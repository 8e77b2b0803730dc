#pragma once
// A cluster as a graph: devices, switches (NVSwitch, PCIe, network), NICs and hosts are
// vertices; links are edges with a per-direction bandwidth and a latency. Built from a
// ClusterConfig and the device catalog, and validated (known device, consistent fabric,
// every device reachable from every other). Immutable once built, so one Cluster can be
// shared by threads; the path and cost caches live in PathOracle / CollectiveModel.
//
// Boost.Graph stays behind `detail::Graph` (topology/graph.h), so this header is cheap
// to include.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/cluster_config.h"
#include "topology/device.h"

namespace dayzero::topology {

// Devices are numbered node-major: device = node * devices_per_node + local index.
using DeviceId = uint32_t;

enum class VertexKind : uint8_t { device, host, pcie_switch, nvswitch, nic, network_switch };
enum class LinkKind : uint8_t { nvlink, mesh, pcie, c2c, network, memory };  // memory: a CPU device to its own host

std::string_view vertex_kind_name(VertexKind k);
std::string_view link_kind_name(LinkKind k);

struct VertexInfo {
  VertexKind kind;
  std::string name;
  int node = -1;   // -1 for vertices that belong to no single node (network switches, NVL domains)
  int local = -1;  // device or NIC index inside its node
};

// A full-duplex link: bw_Bps in each direction. Directed "channels" 2*link and
// 2*link+1 carry a -> b and b -> a traffic.
struct LinkInfo {
  uint32_t a = 0, b = 0;  // vertex indices
  LinkKind kind = LinkKind::pcie;
  double bw_Bps = 0;
  double latency_s = 0;
};

namespace detail {
struct Graph;
}

class Cluster {
 public:
  Cluster(ClusterConfig config, const DeviceCatalog& catalog);
  // Reads a cluster file and builds it against `catalog`.
  static Cluster load(const std::filesystem::path& file, const DeviceCatalog& catalog);
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;

  const ClusterConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  const DeviceSpec& device_spec() const { return spec_; }

  uint32_t num_nodes() const { return static_cast<uint32_t>(config_.nodes); }
  uint32_t devices_per_node() const { return static_cast<uint32_t>(config_.devices_per_node); }
  uint32_t num_devices() const { return num_nodes() * devices_per_node(); }
  DeviceId device(uint32_t node, uint32_t local) const { return node * devices_per_node() + local; }
  uint32_t node_of(DeviceId d) const { return d / devices_per_node(); }
  uint32_t local_of(DeviceId d) const { return d % devices_per_node(); }
  const std::string& device_name(DeviceId d) const { return vertices_[d].name; }
  std::optional<DeviceId> find_device(std::string_view name) const;
  std::vector<DeviceId> node_devices(uint32_t node) const;
  std::vector<DeviceId> all_devices() const;

  // The graph: a device's vertex index equals its DeviceId.
  const std::vector<VertexInfo>& vertices() const { return vertices_; }
  const std::vector<LinkInfo>& links() const { return links_; }
  std::size_t num_channels() const { return 2 * links_.size(); }
  double channel_bw_Bps(uint32_t channel) const { return links_[channel / 2].bw_Bps; }
  const detail::Graph& graph() const { return *graph_; }

  // Effective figures after defaults were resolved against the catalog.
  double host_link_bw_Bps() const { return host_link_bw_Bps_; }
  double intra_link_bw_Bps() const { return intra_link_bw_Bps_; }  // per device (nvswitch) or per link (mesh)

 private:
  ClusterConfig config_;
  DeviceSpec spec_;
  double host_link_bw_Bps_ = 0, intra_link_bw_Bps_ = 0;
  std::vector<VertexInfo> vertices_;
  std::vector<LinkInfo> links_;
  std::unique_ptr<detail::Graph> graph_;
};

}  // namespace dayzero::topology
