#include "topology/device.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/enum_names.h"
#include "core/json_fields.h"

namespace dayzero::topology {

using core::Fields;

std::string_view compute_dtype_name(ComputeDtype d) {
  switch (d) {
    case ComputeDtype::bf16: return "bf16";
    case ComputeDtype::fp16: return "fp16";
    case ComputeDtype::fp32: return "fp32";
    case ComputeDtype::fp4: return "fp4";
    case ComputeDtype::fp8: return "fp8";
    case ComputeDtype::int8: return "int8";
    case ComputeDtype::tf32: return "tf32";
  }
  return "?";
}

std::optional<ComputeDtype> parse_compute_dtype(std::string_view s) {
  return core::parse_enum(s, kAllComputeDtypes, compute_dtype_name);
}

namespace {
constexpr DeviceArchitecture kAllArchitectures[] = {DeviceArchitecture::ampere, DeviceArchitecture::ada,
                                                    DeviceArchitecture::hopper, DeviceArchitecture::blackwell,
                                                    DeviceArchitecture::cdna3};
}  // namespace

std::string_view architecture_name(DeviceArchitecture a) {
  switch (a) {
    case DeviceArchitecture::ampere: return "ampere";
    case DeviceArchitecture::ada: return "ada";
    case DeviceArchitecture::hopper: return "hopper";
    case DeviceArchitecture::blackwell: return "blackwell";
    case DeviceArchitecture::cdna3: return "cdna3";
  }
  return "?";
}

std::optional<DeviceArchitecture> parse_architecture(std::string_view s) {
  return core::parse_enum(s, kAllArchitectures, architecture_name);
}

double DeviceSpec::peak_flops_for(ComputeDtype dtype) const {
  auto it = peak_flops_per_s.find(dtype);
  return it == peak_flops_per_s.end() ? 0.0 : it->second;
}

namespace {

// PCIe 7.0 is the newest generation specified (PCI-SIG, June 2025).
constexpr int64_t kMaxPcieGen = 7;
// Links per device: an NVLink 5 GPU has 18 (B200, GB300); 64 leaves room for what comes next.
constexpr int64_t kMaxLinks = 64;

HostLink host_link_from_json(const nlohmann::json& j, const std::string& file, const std::string& path) {
  Fields r(j, file, path);
  HostLink h;
  h.kind = r.req_string("kind");
  if (h.kind != "pcie" && h.kind != "nvlink-c2c" && h.kind != "host-memory")
    r.fail("kind", j.at("kind"), "expected \"pcie\", \"nvlink-c2c\" or \"host-memory\"");
  h.pcie_gen = static_cast<int>(h.kind == "pcie" ? r.req_int("pcie_gen", 1, kMaxPcieGen)
                                                 : r.opt_int("pcie_gen", 0, 0, kMaxPcieGen));
  h.bw_Bps = r.req_positive("bw_Bps");
  r.reject_unknown();
  return h;
}

IntraNodeLink intra_link_from_json(const nlohmann::json& j, const std::string& file, const std::string& path) {
  Fields r(j, file, path);
  IntraNodeLink l;
  l.kind = r.req_string("kind");
  if (l.kind != "nvlink" && l.kind != "infinity-fabric" && l.kind != "pcie")
    r.fail("kind", j.at("kind"), "expected \"nvlink\", \"infinity-fabric\" or \"pcie\"");
  l.bw_Bps = r.req_positive("bw_Bps");
  l.links = static_cast<int>(r.opt_int("links", 1, 1, kMaxLinks));
  r.reject_unknown();
  return l;
}

}  // namespace

DeviceSpec device_spec_from_json(const nlohmann::json& j, const std::string& file, const std::string& path) {
  Fields r(j, file, path);
  DeviceSpec d;
  d.name = r.req_string("name");
  d.vendor = r.req_string("vendor");
  if (j.contains("architecture")) {
    const std::string a = r.req_string("architecture");
    d.architecture = parse_architecture(a);
    if (!d.architecture)
      r.fail("architecture", j.at("architecture"), "expected ampere, ada, hopper, blackwell or cdna3");
  }
  d.mem_bytes = r.req_positive("mem_bytes");
  d.mem_bw_Bps = r.req_positive("mem_bw_Bps");
  const auto& flops = r.req("peak_flops_per_s");
  Fields fr(flops, file, path + "peak_flops_per_s.");
  for (ComputeDtype dtype : kAllComputeDtypes)
    if (auto v = fr.opt_positive(std::string(compute_dtype_name(dtype)))) d.peak_flops_per_s[dtype] = *v;
  fr.reject_unknown();  // an unknown dtype key is an error, not a silently dropped figure
  if (d.peak_flops_per_s.empty()) r.fail("peak_flops_per_s", flops, "needs at least one dtype");
  d.host_link = host_link_from_json(r.req("host_link"), file, path + "host_link.");
  d.intra_node_link = intra_link_from_json(r.req("intra_node_link"), file, path + "intra_node_link.");
  constexpr int64_t kMaxOverheadBytes = int64_t{1} << 40;  // 1 TiB: far past any runtime's own memory
  d.runtime_overhead_bytes = r.maybe_int("runtime_overhead_bytes", 0, kMaxOverheadBytes);
  d.comm_buffer_bytes_per_group = r.maybe_int("comm_buffer_bytes_per_group", 0, kMaxOverheadBytes);
  d.comm_library_bytes = r.maybe_int("comm_library_bytes", 0, kMaxOverheadBytes);
  d.comm_library_bytes_pair = r.maybe_int("comm_library_bytes_pair", 0, kMaxOverheadBytes);
  if (const nlohmann::json* m = r.opt_object("measured_copy")) {
    Fields mr(*m, file, path + "measured_copy.");
    DeviceSpec::MeasuredCopy c;
    c.bw_Bps = mr.req_positive("bw_Bps");
    if (c.bw_Bps > d.mem_bw_Bps)
      mr.fail("bw_Bps", "is above the device's mem_bw_Bps (" + std::to_string(d.mem_bw_Bps) +
                            "): a copy cannot beat the memory it reads and writes");
    c.source = mr.req_string("source");
    mr.reject_unknown();
    d.measured_copy = c;
  }
  if (const nlohmann::json* m = r.opt_object("executor_runtime")) {
    Fields mr(*m, file, path + "executor_runtime.");
    DeviceSpec::MeasuredRuntime e;
    e.bytes = mr.req_int("bytes", 1, kMaxOverheadBytes);
    if (static_cast<double>(e.bytes) >= d.mem_bytes)
      mr.fail("bytes", "is not below the device's mem_bytes (" + std::to_string(d.mem_bytes) +
                           "): a runtime cannot hold the whole device");
    e.source = mr.req_string("source");
    mr.reject_unknown();
    d.executor_runtime = e;
  }
  d.source = r.req_string("source");
  d.notes = r.opt_string("notes", "");
  r.reject_unknown();
  return d;
}

void to_json(nlohmann::json& j, const DeviceSpec& d) {
  nlohmann::json flops = nlohmann::json::object();
  for (const auto& [dtype, f] : d.peak_flops_per_s) flops[std::string(compute_dtype_name(dtype))] = f;
  j = nlohmann::json{
      {"name", d.name},
      {"vendor", d.vendor},
      {"mem_bytes", d.mem_bytes},
      {"mem_bw_Bps", d.mem_bw_Bps},
      {"peak_flops_per_s", flops},
      {"host_link", {{"kind", d.host_link.kind}, {"bw_Bps", d.host_link.bw_Bps}}},
      {"intra_node_link",
       {{"kind", d.intra_node_link.kind}, {"bw_Bps", d.intra_node_link.bw_Bps}, {"links", d.intra_node_link.links}}},
      {"source", d.source}};
  if (d.architecture) j["architecture"] = architecture_name(*d.architecture);
  if (d.host_link.pcie_gen > 0) j["host_link"]["pcie_gen"] = d.host_link.pcie_gen;
  if (d.runtime_overhead_bytes) j["runtime_overhead_bytes"] = *d.runtime_overhead_bytes;
  if (d.comm_buffer_bytes_per_group) j["comm_buffer_bytes_per_group"] = *d.comm_buffer_bytes_per_group;
  if (d.comm_library_bytes) j["comm_library_bytes"] = *d.comm_library_bytes;
  if (d.comm_library_bytes_pair) j["comm_library_bytes_pair"] = *d.comm_library_bytes_pair;
  if (d.measured_copy)
    j["measured_copy"] = nlohmann::json{{"bw_Bps", d.measured_copy->bw_Bps}, {"source", d.measured_copy->source}};
  if (d.executor_runtime)
    j["executor_runtime"] =
        nlohmann::json{{"bytes", d.executor_runtime->bytes}, {"source", d.executor_runtime->source}};
  if (!d.notes.empty()) j["notes"] = d.notes;
}

std::filesystem::path DeviceCatalog::builtin_path(const std::filesystem::path& data_dir) {
  return data_dir / "devices" / "catalog.json";
}

DeviceCatalog DeviceCatalog::load_builtin(const std::filesystem::path& data_dir) {
  DeviceCatalog c;
  c.add_file(builtin_path(data_dir));
  return c;
}

void DeviceCatalog::add_file(const std::filesystem::path& file) { add_json(core::read_json_file(file), file.string()); }

void DeviceCatalog::add_json(const nlohmann::json& catalog, const std::string& source) {
  Fields r(catalog, source, "");
  r.opt_string("description", "");
  const auto& list = r.req("devices");
  if (!list.is_array() || list.empty()) r.fail("devices", list, "expected a non-empty list of devices");
  std::vector<DeviceSpec> added;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "devices[" + std::to_string(i) + "].";
    DeviceSpec d = device_spec_from_json(list[i], source, path);
    for (const auto& prev : added)
      if (prev.name == d.name)
        throw core::InputError(source, path + "name", "\"" + d.name + "\"", "duplicate device name in this catalog");
    added.push_back(std::move(d));
  }
  r.reject_unknown();
  for (auto& d : added) {
    auto it = std::find_if(devices_.begin(), devices_.end(), [&](const DeviceSpec& e) { return e.name == d.name; });
    if (it != devices_.end()) {
      *it = std::move(d);
    } else {
      devices_.push_back(std::move(d));
    }
  }
}

const DeviceSpec* DeviceCatalog::find(std::string_view name) const {
  for (const auto& d : devices_)
    if (d.name == name) return &d;
  return nullptr;
}

std::vector<std::string> DeviceCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& d : devices_) out.push_back(d.name);
  return out;
}

}  // namespace dayzero::topology
