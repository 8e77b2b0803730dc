#pragma once
// The simulator's prediction of a measured run as a whole (DESIGN's closed loop,
// step 4, end to end): the run's own plan, with the workload the run had, on a
// cluster of the run's device, against the measured prefill and decode steps.
// Unlike validation.h's end to end (the sum of the measured ops' predictions),
// this is the whole step model: collectives, pipeline micro-batches and bubble,
// kernel overheads, MoE routing as the simulator assumes it.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "model/model.h"
#include "plan/measurements.h"
#include "plan/plan.h"
#include "simulate/efficiency.h"
#include "simulate/prediction.h"
#include "topology/cluster.h"

namespace dayzero::simulate {

// One rank's memory in one of the simulator's categories (prediction.h RankMemory),
// measured (plan::MemoryUse) against predicted for the same plan.
enum class MemoryCategory { weights, kv_cache, activations, comm_buffers, runtime, total };
std::string_view memory_category_name(MemoryCategory c);  // "weights", "kv_cache", ...
struct MemoryComparison {
  int rank = 0;
  MemoryCategory category = MemoryCategory::weights;
  int64_t measured_bytes = 0, predicted_bytes = 0;
  double error_pct = 0;  // (predicted - measured) / measured x 100; NaN when measured is 0
};
// Every rank the run measured, each category and the total, in rank order; a rank
// the prediction does not hold is left out. A device run's weights, activations and
// runtime are the device's (plan::MemoryUse::on_device), its KV cache the device's
// pools where the run recorded them (device_kv_bytes), its communication buffers the host's.
std::vector<MemoryComparison> compare_memory(const plan::Measurements& m, const Prediction& p);

struct RunPrediction {
  plan::Plan plan;  // the run's plan with the run's workload, as simulated
  Prediction prediction;
  // Prefill: each replica ran its prompts together; the simulator's TTFT is one
  // prompt per replica, so the prediction is TTFT x the most prompts a replica ran.
  int64_t prompts_per_replica = 0;
  double measured_prefill_s = 0, predicted_prefill_s = 0, prefill_error_pct = 0;
  // Decode: one token for every sequence, the simulator's TPOT, at the run's mean context.
  double measured_decode_step_s = 0, predicted_decode_step_s = 0, decode_error_pct = 0;
  std::vector<MemoryComparison> memory;  // per rank and category (compare_memory)
};

// The run's workload on its plan: batch = its sequences, input_len = their mean
// prompt length (rounded), output_len = decode steps + 1 (so the simulator's mean
// decode context, input + output / 2, is the run's). The plan is checked against
// the model and cluster (core::InputError naming `m`'s plan otherwise).
plan::Plan plan_of_run(const plan::Measurements& m);

// Where a measured run's ranks are re-simulated: one node of `ranks` x `device`,
// talking over PCIe (a cluster file's reader builds it, so its checks apply).
topology::Cluster one_node_cluster(const topology::DeviceSpec& device, int ranks);
// The run's model config: `m.model` as written, else relative to the directory of
// the Measurements file it came from; none when neither exists.
std::optional<std::filesystem::path> find_run_model(const plan::Measurements& m, const std::filesystem::path& file);

RunPrediction predict_run(const plan::Measurements& m, const model::Model& model, const topology::Cluster& cluster,
                          const Efficiency& eff);

}  // namespace dayzero::simulate
