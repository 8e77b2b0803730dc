#pragma once
// The device catalog: what one accelerator can hold, compute and move. Figures are
// data, not code: the catalog shipped in scenarios/devices/catalog.json is loaded at
// run time (its folder passed in by the caller), and a user file can add devices or
// replace shipped ones. Every entry carries a `source` naming the datasheet it is from.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dayzero::topology {

// The element types a device computes GEMMs in (tensor-core paths). Declared in the
// alphabetical order of their names, the order reports list them in.
enum class ComputeDtype { bf16, fp16, fp32, fp4, fp8, int8, tf32 };
inline constexpr ComputeDtype kAllComputeDtypes[] = {ComputeDtype::bf16, ComputeDtype::fp16, ComputeDtype::fp32,
                                                     ComputeDtype::fp4,  ComputeDtype::fp8,  ComputeDtype::int8,
                                                     ComputeDtype::tf32};
std::string_view compute_dtype_name(ComputeDtype d);  // the catalog's keys: "bf16", "fp8", ...
std::optional<ComputeDtype> parse_compute_dtype(std::string_view s);

// The accelerator's architecture: devices of one architecture run the same kernels
// (tensor-core instructions, the engines' kernel builds), so a device without measured
// runs takes its efficiency figures from fitted devices of its architecture
// (serve/serving_fit.h). NVIDIA names it in each datasheet (B300 is "Blackwell Ultra",
// a Blackwell part).
enum class DeviceArchitecture { ampere, ada, hopper, blackwell, cdna3 };
std::string_view architecture_name(DeviceArchitecture a);  // the catalog's values: "hopper", ...
std::optional<DeviceArchitecture> parse_architecture(std::string_view s);

// The device's link to its host CPU (PCIe, or a coherent link such as NVLink-C2C);
// "host-memory" where the device is the host CPU itself (host memory is its own
// memory; bw_Bps is then a copy within it).
struct HostLink {
  std::string kind;   // "pcie" | "nvlink-c2c" | "host-memory"
  int pcie_gen = 0;   // PCIe generation; 0 where kind is not "pcie"
  double bw_Bps = 0;  // per direction
};

// The device's own scale-up link to its peers inside a node (or NVLink domain).
struct IntraNodeLink {
  std::string kind;   // "nvlink" | "infinity-fabric" | "pcie"
  double bw_Bps = 0;  // per direction, aggregate over all of the device's links
  int links = 1;      // number of point-to-point links the aggregate is split over (mesh fabrics)
};

struct DeviceSpec {
  std::string name;
  std::string vendor;
  std::optional<DeviceArchitecture> architecture;  // unset: shares figures with no other device
  double mem_bytes = 0;
  double mem_bw_Bps = 0;
  // Peak dense (no structured sparsity) tensor throughput per dtype; a dtype that the
  // device has no tensor-core path for is absent.
  std::map<ComputeDtype, double> peak_flops_per_s;
  HostLink host_link;
  IntraNodeLink intra_node_link;
  // What a serving process holds besides weights, KV cache and activations: its
  // runtime (a CUDA context and library workspaces; a CPU process's own pages) and the
  // buffers of each communicator it joins. Unset: the GPU engines' figures
  // (simulate/simulator.h kRuntimeOverheadBytes, kNcclBytesPerCommunicator).
  std::optional<int64_t> runtime_overhead_bytes;
  std::optional<int64_t> comm_buffer_bytes_per_group;
  // What the communication library maps in each process once its world has peers
  // (MPI_Init's shared-memory transport on a CPU host): `comm_library_bytes` in a
  // world of three or more processes, `comm_library_bytes_pair` in a world of two
  // (unset: comm_library_bytes). Unset: 0 (a GPU runtime's is in runtime_overhead_bytes).
  std::optional<int64_t> comm_library_bytes;
  std::optional<int64_t> comm_library_bytes_pair;
  // A copy bandwidth measured on the device itself (device to device, read + written),
  // where one was: what a kernel that streams its bytes once reaches. A device
  // without measured serving runs takes it as its GEMMs' share of mem_bw_Bps
  // (serve/serving_fit.h). Never above mem_bw_Bps.
  struct MeasuredCopy {
    double bw_Bps = 0;
    std::string source;  // the tool, the device and where its printout is kept
  };
  std::optional<MeasuredCopy> measured_copy;
  // What DayZero's own CUDA executor holds on the device beyond its memory pool (the
  // CUDA context, the kernels' modules, cuBLASLt's handle), measured by `dayzero run
  // --backend cuda` where the device was at hand: `validate` sets it beside a CUDA run
  // as the ledger's runtime, where runtime_overhead_bytes is an engine's.
  struct MeasuredRuntime {
    int64_t bytes = 0;
    std::string source;  // the run, the device, the driver and where its Measurements are kept
  };
  std::optional<MeasuredRuntime> executor_runtime;
  std::string source;  // datasheet(s) every figure is from, or the stated assumption
  std::string notes;   // how marketing figures were converted (optional)

  // 0 when the device has no such dtype.
  double peak_flops_for(ComputeDtype dtype) const;
};

class DeviceCatalog {
 public:
  // The catalog shipped with DayZero: `data_dir`/devices/catalog.json.
  static DeviceCatalog load_builtin(const std::filesystem::path& data_dir);
  static std::filesystem::path builtin_path(const std::filesystem::path& data_dir);

  // Adds the devices of a catalog file; an entry whose name is already known replaces it
  // (so a user can correct a shipped figure). Names must be unique within one file.
  void add_file(const std::filesystem::path& file);
  void add_json(const nlohmann::json& catalog, const std::string& source);

  const DeviceSpec* find(std::string_view name) const;
  const std::vector<DeviceSpec>& devices() const { return devices_; }
  std::vector<std::string> names() const;

 private:
  std::vector<DeviceSpec> devices_;
};

// One catalog entry from/to JSON; `file` and `path` only shape error messages.
DeviceSpec device_spec_from_json(const nlohmann::json& j, const std::string& file, const std::string& path);
void to_json(nlohmann::json& j, const DeviceSpec& d);

}  // namespace dayzero::topology
