#pragma once
// How much of a device's peak an op reaches, and the fixed costs around ops. These
// defaults stand until calibration (the executor's measurements) replaces them;
// each says where its number comes from.

#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace dayzero::simulate {

struct Efficiency {
  // Dense GEMM at full tiles: cuBLAS BF16/FP8 on H100 SXM sustains ~0.7 of the
  // datasheet dense peak on large shapes (NVIDIA, "cuBLAS 12.0 ... Hopper" blog;
  // the same ratio is seen in vLLM/SGLang kernel microbenchmarks).
  double gemm_compute = 0.70;
  // Weight streaming (decode GEMV/GEMM): ~0.8 of HBM peak (STREAM-like copy on
  // H100 SXM reaches ~2.9-3.0 of 3.35 TB/s; GEMV kernels a little less).
  double gemm_memory = 0.80;
  // Attention: FlashAttention-3 reaches 0.6-0.75 of the BF16 peak on H100 in the
  // forward pass (Shah et al. 2024, Fig. 5); prefill shapes here, take 0.5.
  double attention_compute = 0.50;
  // Decode attention reads the paged KV cache: ~0.7 of HBM peak (FlashInfer /
  // vLLM paged-attention decode benchmarks at long context).
  double attention_memory = 0.70;
  // Norms, RoPE, activations, routing and combine: bandwidth-bound, ~0.7.
  double elementwise_memory = 0.70;
  // Fixed cost per kernel: launch and tail, ~3 us without CUDA graphs (NVIDIA
  // "Getting Started with CUDA Graphs"; graphs roughly halve it). An assumption
  // until calibrated.
  double kernel_overhead_s = 3e-6;
  // Collectives and pipeline sends against the topology's link model (topology/
  // collective.h: latency plus bytes at the links' bandwidth): 1 takes the model as
  // is; calibration lowers it where measured steps show the links slower (NCCL's
  // achieved bus bandwidth, protocol and launch costs the model leaves out).
  double collective_efficiency = 1.0;
  // Rows of the GEMM tile: a tensor-core GEMM with M tokens costs as if M were
  // rounded up to a multiple of this (Hopper wgmma M = 64).
  int tile_rows = 64;
};

// The per-device table (scenarios/devices/efficiency.json): a default, and
// overrides per device name. Unknown fields and values outside (0, 1] are errors
// naming the file and the field.
// The figures as efficiency.json and calibration files write them (no `source`).
nlohmann::json efficiency_to_json(const Efficiency& e);

class EfficiencyTable {
 public:
  static EfficiencyTable load(const std::filesystem::path& file);
  // The same from a parsed file; `file` names it in errors.
  static EfficiencyTable from_json(const nlohmann::json& j, const std::string& file);
  // data_dir/devices/efficiency.json
  static EfficiencyTable load_builtin(const std::filesystem::path& data_dir);

  Efficiency for_device(const std::string& device_name) const;
  std::string source_for(const std::string& device_name) const;
  const Efficiency& default_efficiency() const { return default_; }
  const std::string& default_source() const { return default_source_; }
  // Devices with their own entry, by name.
  std::vector<std::string> device_names() const;

  // A table as a fit writes it: the default's figures, then each device's (every
  // figure written; `source` required for each).
  void set_default(const Efficiency& e, std::string source);
  void set_device(const std::string& name, const Efficiency& e, std::string source);
  nlohmann::json to_json(const std::string& description) const;
  // Writes via a temporary file in the same directory and a rename.
  void save(const std::filesystem::path& file, const std::string& description) const;

 private:
  Efficiency default_;
  std::string default_source_;
  std::map<std::string, std::pair<Efficiency, std::string>> devices_;
};

}  // namespace dayzero::simulate
