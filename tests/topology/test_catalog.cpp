// The shipped device catalog and user extensions of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "helpers.h"

namespace dayzero::topology {
namespace {

using testing::catalog;
using testing::write_temp;

TEST(TopologyCatalog, ShipsTheRequiredDevicesEachWithASource) {
  for (const char* name :
       {"A100-80GB-SXM", "H100-SXM", "H200-SXM", "B200", "GB200", "MI300X", "L40S", "generic-300GB-PCIe"}) {
    const DeviceSpec* d = catalog().find(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_FALSE(d->source.empty()) << name;
    EXPECT_GT(d->mem_bytes, 0) << name;
    EXPECT_GT(d->mem_bw_Bps, 0) << name;
    EXPECT_GT(d->peak_flops_for(ComputeDtype::bf16), 0) << name;
    EXPECT_GT(d->host_link.bw_Bps, 0) << name;
    EXPECT_GT(d->intra_node_link.bw_Bps, 0) << name;
  }
}

TEST(TopologyCatalog, FiguresFollowTheDatasheets) {
  const DeviceSpec& h100 = *catalog().find("H100-SXM");
  EXPECT_DOUBLE_EQ(h100.mem_bytes, 80.0 * (1ull << 30));                   // "80GB" = 80 GiB of HBM3
  EXPECT_DOUBLE_EQ(h100.peak_flops_for(ComputeDtype::bf16), 1979e12 / 2);  // 1,979 TFLOPS with sparsity
  EXPECT_DOUBLE_EQ(h100.peak_flops_for(ComputeDtype::fp4), 0.0);           // no FP4 before Blackwell
  EXPECT_DOUBLE_EQ(h100.intra_node_link.bw_Bps, 900e9 / 2);                // 900 GB/s bidirectional
  EXPECT_EQ(h100.host_link.pcie_gen, 5);
  EXPECT_GT(catalog().find("B200")->peak_flops_for(ComputeDtype::fp4), 0.0);
  EXPECT_DOUBLE_EQ(catalog().find("A100-80GB-SXM")->peak_flops_for(ComputeDtype::fp8), 0.0);
  EXPECT_EQ(catalog().find("GB200")->host_link.kind, "nvlink-c2c");
  EXPECT_NE(catalog().find("generic-300GB-PCIe")->source.find("ASSUMPTION"), std::string::npos);
}

// The architecture each GPU's datasheet names (a device without measured runs takes
// its measured siblings' efficiency figures: serve/serving_fit.h).
TEST(TopologyCatalog, GpusNameTheirArchitecture) {
  const std::pair<const char*, DeviceArchitecture> want[] = {
      {"A100-80GB-SXM", DeviceArchitecture::ampere}, {"H100-SXM", DeviceArchitecture::hopper},
      {"H200-SXM", DeviceArchitecture::hopper},      {"B200", DeviceArchitecture::blackwell},
      {"GB200", DeviceArchitecture::blackwell},      {"B300", DeviceArchitecture::blackwell},
      {"GB300", DeviceArchitecture::blackwell},      {"L40S", DeviceArchitecture::ada},
      {"MI300X", DeviceArchitecture::cdna3}};
  for (const auto& [name, arch] : want) {
    ASSERT_NE(catalog().find(name), nullptr) << name;
    EXPECT_EQ(catalog().find(name)->architecture, arch) << name;
  }
  EXPECT_FALSE(catalog().find("generic-300GB-PCIe")->architecture);  // an assumption, no one's kernels
  for (const DeviceArchitecture a : {DeviceArchitecture::ampere, DeviceArchitecture::ada, DeviceArchitecture::hopper,
                                     DeviceArchitecture::blackwell, DeviceArchitecture::cdna3})
    EXPECT_EQ(parse_architecture(architecture_name(a)), a);
  EXPECT_FALSE(parse_architecture("Hopper"));
}

// A small device whose entry holds `field`: `value` (JSON), as a catalog file's text.
std::string entry_with(const std::string& field, const std::string& value) {
  return R"({"devices": [{"name": "c", "vendor": "x", "mem_bytes": 1e9, "mem_bw_Bps": 1e12,
      "peak_flops_per_s": {"bf16": 1e12}, "host_link": {"kind": "pcie", "pcie_gen": 5, "bw_Bps": 1e9},
      "intra_node_link": {"kind": "pcie", "bw_Bps": 1e9}, ")" +
         field + R"(": )" + value + R"(, "source": "s"}]})";
}

// The device `field` holds each of `bad` is refused, naming the field.
void expect_refused(const std::string& field, std::initializer_list<std::string> bad) {
  for (const std::string& value : bad) {
    DeviceCatalog c;
    try {
      c.add_file(write_temp(entry_with(field, value)));
      ADD_FAILURE() << "accepted " << field << " " << value;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(field + "."), std::string::npos) << e.what();
    }
  }
}

// The catalog entry of `value` read back after a round trip through its JSON.
DeviceSpec round_trip_of(const std::string& field, const std::string& value) {
  DeviceCatalog ok;
  ok.add_file(write_temp(entry_with(field, value)));
  nlohmann::json j;
  to_json(j, *ok.find("c"));
  return device_spec_from_json(j, "f", "");
}

// A copy bandwidth measured on the device (H200: cuda-limits, docs/gpu-runs): kept with
// its source, never above the datasheet's, and an unknown field inside it is an error.
TEST(TopologyCatalog, MeasuredCopyBandwidthIsSourcedAndBounded) {
  const DeviceSpec& h200 = *catalog().find("H200-SXM");
  ASSERT_TRUE(h200.measured_copy);
  EXPECT_DOUBLE_EQ(h200.measured_copy->bw_Bps, 4.2645e12);  // 2 GiB moved in 0.504 ms
  EXPECT_NE(h200.measured_copy->source.find("cuda-limits"), std::string::npos);
  EXPECT_FALSE(catalog().find("B200")->measured_copy);  // none measured: no figure
  EXPECT_DOUBLE_EQ(
      round_trip_of("measured_copy", R"({"bw_Bps": 0.9e12, "source": "our copy benchmark"})").measured_copy->bw_Bps,
      0.9e12);
  expect_refused("measured_copy", {R"({"bw_Bps": 1.1e12, "source": "s"})", R"({"bw_Bps": 0.9e12})",
                                   R"({"bw_Bps": 0.9e12, "source": "s", "when": "today"})"});
}

// What DayZero's CUDA executor holds beyond its pool, measured on the device (H200:
// the tiny Llama's run, docs/gpu-runs): kept with its source, below the device's
// memory, round-tripped, and an entry without a source is an error naming the field.
TEST(TopologyCatalog, ExecutorRuntimeIsMeasuredAndSourced) {
  const DeviceSpec& h200 = *catalog().find("H200-SXM");
  ASSERT_TRUE(h200.executor_runtime);
  EXPECT_EQ(h200.executor_runtime->bytes, 555'988'992);
  EXPECT_NE(h200.executor_runtime->source.find("docs/gpu-runs"), std::string::npos);
  EXPECT_FALSE(catalog().find("H100-SXM")->executor_runtime);
  EXPECT_EQ(round_trip_of("executor_runtime", R"({"bytes": 500000000, "source": "our run"})").executor_runtime->bytes,
            500'000'000);
  expect_refused("executor_runtime",
                 {R"({"bytes": 2000000000, "source": "s"})", R"({"bytes": 5e8})", R"({"bytes": 0, "source": "s"})"});
}

TEST(TopologyCatalog, UserFileAddsAndReplacesDevices) {
  DeviceCatalog c = catalog();
  const auto file = write_temp(R"({"devices": [
    {"name": "H100-SXM", "vendor": "NVIDIA", "mem_bytes": 80e9, "mem_bw_Bps": 3.0e12,
     "peak_flops_per_s": {"bf16": 800e12}, "host_link": {"kind": "pcie", "pcie_gen": 5, "bw_Bps": 50e9},
     "intra_node_link": {"kind": "nvlink", "bw_Bps": 400e9}, "source": "measured on our cluster"},
    {"name": "my-card", "vendor": "acme", "mem_bytes": 64e9, "mem_bw_Bps": 1e12,
     "peak_flops_per_s": {"bf16": 100e12, "fp8": 200e12}, "host_link": {"kind": "pcie", "pcie_gen": 4, "bw_Bps": 32e9},
     "intra_node_link": {"kind": "pcie", "bw_Bps": 32e9}, "runtime_overhead_bytes": 600000000,
     "comm_buffer_bytes_per_group": 0, "source": "acme datasheet rev 2"}]})");
  const auto before = c.devices().size();
  c.add_file(file);
  EXPECT_EQ(c.devices().size(), before + 1);
  EXPECT_DOUBLE_EQ(c.find("H100-SXM")->mem_bw_Bps, 3.0e12);
  EXPECT_EQ(c.find("my-card")->source, "acme datasheet rev 2");
  EXPECT_EQ(c.find("my-card")->runtime_overhead_bytes, 600'000'000);
  EXPECT_EQ(c.find("my-card")->comm_buffer_bytes_per_group, 0);
  EXPECT_FALSE(c.find("H100-SXM")->runtime_overhead_bytes);  // unset: the GPU engines' figure
  // A negative size is refused, naming the field.
  try {
    c.add_file(write_temp(R"({"devices": [{"name": "bad", "vendor": "x", "mem_bytes": 1e9, "mem_bw_Bps": 1e9,
      "peak_flops_per_s": {"bf16": 1e12}, "host_link": {"kind": "pcie", "pcie_gen": 5, "bw_Bps": 1e9},
      "intra_node_link": {"kind": "pcie", "bw_Bps": 1e9}, "runtime_overhead_bytes": -1, "source": "s"}]})"));
    ADD_FAILURE() << "a negative runtime_overhead_bytes was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("runtime_overhead_bytes"), std::string::npos) << e.what();
  }
}

// The host CPU as the executor's CPU backend runs it: nominal figures, fp32 only.
// 2 cores x 2 FMA units x 8 fp32 lanes x 2 FLOP x 3.0 GHz = 192 GFLOP/s.
TEST(TopologyCatalog, CpuHostIsTheNominalCiVm) {
  const DeviceSpec* d = catalog().find("cpu-host");
  ASSERT_NE(d, nullptr);
  EXPECT_DOUBLE_EQ(d->peak_flops_for(ComputeDtype::fp32), 2.0 * 2 * 8 * 2 * 3.0e9);
  EXPECT_DOUBLE_EQ(d->peak_flops_for(ComputeDtype::bf16), 0.0);  // no bf16 figure: the simulator falls back to fp32
  EXPECT_DOUBLE_EQ(d->mem_bw_Bps, 2 * 10e9);
  EXPECT_EQ(d->host_link.kind, "host-memory");
  EXPECT_EQ(d->host_link.pcie_gen, 0);
  EXPECT_NE(d->source.find("ASSUMPTION"), std::string::npos);
}

TEST(TopologyCatalog, HostMemoryLinkBuildsAClusterOfCpuRanks) {
  const Cluster cl = testing::inline_cluster(R"({"name": "cpu-1x2", "device": "cpu-host", "nodes": 1,
    "devices_per_node": 2, "intra_node": {"fabric": "pcie"}})");
  EXPECT_EQ(cl.num_devices(), 2u);
  const auto memory =
      std::count_if(cl.links().begin(), cl.links().end(), [](const LinkInfo& l) { return l.kind == LinkKind::memory; });
  EXPECT_EQ(memory, 2);
  EXPECT_EQ(link_kind_name(LinkKind::memory), "memory");
  // Any other host-link kind stays an error naming the field.
  DeviceCatalog c = catalog();
  testing::expect_error(
      [&] {
        c.add_file(testing::write_temp(R"({"devices": [{"name": "x", "vendor": "v", "mem_bytes": 1e9, "mem_bw_Bps": 1e9,
      "peak_flops_per_s": {"fp32": 1e9}, "host_link": {"kind": "usb", "bw_Bps": 1e9},
      "intra_node_link": {"kind": "pcie", "bw_Bps": 1e9}, "source": "s"}]})"));
      },
      {"host_link.kind", "usb", "host-memory"});
}

}  // namespace
}  // namespace dayzero::topology
