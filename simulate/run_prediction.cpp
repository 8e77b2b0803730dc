#include "simulate/run_prediction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "plan/plan_json.h"
#include "simulate/simulator.h"
#include "topology/cluster_config.h"

namespace dayzero::simulate {

namespace {
double error_pct_or_nan(double predicted, double measured) {
  return measured > 0 ? (predicted - measured) / measured * 100 : std::numeric_limits<double>::quiet_NaN();
}
}  // namespace

std::string_view memory_category_name(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::weights: return "weights";
    case MemoryCategory::kv_cache: return "kv_cache";
    case MemoryCategory::activations: return "activations";
    case MemoryCategory::comm_buffers: return "comm_buffers";
    case MemoryCategory::runtime: return "runtime";
    case MemoryCategory::total: return "total";
  }
  return "?";
}

std::vector<MemoryComparison> compare_memory(const plan::Measurements& m, const Prediction& p) {
  std::vector<MemoryComparison> out;
  for (const auto& r : m.ranks) {
    const auto it = std::find_if(p.ranks.begin(), p.ranks.end(), [&](const RankMemory& x) { return x.rank == r.rank; });
    if (it == p.ranks.end()) continue;
    const auto& u = r.memory;
    // A device run's categories as the device holds them (MemoryUse::on_device); the
    // host's resident set for a CPU run.
    const bool dev = u.on_device();
    const int64_t weights = dev ? u.device_weights_bytes : u.weights_bytes,
                  activations = dev ? u.device_workspace_peak_bytes : u.workspace_bytes,
                  runtime = dev ? u.device_runtime_or_estimate() : u.runtime_bytes,
                  kv = dev && u.device_kv_bytes > 0 ? u.device_kv_bytes : u.kv_bytes;
    const int64_t total = weights + kv + activations + u.comm_buffer_bytes + runtime;
    const std::pair<MemoryCategory, std::pair<int64_t, int64_t>> rows[] = {
        {MemoryCategory::weights, {weights, it->weights_bytes}},
        {MemoryCategory::kv_cache, {kv, it->kv_cache_bytes}},
        {MemoryCategory::activations, {activations, it->activation_bytes}},
        {MemoryCategory::comm_buffers, {u.comm_buffer_bytes, it->buffer_bytes}},
        {MemoryCategory::runtime, {runtime, it->overhead_bytes}},
        {MemoryCategory::total, {total, it->total_bytes}}};
    for (const auto& [cat, mp] : rows)
      out.push_back({r.rank, cat, mp.first, mp.second,
                     error_pct_or_nan(static_cast<double>(mp.second), static_cast<double>(mp.first))});
  }
  return out;
}

plan::Plan plan_of_run(const plan::Measurements& m) {
  if (m.prompts.empty()) throw std::invalid_argument("the run has no prompts");
  plan::Plan p = m.plan;
  int64_t tokens = 0;
  for (const auto& prompt : m.prompts) tokens += static_cast<int64_t>(prompt.size());
  p.workload.batch = static_cast<int64_t>(m.prompts.size());
  p.workload.input_len = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(static_cast<double>(tokens) / static_cast<double>(m.prompts.size()))));
  p.workload.output_len = static_cast<int64_t>(m.decode_step_s.size()) + 1;
  p.workload.prefix_hit_rate = 0;
  p.devices.clear();  // ranks 0..N-1 on devices 0..N-1 of the cluster given
  // Both backends keep activations in float32 between kernels (validation.h kCpuComputeDtype;
  // the CUDA backend's first stage, cuda/backend.h): their bytes are counted so. The GEMMs'
  // compute dtype comes from the weights' precision (precisions.h gemm_dtype); the per-op
  // report prices each measured op in the dtype it ran in (validation.h op_compute_dtype).
  if (m.backend == "cpu" || m.backend == "cuda") p.dtypes.activations = plan::ActivationDtype::fp32;
  return p;
}

topology::Cluster one_node_cluster(const topology::DeviceSpec& device, int ranks) {
  const topology::ClusterConfig c = topology::cluster_config_from_json(
      {{"name", std::to_string(ranks).append(" x ").append(device.name).append(" (one node)")},
       {"device", device.name},
       {"nodes", 1},
       {"devices_per_node", ranks},
       {"intra_node", {{"fabric", "pcie"}}}},
      "the run's cluster");
  nlohmann::json d;
  to_json(d, device);  // the device as given (shipped, or from a user's catalog)
  topology::DeviceCatalog catalog;
  catalog.add_json(nlohmann::json{{"devices", nlohmann::json::array({d})}}, "the run's device");
  return topology::Cluster(c, catalog);
}

std::optional<std::filesystem::path> find_run_model(const plan::Measurements& m, const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  const fs::path given(m.model);
  if (given.empty()) return std::nullopt;
  if (fs::exists(given)) return given;
  const fs::path beside = file.parent_path() / given;
  if (fs::exists(beside)) return beside;
  return std::nullopt;
}

RunPrediction predict_run(const plan::Measurements& m, const model::Model& model, const topology::Cluster& cluster,
                          const Efficiency& eff) {
  RunPrediction r;
  r.plan = plan_of_run(m);
  r.plan.cluster = cluster.config().name;
  plan::validate_plan(r.plan, model, cluster.num_devices(), "the run's plan");
  Simulator sim(model, cluster, eff);
  SimulateOptions opts;
  opts.cuda_executor = m.backend == "cuda";  // the executor's own staging and runtime
  opts.cuda_fp8_block_gemm = m.fp8_block_gemm;
  r.prediction = sim.simulate(r.plan, opts);
  const int dp = r.plan.attention.dp;
  r.prompts_per_replica = (static_cast<int64_t>(m.prompts.size()) + dp - 1) / dp;  // round robin: the fullest
  r.measured_prefill_s = m.prefill_s;
  r.predicted_prefill_s = static_cast<double>(r.prompts_per_replica) * r.prediction.ttft_s;
  r.prefill_error_pct = error_pct_or_nan(r.predicted_prefill_s, r.measured_prefill_s);
  r.measured_decode_step_s = m.decode_step_mean_s();
  r.predicted_decode_step_s = r.prediction.tpot_s;
  r.decode_error_pct = m.decode_step_s.empty() ? std::numeric_limits<double>::quiet_NaN()
                                               : error_pct_or_nan(r.predicted_decode_step_s, r.measured_decode_step_s);
  r.memory = compare_memory(m, r.prediction);
  return r;
}

}  // namespace dayzero::simulate
