// dayzero topo CLUSTER [--json] [--catalog FILE]: what a cluster is, and what collectives
// cost on it, in nccl-tests' vocabulary (time, algbw, busbw).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/format.h"
#include "core/data_dir.h"
#include "topology/cluster.h"
#include "topology/collective_model.h"
#include "topology/device.h"
#include "topology/paths.h"

namespace dayzero::cli {

namespace {

using namespace dayzero::topology;

struct TopoOptions {
  std::string cluster;
  std::string catalog;
  bool json = false;
};

// The largest group tabulated: an all-to-all over n devices routes n^2 pairs; 1024
// devices (128 eight-GPU nodes, 2x the largest shipped cluster, h200-64x8) take about a
// second, 4096 five. Larger clusters are tabulated over their first nodes.
constexpr uint32_t kMaxTabulatedDevices = 1024;

// Message sizes of the table: 1 KiB, 4 KiB, ... 1 GiB (nccl-tests -b 1K -e 1G -f 4).
std::vector<double> table_sizes() {
  std::vector<double> s;
  for (double b = 1024; b <= 1073741824.0; b *= 4) s.push_back(b);
  return s;
}

std::string size_label(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return fixed(bytes, 0) + " " + units[u];
}

std::string gbps(double Bps) { return fixed(Bps / 1e9, 1) + " GB/s"; }

struct Group {
  std::string label;
  std::vector<DeviceId> devices;
};

std::vector<DeviceId> pair_of(const Group& g) { return {g.devices.front(), g.devices.back()}; }

void print_summary(std::ostream& out, const Cluster& cl, PathOracle& paths) {
  const auto& c = cl.config();
  const auto& d = cl.device_spec();
  out << "Cluster " << c.name << " (" << c.source << ")\n";
  if (!c.description.empty()) out << "  " << c.description << "\n";
  out << "\n  devices      " << cl.num_devices() << " x " << d.name << " (" << c.nodes << " node"
      << (c.nodes > 1 ? "s" : "") << " x " << c.devices_per_node << ")\n";
  out << "  per device   memory " << gb_and_gib(static_cast<int64_t>(d.mem_bytes)) << ", " << gbps(d.mem_bw_Bps)
      << " memory bandwidth\n";
  out << "               dense peak:";
  for (const auto& [dtype, f] : d.peak_flops_per_s)
    out << " " << compute_dtype_name(dtype) << " " << fixed(f / 1e12, 1);
  out << " TFLOP/s\n";
  out << "  total        memory " << gb_and_gib(static_cast<int64_t>(d.mem_bytes * cl.num_devices())) << ", bf16 "
      << fixed(d.peak_flops_for(ComputeDtype::bf16) * cl.num_devices() / 1e15, 2) << " PFLOP/s\n";
  out << "  intra-node   " << intra_fabric_name(c.intra_node.fabric);
  if (c.intra_node.fabric == IntraFabric::nvswitch) {
    out << ", " << gbps(cl.intra_link_bw_Bps()) << " per device per direction";
    if (c.intra_node.domain_nodes > 1) out << ", one NVLink domain per " << c.intra_node.domain_nodes << " nodes";
  } else if (c.intra_node.fabric == IntraFabric::mesh) {
    out << ", " << gbps(cl.intra_link_bw_Bps()) << " per link per direction";
  } else {
    out << " peer-to-peer over the host links";
  }
  out << "\n  host         " << d.host_link.kind;
  if (d.host_link.pcie_gen > 0) out << " gen" << d.host_link.pcie_gen;
  out << ", " << gbps(cl.host_link_bw_Bps()) << " per device per direction, " << c.host.pcie_switches
      << " PCIe switch(es) per node";
  if (c.host.mem_bytes > 0)
    out << ", host memory " << gb_and_gib(static_cast<int64_t>(c.host.mem_bytes)) << " per node";
  out << "\n";
  if (c.nics.per_node > 0)
    out << "  NICs         " << c.nics.per_node << " per node x " << gbps(c.nics.bw_Bps) << " ("
        << fixed(c.nics.bw_Bps * 8 / 1e9, 0) << " Gb/s) per direction\n";
  if (c.inter_node.fabric != InterFabric::none)
    out << "  network      " << inter_fabric_name(c.inter_node.fabric) << ", " << c.inter_node.nodes_per_leaf
        << " nodes per leaf group, oversubscription " << fixed(c.inter_node.oversubscription, 1) << ":1\n";
  std::map<std::string, int> vkinds, lkinds;
  for (const auto& v : cl.vertices()) ++vkinds[std::string(vertex_kind_name(v.kind))];
  for (const auto& l : cl.links()) ++lkinds[std::string(link_kind_name(l.kind))];
  out << "  graph        " << cl.vertices().size() << " vertices (";
  bool first = true;
  for (const auto& [k, n] : vkinds) out << (first ? "" : ", ") << n << " " << k, first = false;
  out << "), " << cl.links().size() << " links (";
  first = true;
  for (const auto& [k, n] : lkinds) out << (first ? "" : ", ") << n << " " << k, first = false;
  out << ")\n";
  auto show_route = [&](DeviceId a, DeviceId b) {
    const Route r = paths.route(a, b);
    out << "  route        " << cl.device_name(a) << " -> " << cl.device_name(b) << ": " << r.channels.size()
        << " links, bottleneck " << gbps(r.bottleneck_bw_Bps) << ", latency " << fixed(r.latency_s * 1e6, 2) << " us\n";
  };
  if (cl.devices_per_node() > 1) show_route(cl.device(0, 0), cl.device(0, 1));
  if (cl.num_nodes() > 1) show_route(cl.device(0, 0), cl.device(cl.num_nodes() - 1, 0));
}

void print_table(std::ostream& out, const Cluster& cl, const Group& g, const std::vector<CollectiveCost>& rows) {
  out << "\nCollectives over " << g.label << ": " << g.devices.size() << " devices, "
      << cl.device_name(g.devices.front()) << " .. " << cl.device_name(g.devices.back())
      << " (sendrecv: first -> last)\n";
  out << "  sizes in KiB/MiB/GiB (2^10, 2^20, 2^30 B); bandwidths in GB/s (1e9 B/s)\n";
  out << "  " << pad_right("collective", 16) << pad_left("size", 9) << pad_left("time_us", 13) << pad_left("algbw", 10)
      << pad_left("busbw", 10) << "  algorithm\n";
  for (const auto& r : rows)
    out << "  " << pad_right(std::string(collective_name(r.collective)), 16) << pad_left(size_label(r.size_bytes), 9)
        << pad_left(fixed(r.time_s * 1e6, 2), 13) << pad_left(fixed(r.algbw_Bps / 1e9, 2), 10)
        << pad_left(fixed(r.busbw_Bps / 1e9, 2), 10) << "  " << algorithm_name(r.algorithm) << "/"
        << protocol_name(r.protocol) << "\n";
}

void run_topo(const TopoOptions& o) {
  DeviceCatalog catalog = DeviceCatalog::load_builtin(core::data_dir());
  if (!o.catalog.empty()) catalog.add_file(o.catalog);
  const Cluster cl = Cluster::load(resolve_cluster_path(o.cluster), catalog);
  CollectiveModel model(cl);

  std::vector<Group> groups = {{"one node (" + cl.config().node_names[0] + ")", cl.node_devices(0)}};
  if (cl.num_nodes() > 1 && cl.num_devices() <= kMaxTabulatedDevices) {
    groups.push_back({"all devices", cl.all_devices()});
  } else if (cl.num_nodes() > 1) {
    // An all-to-all's cost grows with the square of its group: tabulate the first nodes.
    const uint32_t nodes = std::max<uint32_t>(2, kMaxTabulatedDevices / cl.devices_per_node());
    Group g{"the first " + std::to_string(nodes) + " of " + std::to_string(cl.num_nodes()) + " nodes", {}};
    for (uint32_t n = 0; n < nodes; ++n)
      for (DeviceId d : cl.node_devices(n)) g.devices.push_back(d);
    groups.push_back(std::move(g));
  }

  nlohmann::json collectives = nlohmann::json::array();
  std::vector<std::vector<CollectiveCost>> tables;
  for (const auto& g : groups) {
    std::vector<CollectiveCost> rows;
    for (Collective c : kAllCollectives) {
      const auto members = c == Collective::send_recv ? pair_of(g) : g.devices;
      nlohmann::json names = nlohmann::json::array();
      for (DeviceId d : members) names.push_back(cl.device_name(d));
      for (double size : table_sizes()) {
        const auto r = model.cost(c, members, size);
        rows.push_back(r);
        collectives.push_back({{"collective", collective_name(c)},
                               {"group", names},
                               {"size_bytes", size},
                               {"time_s", r.time_s},
                               {"algbw_GBps", r.algbw_Bps / 1e9},
                               {"busbw_GBps", r.busbw_Bps / 1e9},
                               {"algorithm", algorithm_name(r.algorithm)},
                               {"protocol", protocol_name(r.protocol)}});
      }
    }
    tables.push_back(std::move(rows));
  }

  if (o.json) {
    nlohmann::json j;
    j["cluster"] = cl.config();
    j["cluster"]["source"] = cl.config().source;
    j["device"] = cl.device_spec();
    j["graph"] = {{"vertices", cl.vertices().size()}, {"links", cl.links().size()}};
    j["units"] = "size_bytes in bytes; time_s in seconds; algbw_GBps and busbw_GBps in GB/s (1e9 bytes/s)";
    j["collectives"] = std::move(collectives);
    std::cout << j.dump(2) << "\n";
    return;
  }
  PathOracle paths(cl);
  print_summary(std::cout, cl, paths);
  for (std::size_t i = 0; i < groups.size(); ++i) print_table(std::cout, cl, groups[i], tables[i]);
}

}  // namespace

void add_topo_command(CLI::App& app) {
  auto opts = std::make_shared<TopoOptions>();
  CLI::App* cmd =
      app.add_subcommand("topo",
                         "Describe a cluster (devices, fabrics, graph) and tabulate collective times, algbw and busbw "
                         "(nccl-tests definitions) from 1 KiB to 1 GiB for one node and for all devices");
  cmd->add_option("cluster", opts->cluster,
                  "Cluster JSON file, or the name of a bundled cluster in scenarios/clusters (e.g. h200-2x8)")
      ->required();
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file (adds or replaces devices)");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of tables");
  cmd->callback([opts] { run_topo(*opts); });
}

}  // namespace dayzero::cli
