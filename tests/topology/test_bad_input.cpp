// Bad cluster and catalog files: each must fail with a core::InputError whose message names
// the file, the field and the value, never crash or be silently accepted.
#include <gtest/gtest.h>

#include "core/error.h"
#include "helpers.h"
#include "topology/collective_model.h"

namespace dayzero::topology {
namespace {

using testing::catalog;
using testing::expect_error;
using testing::inline_cluster;
using testing::write_temp;

// A valid 2-node cluster; tests break one field of it at a time.
std::string two_nodes(const std::string& intra = R"({"fabric": "nvswitch"})",
                      const std::string& network = R"(, "nics": {"per_node": 8, "bw_Bps": 50e9},
                        "inter_node": {"fabric": "fat-tree"})",
                      const std::string& device = "H100-SXM", const std::string& extra = "") {
  return R"({"name": "bad", "device": ")" + device + R"(", "nodes": 2, "devices_per_node": 8,
             "intra_node": )" +
         intra + network + extra + "}";
}

TEST(TopologyBadInput, TheBaselineIsValid) { EXPECT_NO_THROW(inline_cluster(two_nodes())); }

TEST(TopologyBadInput, DisconnectedDevices) {
  // Two nodes and nothing between them: the second node's devices are unreachable.
  const auto file = write_temp(two_nodes(R"({"fabric": "nvswitch"})", ""));
  expect_error([&] { Cluster::load(file, catalog()); },
               {file.string(), "field 'inter_node'", "\"n1.d0\"", "not connected"});
}

TEST(TopologyBadInput, DisconnectedMeshDeviceStillReachesItsPeersOverPcie) {
  // A partial mesh that leaves device 2 without links is not disconnected: PCIe joins it.
  EXPECT_NO_THROW(inline_cluster(R"({"name": "m", "device": "MI300X", "nodes": 1, "devices_per_node": 3,
    "intra_node": {"fabric": "mesh", "links": [[0, 1]]}})"));
}

TEST(TopologyBadInput, ZeroBandwidth) {
  const auto file = write_temp(two_nodes(R"({"fabric": "nvswitch"})",
                                         R"(, "nics": {"per_node": 8, "bw_Bps": 0},
                                           "inter_node": {"fabric": "fat-tree"})"));
  expect_error([&] { Cluster::load(file, catalog()); }, {file.string(), "field 'nics.bw_Bps' = 0", "must be positive"});
}

TEST(TopologyBadInput, NegativeBandwidth) {
  const auto file = write_temp(two_nodes(R"({"fabric": "nvswitch", "bw_Bps": -450e9})"));
  expect_error([&] { Cluster::load(file, catalog()); },
               {file.string(), "field 'intra_node.bw_Bps' = -450000000000.0", "must be positive"});
}

TEST(TopologyBadInput, NegativeLatency) {
  const auto file = write_temp(two_nodes(R"({"fabric": "nvswitch", "latency_s": -1e-6})"));
  expect_error([&] { Cluster::load(file, catalog()); }, {"field 'intra_node.latency_s'", "must not be negative"});
}

TEST(TopologyBadInput, UnknownDeviceType) {
  const auto file = write_temp(two_nodes(R"({"fabric": "nvswitch"})", "", "H900-SXM"));
  expect_error([&] { Cluster::load(file, catalog()); },
               {file.string(), "field 'device' = \"H900-SXM\"", "unknown device type", "H100-SXM"});
}

TEST(TopologyBadInput, DuplicateNodeNames) {
  const auto file = write_temp(two_nodes(R"({"fabric": "nvswitch"})",
                                         R"(, "nics": {"per_node": 8, "bw_Bps": 50e9},
                                           "inter_node": {"fabric": "fat-tree"})",
                                         "H100-SXM", R"(, "node_names": ["gpu-01", "gpu-01"])"));
  expect_error([&] { Cluster::load(file, catalog()); },
               {file.string(), "field 'node_names[1]' = \"gpu-01\"", "duplicate node name"});
}

TEST(TopologyBadInput, DuplicateDeviceNamesInACatalog) {
  const std::string dev = R"({"name": "x", "vendor": "v", "mem_bytes": 1e9, "mem_bw_Bps": 1e9,
    "peak_flops_per_s": {"bf16": 1e12}, "host_link": {"kind": "pcie", "pcie_gen": 4, "bw_Bps": 1e9},
    "intra_node_link": {"kind": "pcie", "bw_Bps": 1e9}, "source": "s"})";
  const auto file = write_temp(R"({"devices": [)" + dev + "," + dev + "]}");
  DeviceCatalog c;
  expect_error([&] { c.add_file(file); }, {file.string(), "field 'devices[1].name' = \"x\"", "duplicate"});
}

TEST(TopologyBadInput, UnknownArchitecture) {
  DeviceCatalog c = catalog();
  const auto file = write_temp(R"({"devices": [{"name": "x", "vendor": "x", "architecture": "volta",
    "mem_bytes": 1e9, "mem_bw_Bps": 1e9, "peak_flops_per_s": {"bf16": 1e12},
    "host_link": {"kind": "pcie", "pcie_gen": 5, "bw_Bps": 1e9}, "intra_node_link": {"kind": "pcie", "bw_Bps": 1e9},
    "source": "s"}]})");
  expect_error([&] { c.add_file(file); }, {file.string(), "field 'devices[0].architecture' = \"volta\"", "hopper"});
}

TEST(TopologyBadInput, MalformedJson) {
  const auto file = write_temp("{\"name\": \"x\",\n  \"nodes\": 2,\n  \"device\" \"H100-SXM\"\n}");
  expect_error([&] { Cluster::load(file, catalog()); }, {file.string(), "malformed JSON at line 3"});
  const auto cat = write_temp("{\"devices\": [", ".catalog.json");
  DeviceCatalog c;
  expect_error([&] { c.add_file(cat); }, {cat.string(), "malformed JSON"});
}

TEST(TopologyBadInput, MissingFile) {
  expect_error([&] { Cluster::load("/nonexistent/cluster.json", catalog()); },
               {"/nonexistent/cluster.json", "no such file"});
}

TEST(TopologyBadInput, UnknownFieldIsAnErrorNotIgnored) {
  const auto file = write_temp(two_nodes(R"({"fabric": "nvswitch", "bandwidth": 450e9})"));
  expect_error([&] { Cluster::load(file, catalog()); },
               {file.string(), "field 'intra_node.bandwidth' = 450000000000.0", "unknown field"});
}

TEST(TopologyBadInput, WrongTypesAndRanges) {
  expect_error(
      [&] {
        inline_cluster(R"({"name": "x", "device": "H100-SXM", "nodes": 1.5, "devices_per_node": 8,
                       "intra_node": {"fabric": "nvswitch"}})");
      },
      {"field 'nodes' = 1.5", "integer"});
  expect_error(
      [&] {
        inline_cluster(R"({"name": "x", "device": "H100-SXM", "nodes": 1, "devices_per_node": 8,
                       "intra_node": {"fabric": "torus"}})");
      },
      {"field 'intra_node.fabric' = \"torus\""});
  expect_error(
      [&] {
        inline_cluster(two_nodes(R"({"fabric": "nvswitch"})",
                                 R"(, "nics": {"per_node": 2, "bw_Bps": 50e9, "devices": [[0, 1], [2, 9]]},
                          "inter_node": {"fabric": "fat-tree"})"));
      },
      {"field 'nics.devices[1]' = 9", "0 to 7"});
  expect_error(
      [&] {
        inline_cluster(R"({"name": "x", "device": "MI300X", "nodes": 1, "devices_per_node": 8,
                       "intra_node": {"fabric": "mesh", "links": [[0, 1], [1, 0]]}})");
      },
      {"field 'intra_node.links[1]'", "duplicate link"});
  expect_error(
      [&] {
        inline_cluster(R"({"name": "x", "device": "H100-SXM", "nodes": 3, "devices_per_node": 8,
                       "intra_node": {"fabric": "nvswitch", "domain_nodes": 2}})");
      },
      {"field 'intra_node.domain_nodes' = 2", "must divide nodes"});
}

TEST(TopologyBadInput, FabricTheDeviceDoesNotHave) {
  const auto file = write_temp(R"({"name": "x", "device": "L40S", "nodes": 1, "devices_per_node": 4,
    "intra_node": {"fabric": "nvswitch"}})");
  expect_error([&] { Cluster::load(file, catalog()); },
               {file.string(), "field 'intra_node.fabric' = \"nvswitch\"", "no scale-up link"});
}

TEST(TopologyBadInput, NetworkWithoutNics) {
  expect_error(
      [&] { inline_cluster(two_nodes(R"({"fabric": "nvswitch"})", R"(, "inter_node": {"fabric": "fat-tree"})")); },
      {"field 'inter_node'", "needs NICs"});
}

TEST(TopologyBadInput, BadCatalogEntry) {
  const auto file = write_temp(R"({"devices": [{"name": "x", "vendor": "v", "mem_bytes": -1, "mem_bw_Bps": 1e9,
    "peak_flops_per_s": {"bf16": 1e12}, "host_link": {"kind": "pcie", "pcie_gen": 4, "bw_Bps": 1e9},
    "intra_node_link": {"kind": "pcie", "bw_Bps": 1e9}, "source": "s"}]})");
  DeviceCatalog c;
  expect_error([&] { c.add_file(file); }, {"field 'devices[0].mem_bytes' = -1", "must be positive"});
  const auto dtype = write_temp(R"({"devices": [{"name": "x", "vendor": "v", "mem_bytes": 1, "mem_bw_Bps": 1e9,
    "peak_flops_per_s": {"bf17": 1e12}, "host_link": {"kind": "pcie", "pcie_gen": 4, "bw_Bps": 1e9},
    "intra_node_link": {"kind": "pcie", "bw_Bps": 1e9}, "source": "s"}]})",
                                ".dtype.json");
  expect_error([&] { c.add_file(dtype); }, {"field 'devices[0].peak_flops_per_s.bf17'", "unknown field"});
}

// Issue 16: pcie_gen and links were narrowed to int after a check of their lower
// bound only; 2^31 became a negative generation. Both are bounded when read.
TEST(TopologyBadInput, LinkCountsAreBounded) {
  auto entry = [](const std::string& host, const std::string& intra) {
    return write_temp(R"({"devices": [{"name": "x", "vendor": "v", "mem_bytes": 1e9, "mem_bw_Bps": 1e9,
    "peak_flops_per_s": {"bf16": 1e12}, "host_link": )" +
                      host + R"(, "intra_node_link": )" + intra + R"(, "source": "s"}]})");
  };
  const std::string pcie = R"({"kind": "pcie", "bw_Bps": 1e9})";
  DeviceCatalog c;
  expect_error([&] { c.add_file(entry(R"({"kind": "pcie", "pcie_gen": 2147483648, "bw_Bps": 1e9})", pcie)); },
               {"field 'devices[0].host_link.pcie_gen' = 2147483648", "must be at most 7"});
  expect_error(
      [&] {
        c.add_file(entry(R"({"kind": "pcie", "pcie_gen": 5, "bw_Bps": 1e9})",
                         R"({"kind": "nvlink", "bw_Bps": 1e9, "links": 4294967297})"));
      },
      {"field 'devices[0].intra_node_link.links' = 4294967297", "must be at most 64"});
}

TEST(TopologyBadInput, BadGroups) {
  const Cluster cl = testing::shipped("h100x8");
  CollectiveModel m(cl);
  const std::vector<DeviceId> dup = {0, 1, 1}, out_of_range = {0, 8}, three = {0, 1, 2};
  expect_error([&] { m.cost(Collective::all_reduce, dup, 1e6); }, {"field 'group' = n0.d1", "listed twice"});
  expect_error([&] { m.cost(Collective::all_gather, out_of_range, 1e6); }, {"field 'group' = 8", "no such device"});
  expect_error([&] { m.cost(Collective::send_recv, three, 1e6); }, {"exactly two devices"});
  expect_error([&] { m.cost(Collective::all_reduce, three, -1.0); }, {"field 'size_bytes'"});
  expect_error([&] { m.cost(Collective::all_to_all, three, 1e6, Algorithm::tree); }, {"field 'algorithm' = tree"});
  EXPECT_THROW(m.cost(Collective::all_reduce, std::vector<DeviceId>{}, 1.0), core::InputError);
}

// Issue 16: counts of 2^31 or more were narrowed to int after validation and crashed
// `dayzero topo`; now each is bounded when read (cluster_config.h says why).
TEST(TopologyBadInput, CountsAboveTheirBoundsAreErrors) {
  auto cluster = [](const std::string& nodes, const std::string& per_node, const std::string& extra = "") {
    return R"({"name": "big", "device": "H100-SXM", "nodes": )" + nodes + R"(, "devices_per_node": )" + per_node +
           R"(, "intra_node": {"fabric": "nvswitch"})" + extra + "}";
  };
  expect_error([&] { inline_cluster(cluster("2147483648", "8")); },
               {"field 'nodes' = 2147483648", "must be at most 16384"});
  expect_error([&] { inline_cluster(cluster("1", "4294967297")); },
               {"field 'devices_per_node' = 4294967297", "must be at most 1024"});
  expect_error([&] { inline_cluster(cluster("1", "8", R"(, "host": {"pcie_switches": 2147483648})")); },
               {"field 'host.pcie_switches' = 2147483648", "must be at most 64"});
  expect_error([&] { inline_cluster(cluster("1", "8", R"(, "host": {"pcie_switches": 9})")); },
               {"field 'host.pcie_switches' = 9", "more PCIe switches than devices per node (8)"});
  expect_error([&] { inline_cluster(cluster("2", "8", R"(, "nics": {"per_node": 4294967304, "bw_Bps": 50e9})")); },
               {"field 'nics.per_node' = 4294967304", "must be at most 64"});
  // 10^6 devices: an error, not minutes of path searches.
  expect_error([&] { inline_cluster(cluster("15625", "64")); },
               {"field 'nodes' = 15625", "1000000 devices; at most 16384 are accepted"});
  // 10^4 devices per node in a full mesh: 5 x 10^7 links, refused.
  expect_error(
      [&] {
        inline_cluster(R"({"name": "m", "device": "MI300X", "nodes": 1, "devices_per_node": 1000,
                           "intra_node": {"fabric": "mesh"}})");
      },
      {"field 'intra_node.fabric'", "a mesh of more than 64 devices per node"});
}

// Issue 16: a ClusterConfig made in code whose node_names do not match `nodes` crashed
// the builders, which index the names by node.
TEST(TopologyBadInput, NodeNamesThatDoNotMatchTheNodes) {
  ClusterConfig c = load_cluster_config(write_temp(two_nodes()));
  c.node_names.pop_back();
  expect_error([&] { Cluster(c, catalog()); },
               {"field 'node_names' = 1 names", "expected one name per node (nodes = 2)"});
  c.node_names.clear();
  EXPECT_THROW(Cluster(c, catalog()), core::InputError);
}

}  // namespace
}  // namespace dayzero::topology
