#include "cli/run_prediction_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "simulate/validation.h"
#include "topology/cluster.h"

namespace dayzero::cli {

namespace {
const char* category_label(simulate::MemoryCategory c) {
  switch (c) {
    case simulate::MemoryCategory::weights: return "weights (with scales)";
    case simulate::MemoryCategory::kv_cache: return "KV cache";
    case simulate::MemoryCategory::activations: return "activations, workspace";
    case simulate::MemoryCategory::comm_buffers: return "communication buffers";
    case simulate::MemoryCategory::runtime: return "runtime";
    case simulate::MemoryCategory::total: return "total";
  }
  return "?";
}

// A device run's weights and kernels' buffers on the device beside the ledger's weights
// and activations for the rank (the KV cache is in the table above); errors take the
// ledger table's sign: predicted against measured (simulate::error_pct).
struct DeviceMemoryRow {
  int rank = 0;
  int64_t weights_bytes = 0, ledger_weights_bytes = 0, workspace_peak_bytes = 0, ledger_activations_bytes = 0,
          pool_peak_bytes = 0, used_bytes = 0;
  double weights_error_pct = 0, workspace_error_pct = 0;
};
DeviceMemoryRow device_memory_row(const simulate::RunPrediction& p, const plan::RankMeasurements& r) {
  const auto ledger = [&](simulate::MemoryCategory c) -> int64_t {
    for (const auto& m : p.memory)
      if (m.rank == r.rank && m.category == c) return m.predicted_bytes;
    return 0;
  };
  const auto error = [](int64_t measured, int64_t predicted) {
    return simulate::error_pct(static_cast<double>(predicted), static_cast<double>(measured));
  };
  const auto& mem = r.memory;
  DeviceMemoryRow d;
  d.rank = r.rank;
  d.weights_bytes = mem.device_weights_bytes;
  d.ledger_weights_bytes = ledger(simulate::MemoryCategory::weights);
  d.workspace_peak_bytes = mem.device_workspace_peak_bytes;
  d.ledger_activations_bytes = ledger(simulate::MemoryCategory::activations);
  d.pool_peak_bytes = mem.device_pool_peak_bytes;
  d.used_bytes = mem.device_used_bytes;
  d.weights_error_pct = error(d.weights_bytes, d.ledger_weights_bytes);
  d.workspace_error_pct = error(d.workspace_peak_bytes, d.ledger_activations_bytes);
  return d;
}
void print_device_memory(std::ostream& out, const DeviceMemoryRow& d) {
  out << "  rank " << d.rank << " on the device: weights " << with_commas(d.weights_bytes) << " bytes (ledger "
      << with_commas(d.ledger_weights_bytes) << ", " << signed_pct(d.weights_error_pct)
      << " %), kernels' buffers at most " << with_commas(d.workspace_peak_bytes)
      << " bytes (ledger's activations and workspace " << with_commas(d.ledger_activations_bytes) << ", "
      << signed_pct(d.workspace_error_pct) << " %); pool peak " << with_commas(d.pool_peak_bytes) << " bytes, in use "
      << with_commas(d.used_bytes) << " bytes\n";
}

// The simulator's memory ledger for the run's plan beside what each rank measured.
void print_memory(std::ostream& out, const simulate::RunPrediction& p, const LoopInputs& in) {
  const auto& dev = in.figures.device;
  out << "\nMemory per rank, measured against the simulator's ledger for the same plan (bytes; ";
  if (in.run.measurements.backend == "cuda" && dev.executor_runtime)
    out << "the ledger's runtime is DayZero's CUDA executor's, measured on " << dev.name
        << ", its activations hold the executor's BF16 copies and cuBLASLt workspace)\n";
  else if (in.run.measurements.backend == "cuda")
    out << "the ledger's activations hold the executor's BF16 copies and cuBLASLt workspace; its runtime is the "
        << "engines' figure for " << dev.name << ": the catalog has no executor_runtime measured on it)\n";
  else out << "the ledger's runtime and communication figures are " << dev.name << "'s)\n";
  out << "  " << pad_right("rank", 6) << pad_right("category", 24) << pad_left("measured", 16)
      << pad_left("predicted", 16) << pad_left("error %", 10) << '\n';
  for (const auto& m : p.memory)
    out << "  " << pad_right(std::to_string(m.rank), 6) << pad_right(category_label(m.category), 24)
        << pad_left(with_commas(m.measured_bytes), 16) << pad_left(with_commas(m.predicted_bytes), 16)
        << pad_left(signed_pct(m.error_pct), 10) << '\n';
  for (const auto& r : in.run.measurements.ranks) {
    if (r.memory.on_device()) {  // compare_memory took the device's figures
      out << "  rank " << r.rank << " ran on a device: its weights, activations and runtime above are the "
          << "device's (runtime: in use beyond the pool's blocks), its KV cache "
          << (r.memory.device_kv_bytes > 0 ? "the device's pools" : "the executor's blocks") << "\n";
      continue;
    }
    out << "  rank " << r.rank << ": resident set high-water " << with_commas(r.memory.rss_hwm_bytes)
        << " bytes, as the OS saw it (the measured total covers "
        << fixed(100.0 * static_cast<double>(r.memory.peak_bytes()) /
                     static_cast<double>(std::max<int64_t>(1, r.memory.rss_hwm_bytes)),
                 1)
        << " %)\n";
  }
  for (const auto& r : in.run.measurements.ranks)
    if (r.memory.on_device()) print_device_memory(out, device_memory_row(p, r));
}
}  // namespace

void print_run_prediction(std::ostream& out, const simulate::RunValidation& v, const LoopInputs& in) {
  out << "\nWhole run, as the simulator predicts it (the run's plan and workload on " << in.run.measurements.world_size
      << " x " << in.figures.device.name << " in one node: collectives, pipeline, overheads included)\n";
  if (!v.whole_run) {
    out << "  not predicted: " << v.whole_run_skipped << '\n';
    return;
  }
  const auto& p = *v.whole_run;
  const auto& w = p.plan.workload;
  out << "  workload: " << w.batch << " sequences of " << w.input_len << " prompt tokens (mean), " << w.output_len - 1
      << " decode steps\n";
  std::string prefill = "prefill (";
  prefill += std::to_string(p.prompts_per_replica);
  prefill += " x TTFT per replica)";
  const size_t w1 = std::max<size_t>(prefill.size(), 20) + 2;
  out << "  " << pad_right("phase", w1) << pad_left("measured ms", 13) << pad_left("predicted ms", 14)
      << pad_left("error %", 10) << '\n';
  out << "  " << pad_right(prefill, w1) << pad_left(fixed(p.measured_prefill_s * 1e3, 3), 13)
      << pad_left(fixed(p.predicted_prefill_s * 1e3, 3), 14) << pad_left(signed_pct(p.prefill_error_pct), 10) << '\n';
  out << "  " << pad_right("decode step (TPOT)", w1) << pad_left(fixed(p.measured_decode_step_s * 1e3, 3), 13)
      << pad_left(fixed(p.predicted_decode_step_s * 1e3, 3), 14) << pad_left(signed_pct(p.decode_error_pct), 10)
      << '\n';
  print_memory(out, p, in);
}

nlohmann::json run_prediction_json(const simulate::RunValidation& v, const LoopInputs& in) {
  if (!v.whole_run) return {{"predicted", false}, {"skipped", v.whole_run_skipped}};
  const auto& p = *v.whole_run;
  nlohmann::json device_memory = nlohmann::json::array();  // the text's "on the device" lines
  for (const auto& r : in.run.measurements.ranks) {
    if (!r.memory.on_device()) continue;
    const DeviceMemoryRow d = device_memory_row(p, r);
    device_memory.push_back({{"rank", d.rank},
                             {"weights_bytes", d.weights_bytes},
                             {"ledger_weights_bytes", d.ledger_weights_bytes},
                             {"weights_error_pct", finite_or_null(d.weights_error_pct)},
                             {"workspace_peak_bytes", d.workspace_peak_bytes},
                             {"ledger_activations_bytes", d.ledger_activations_bytes},
                             {"workspace_error_pct", finite_or_null(d.workspace_error_pct)},
                             {"pool_peak_bytes", d.pool_peak_bytes},
                             {"used_bytes", d.used_bytes}});
  }
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& m : p.memory)
    memory.push_back({{"rank", m.rank},
                      {"category", simulate::memory_category_name(m.category)},
                      {"measured_bytes", m.measured_bytes},
                      {"predicted_bytes", m.predicted_bytes},
                      {"error_pct", finite_or_null(m.error_pct)}});
  return {{"predicted", true},
          {"batch", p.plan.workload.batch},
          {"input_len", p.plan.workload.input_len},
          {"output_len", p.plan.workload.output_len},
          {"prompts_per_replica", p.prompts_per_replica},
          {"ttft_s", p.prediction.ttft_s},
          {"tpot_s", p.prediction.tpot_s},
          {"prefill",
           {{"measured_s", p.measured_prefill_s},
            {"predicted_s", p.predicted_prefill_s},
            {"error_pct", finite_or_null(p.prefill_error_pct)}}},
          {"decode_step",
           {{"measured_s", p.measured_decode_step_s},
            {"predicted_s", p.predicted_decode_step_s},
            {"error_pct", finite_or_null(p.decode_error_pct)}}},
          {"memory", memory},
          {"device_memory", device_memory}};
}

}  // namespace dayzero::cli
