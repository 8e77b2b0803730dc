#include "topology/cluster.h"

#include <boost/graph/connected_components.hpp>

#include "core/error.h"
#include "topology/fabric.h"
#include "topology/graph.h"

namespace dayzero::topology {

std::string_view vertex_kind_name(VertexKind k) {
  switch (k) {
    case VertexKind::device: return "device";
    case VertexKind::host: return "host";
    case VertexKind::pcie_switch: return "pcie-switch";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::nic: return "nic";
    case VertexKind::network_switch: return "network-switch";
  }
  return "?";
}

std::string_view link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::mesh: return "mesh";
    case LinkKind::pcie: return "pcie";
    case LinkKind::c2c: return "c2c";
    case LinkKind::network: return "network";
    case LinkKind::memory: return "memory";
  }
  return "?";
}

namespace detail {

uint32_t Builder::add_vertex(VertexKind kind, std::string name, int node, int local) {
  const auto v = static_cast<uint32_t>(boost::add_vertex(g));
  vertices.push_back(VertexInfo{kind, std::move(name), node, local});
  return v;
}

void Builder::add_link(uint32_t a, uint32_t b, LinkKind kind, double bw_Bps, double latency_s) {
  const auto index = static_cast<uint32_t>(links.size());
  links.push_back(LinkInfo{a, b, kind, bw_Bps, latency_s});
  boost::add_edge(a, b, EdgeProps{index, latency_s}, g);
}

}  // namespace detail

namespace {

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

const DeviceSpec& lookup_device(const ClusterConfig& c, const DeviceCatalog& catalog) {
  if (const DeviceSpec* d = catalog.find(c.device)) return *d;
  std::string known;
  for (const auto& n : catalog.names()) known += (known.empty() ? "" : ", ") + n;
  throw core::InputError(c.source, "device", quoted(c.device),
                         "unknown device type (the catalog has: " + known + "; add others with a catalog file)");
}

// Every device must reach every other: one connected component holds them all.
void check_connected(const ClusterConfig& c, const std::vector<VertexInfo>& vertices, const detail::BoostGraph& g) {
  std::vector<int> component(boost::num_vertices(g));
  boost::connected_components(g, component.data());
  const auto devices = static_cast<std::size_t>(c.nodes) * static_cast<std::size_t>(c.devices_per_node);
  for (std::size_t d = 1; d < devices; ++d) {
    if (component[d] == component[0]) continue;
    const bool other_node = vertices[d].node != vertices[0].node;
    const std::string why = other_node
                                ? "is not connected to " + vertices[0].name +
                                      ": its node is outside the first NVLink domain and no network joins the nodes "
                                      "(add \"nics\" and \"inter_node\")"
                                : "is not connected to " + vertices[0].name + " inside its node";
    throw core::InputError(c.source, other_node ? "inter_node" : "intra_node", quoted(vertices[d].name),
                           "device " + why);
  }
}

}  // namespace

Cluster::Cluster(ClusterConfig config, const DeviceCatalog& catalog)
    : config_(std::move(config)), spec_(lookup_device(config_, catalog)), graph_(std::make_unique<detail::Graph>()) {
  const auto& c = config_;
  const auto& intra = spec_.intra_node_link;
  host_link_bw_Bps_ = c.host.link_bw_Bps.value_or(spec_.host_link.bw_Bps);
  switch (c.intra_node.fabric) {
    case IntraFabric::nvswitch:
    case IntraFabric::mesh:
      if (intra.kind == "pcie" && !c.intra_node.bw_Bps)
        throw core::InputError(c.source, "intra_node.fabric",
                               quoted(std::string(intra_fabric_name(c.intra_node.fabric))),
                               "device " + spec_.name +
                                   " has no scale-up link (its catalog intra_node_link is PCIe); "
                                   "use \"pcie\" or give intra_node.bw_Bps");
      intra_link_bw_Bps_ = c.intra_node.bw_Bps.value_or(
          c.intra_node.fabric == IntraFabric::mesh ? intra.bw_Bps / intra.links : intra.bw_Bps);
      break;
    case IntraFabric::pcie: intra_link_bw_Bps_ = host_link_bw_Bps_; break;
  }
  // A config built in code rather than read from a file may not have one name per node;
  // the builders index node_names by node.
  if (c.node_names.size() != static_cast<std::size_t>(c.nodes))
    throw core::InputError(c.source, "node_names", std::to_string(c.node_names.size()) + " names",
                           "expected one name per node (nodes = " + std::to_string(c.nodes) + ")");
  if (c.host.pcie_switches > c.devices_per_node)
    throw core::InputError(c.source, "host.pcie_switches", std::to_string(c.host.pcie_switches),
                           "more PCIe switches than devices per node (" + std::to_string(c.devices_per_node) + ")");

  auto& g = graph_->g;
  detail::Builder b{c, spec_, host_link_bw_Bps_, intra_link_bw_Bps_, vertices_, links_, g, {}, {}};
  for (int n = 0; n < c.nodes; ++n)
    for (int d = 0; d < c.devices_per_node; ++d)
      b.add_vertex(VertexKind::device, b.node_name(n) + ".d" + std::to_string(d), n, d);
  detail::build_host_links(b);
  if (c.intra_node.fabric == IntraFabric::nvswitch) detail::build_nvswitch(b);
  if (c.intra_node.fabric == IntraFabric::mesh) detail::build_mesh(b);
  if (c.nics.per_node > 0) detail::build_nics(b);
  if (c.inter_node.fabric == InterFabric::fat_tree) detail::build_fat_tree(b);
  if (c.inter_node.fabric == InterFabric::rail_optimized) detail::build_rail_optimized(b);
  check_connected(c, vertices_, g);
}

Cluster Cluster::load(const std::filesystem::path& file, const DeviceCatalog& catalog) {
  return Cluster(load_cluster_config(file), catalog);
}

Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

std::optional<DeviceId> Cluster::find_device(std::string_view name) const {
  for (DeviceId d = 0; d < num_devices(); ++d)
    if (vertices_[d].name == name) return d;
  return std::nullopt;
}

std::vector<DeviceId> Cluster::node_devices(uint32_t node) const {
  std::vector<DeviceId> out;
  for (uint32_t l = 0; l < devices_per_node(); ++l) out.push_back(device(node, l));
  return out;
}

std::vector<DeviceId> Cluster::all_devices() const {
  std::vector<DeviceId> out(num_devices());
  for (DeviceId d = 0; d < num_devices(); ++d) out[d] = d;
  return out;
}

}  // namespace dayzero::topology
