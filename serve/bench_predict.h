#pragma once
// Measured serving runs predicted one by one: each `agg` row (serve/bench_rows.h)
// becomes the plan, engine and workload it names — the model from the bundled
// configs (scenarios/models/hf_ids.json), the GPU's cluster
// (scenarios/fidelity/systems.json), the layout, the precisions, the engine's
// defaults, a closed loop at the row's concurrency — and is served by the
// simulation. A row that cannot be mapped is rejected with the reason, never
// guessed. The analytic steady state (Simulator::simulate) is predicted beside it:
// the figures before the serving model.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "serve/bench_rows.h"
#include "serve/engine.h"
#include "serve/engine_overheads.h"
#include "serve/inferencex_recipes.h"
#include "serve/simulation.h"
#include "simulate/efficiency.h"

namespace dayzero::serve {

// The KV cache's dtype in a run: the rows do not name it. The publisher's tools give
// FP8 checkpoints (per-tensor or 128x128 blocks) and NVFP4 ones an FP8 KV cache, and
// BF16 ones a BF16 cache (aiconfigurator: sdk/task_v1_compat.py, `_PROFILE_TO_QUANT`;
// sdk/models/helpers.py, `_infer_quant_modes_from_raw_config`). InferenceX's aggregated
// runs have their recipe's (serve/inferencex_recipes.h).
plan::KvDtype kv_dtype_of(const BenchRow& r);

// The engine settings a measured run was deployed with: the engine's defaults plus
// what the publisher's benchmark deployment generator sets for an aggregated worker
// of the row's batch size and input length (aiconfigurator,
// src/aiconfigurator/generator/rule_plugin/benchmark/{vllm,sglang,trtllm}.rule and
// config/backend_templates). Sources and values: docs/ENGINE_DEFAULTS.md, "How the
// measured runs were deployed".
EngineProfile deployed_profile(Engine e, const Deployment& d, const BenchRow& r);

struct RowPrediction {
  const BenchRow* row = nullptr;
  bool predicted = false;
  std::string reason;                           // why it was rejected
  double ttft_s = 0, tpot_s = 0;                // the serving simulation's means
  double steady_ttft_s = 0, steady_tpot_s = 0;  // the steady-state formula's
  LatencyParts ttft_parts, tpot_parts;          // the serving simulation's means, by part (calibration's features)
  std::string device;                           // the catalog's name of the row's GPU
  int64_t model_params = 0;                     // the bundled config's parameters (same architecture, same count)
  bool overlap_scheduling = false;              // the engine hid its host time per step behind the GPU's
  double ttft_error_pct() const { return 100 * (ttft_s / row->ttft_s - 1); }
  double tpot_error_pct() const { return 100 * (tpot_s / row->tpot_s - 1); }
  double steady_ttft_error_pct() const { return 100 * (steady_ttft_s / row->ttft_s - 1); }
  double steady_tpot_error_pct() const { return 100 * (steady_tpot_s / row->tpot_s - 1); }
};

struct BenchOptions {
  std::filesystem::path data_dir;
  simulate::EfficiencyTable efficiency;  // the shipped table or a calibration
  EngineOverheadTable engines;           // the engines' host overheads (none: zeros)
  // The benchmark client of the measured runs (aiconfigurator's generator,
  // config/backend_templates/benchmark/bench_run.sh.j2): `aiperf profile --concurrency c
  // --num-requests 20c --warmup-request-count 2c`, the warm-up left out of the statistics.
  // aiperf (0.13.0, config/phases.py: `seamless` defaults to False) starts the profiling
  // phase only once every warm-up request has returned: a fresh burst of c requests on
  // an idle engine, which is what a closed loop of 20c requests without warm-up is.
  int64_t requests_per_slot = 20;
  int64_t warmup_per_slot = 0;
  int threads = 0;  // rows served at once; 0: one per hardware thread
};

std::vector<RowPrediction> predict_bench(const std::vector<BenchRow>& rows, const BenchOptions& o);

// |error| of a group of predicted rows, as median and p90 (percent).
struct ErrorSummary {
  int64_t rows = 0;
  double ttft_median = 0, ttft_p90 = 0, tpot_median = 0, tpot_p90 = 0;
  double steady_ttft_median = 0, steady_ttft_p90 = 0, steady_tpot_median = 0, steady_tpot_p90 = 0;
};
// By "all", and by mode, model, GPU and engine ("mode:agg" or "mode:disagg", "model:<id>",
// "system:<s>", "engine:<b>").
std::map<std::string, ErrorSummary> summarize(const std::vector<RowPrediction>& predictions);

}  // namespace dayzero::serve
