// dayzero simulate --model M --cluster C --plan P.json [--json]: memory per rank
// and prefill / decode step times of one plan.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/format.h"
#include "core/data_dir.h"
#include "plan/plan_json.h"
#include "simulate/precisions.h"
#include "simulate/simulator.h"
#include "topology/device.h"

namespace dayzero::cli {

namespace {

struct SimulateOptions {
  std::string model, cluster, plan, catalog;
  bool json = false;
};

std::string gb(int64_t b) { return fixed(static_cast<double>(b) / 1e9, 2); }

std::string seconds(double s) {
  if (s >= 1) return fixed(s, 3) + " s";
  if (s >= 1e-3) return fixed(s * 1e3, 2) + " ms";
  return fixed(s * 1e6, 1) + " us";
}

void print_step(std::ostream& out, const char* title, const simulate::StepTime& st) {
  out << '\n' << title << ": " << seconds(st.time_s) << "  (" << with_commas(st.tokens) << " tokens per replica";
  if (st.micro_batches > 1) out << ", " << st.micro_batches << " micro-batches, bubble " << seconds(st.bubble_s);
  out << ")\n";
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : st.by_kind_s) rows.emplace_back(v, simulate::cost_kind_name(k));
  std::sort(rows.rbegin(), rows.rend());
  for (const auto& [v, k] : rows)
    out << "  " << pad_right(k, 18) << pad_left(seconds(v), 12) << pad_left(fixed(100 * v / st.time_s, 1) + " %", 9)
        << '\n';
}

// One worker's rows of the memory table, a row per stage, its ranks from `first`.
void print_memory_rows(std::ostream& out, const plan::Plan& w, const simulate::Prediction& pred, int first,
                       const std::string& tag) {
  for (int s = 0; s < w.pp; ++s) {
    const int lo = first + s * w.ranks_per_stage(), hi = lo + w.ranks_per_stage() - 1;
    const auto& r = pred.ranks[static_cast<size_t>(lo)];
    out << "  " << pad_right(tag + std::to_string(lo) + "-" + std::to_string(hi), 12)
        << pad_left(gb(r.weights_bytes), 10) << pad_left(gb(r.kv_cache_bytes), 10)
        << pad_left(gb(r.activation_bytes), 10) << pad_left(gb(r.buffer_bytes), 10)
        << pad_left(gb(r.overhead_bytes), 10) << pad_left(gb(r.total_bytes), 10) << pad_left(gb(r.capacity_bytes), 10)
        << pad_left(gb(r.host_bytes), 10) << (r.fits() ? "" : "  DOES NOT FIT") << '\n';
  }
}

void print_report(std::ostream& out, const plan::Plan& p, const simulate::Simulator& sim,
                  const simulate::Prediction& pred) {
  const auto& m = sim.model();
  out << "Plan for " << m.config.display_family() << " on " << sim.cluster().name() << ": " << p.world_size()
      << " ranks (pp " << p.pp << "; attention tp " << p.attention.tp << " x dp " << p.attention.dp;
  if (m.config.is_moe()) out << "; experts tp " << p.moe.tp << " x ep " << p.moe.ep << " x dp " << p.moe.dp;
  out << ")\n  weights: attention " << model::precision_name(p.dtypes.attention) << ", dense "
      << model::precision_name(p.dtypes.dense_mlp) << ", experts " << model::precision_name(p.dtypes.experts)
      << ", embedding " << model::precision_name(p.dtypes.embedding) << "; KV cache "
      << plan::kv_dtype_name(p.dtypes.kv_cache) << '\n';
  out << "  workload: batch " << p.workload.batch << ", input " << p.workload.input_len << ", output "
      << p.workload.output_len << ", prefix hit " << fixed(100 * p.workload.prefix_hit_rate, 0) << " %";
  if (m.config.is_moe()) out << ", routing Zipf s = " << fixed(p.workload.routing_zipf_s, 2);
  if (p.offload.resident_experts >= 0) out << ", " << p.offload.resident_experts << " experts per layer resident";
  if (p.disaggregated.on()) {
    const plan::WorkerLayout& l = p.disaggregated.prefill;
    out << "\n  disaggregated: " << p.disaggregated.prefill_workers << " prefill worker(s) of pp " << l.pp
        << ", attention tp " << l.attention.tp << " x dp " << l.attention.dp << ", experts tp " << l.moe.tp << " x ep "
        << l.moe.ep << " (batch " << l.batch << ") and " << p.disaggregated.decode_workers
        << " decode worker(s) of the layout above: " << p.devices_used() << " devices";
  }
  out << "\n\nMemory per rank (GB = 1e9 bytes); ranks of a stage hold the same"
      << (p.disaggregated.on() ? "; P: one prefill worker, D: one decode worker" : "") << '\n';
  out << "  " << pad_right("ranks", 12) << pad_left("weights", 10) << pad_left("KV cache", 10) << pad_left("activ.", 10)
      << pad_left("buffers", 10) << pad_left("overhead", 10) << pad_left("total", 10) << pad_left("capacity", 10)
      << pad_left("host", 10) << '\n';
  if (!p.disaggregated.on()) {
    print_memory_rows(out, p, pred, 0, "");
  } else {  // one prefill worker's ranks, then one decode worker's (simulate/disaggregated.h)
    const plan::Plan prefill = p.prefill_worker();
    print_memory_rows(out, prefill, pred, 0, "P ");
    print_memory_rows(out, p.decode_worker(), pred, prefill.world_size(), "D ");
  }
  out << "  fullest: " << pred.fullest_reason << '\n';
  print_step(
      out,
      p.disaggregated.on() ? "Prefill of one prompt per prefill replica" : "Prefill of one prompt per replica (TTFT)",
      pred.prefill);
  print_step(out, p.disaggregated.on() ? "Decode step of a decode worker (TPOT)" : "Decode step (TPOT)", pred.decode);
  out << "\nTTFT " << seconds(pred.ttft_s) << ", TPOT " << seconds(pred.tpot_s) << ", throughput "
      << fixed(pred.throughput_tokens_per_s, 0) << " tokens/s (" << fixed(pred.throughput_tokens_per_s_per_device, 1)
      << " per device), request latency " << seconds(pred.request_latency_s) << '\n';
  out << (pred.fits ? "FITS" : "DOES NOT FIT: " + pred.fullest_reason) << '\n';
}

void run_simulate(const SimulateOptions& o) {
  const model::Model m = model::load_model(resolve_model_path(o.model));
  topology::DeviceCatalog catalog = topology::DeviceCatalog::load_builtin(core::data_dir());
  if (!o.catalog.empty()) catalog.add_file(o.catalog);
  const topology::Cluster cluster = topology::Cluster::load(resolve_cluster_path(o.cluster), catalog);
  const plan::Plan plan = plan::load_plan(o.plan);
  plan::validate_plan(plan, m, cluster.num_devices(), o.plan);
  simulate::validate_plan_precisions(plan, cluster.device_spec(), o.plan);
  const auto table = simulate::EfficiencyTable::load_builtin(core::data_dir());
  simulate::Simulator sim(m, cluster, table.for_device(cluster.device_spec().name));
  const simulate::Prediction pred = sim.simulate(plan);
  std::ostringstream out;
  if (o.json) out << nlohmann::json(pred).dump(2) << '\n';
  else print_report(out, plan, sim, pred);
  std::cout << out.str() << std::flush;
  if (!pred.fits) throw ExitStatus{2};
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate",
                                     "Memory per rank and prefill/decode time of one plan "
                                     "(exit 2 when it does not fit)");
  cmd->add_option("--model", opts->model, "config.json, model directory, or bundled model name")->required();
  cmd->add_option("--cluster", opts->cluster, "Cluster JSON file, or bundled cluster name (e.g. h200-2x8)")->required();
  cmd->add_option("--plan", opts->plan, "Plan JSON file")->required();
  cmd->add_option("--catalog", opts->catalog, "Extra device catalog JSON file");
  cmd->add_flag("--json", opts->json, "Print the prediction as one JSON object");
  cmd->callback([opts] { run_simulate(*opts); });
}

}  // namespace dayzero::cli
