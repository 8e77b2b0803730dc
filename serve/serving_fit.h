#pragma once
// `calibrate --bench`: the efficiency figures of each device and the host overheads
// of each engine, fitted to measured serving runs.
//
// The model. The serving simulation of a row at the start figures splits its mean
// TTFT and TPOT into parts (serve/simulation.h, LatencyParts): seconds set by each
// efficiency figure f, engine steps N, and the request overhead. With m_f a factor on
// the time figure f sets (the fitted efficiency is start / m_f; the kernel overhead
// start x m_f; collectives take 1 / m_f of the link model), s the engine's step
// overhead and q its request overhead:
//   TPOT = sum_f m_{d,f} X_tpot_f + s_e N_tpot
//   TTFT = sum_f m_{d,f} X_ttft_f + s_e N_ttft + q_e + q1_e C + k_e TPOT (1 + H) + h_e H
// for a row on device d served by engine e (N = 0 when the engine overlaps its host
// work with the GPU's: serve/engine.h), C the requests in flight when a request
// arrives (q1: the serving frontend's share, serve/engine.h), k the steps before a new
// request reaches the scheduler (serve/engine.h: admission_delay_steps; its coefficient,
// the row's TPOT, is taken as fitted by the TPOT pass), H the handoffs between a
// disaggregated deployment's pools (1; 0 aggregated: a handed-off request is taken up by a second engine, whose
// admission delay it waits for too) and h the engine's handoff time. A closed loop's schedule does not
// depend on step times, so this is what re-simulating with the fitted figures gives, as long as no op changes the
// roofline term that binds it (the bench re-simulates to check: bench/bench_fidelity.cpp).
//
// Each pass minimizes the sum over rows of |predicted / measured - 1| (iteratively
// reweighted least squares, the weights 1 / max(|error|, 2 %)) under
// bounds: compute figures in [0.10, 1], memory figures in [0.4, 1] (floors under what
// the kernels of the class are measured at: serving_fit.cpp), the kernel overhead in [0, 1 ms],
// collectives in [0.05, 1] of the link model, overheads in [0, 1 s]. Host transfers
// keep m = 1.
// Each step runs two passes: TPOT alone (one step per output token, measured
// precisely; the disaggregated runs' too, their decode pool's steps) fits every figure
// and the step overhead; then TTFT alone (aggregated runs only) fits what TPOT barely sees, the request overheads (q,
// q1, k) and prompt attention (attention_compute), with the rest held. A noisy TTFT thus cannot pull the decode
// figures.
//  1. One set of m for every device, with s and q per engine: the figures a device
//     without measured runs gets (the table's `default`).
//  2. For each device with rows: its own m, s and q held from step 1, pulled toward
//     step 1's m by a penalty worth `prior_rows` rows (few rows move it little).
//     2b. Then each engine's q, q1 and k again, every row at its own device's m (s and
//     the m held): step 1 fitted them beside the shared m, which no measured device keeps.
//  3. For each architecture (FitOptions::architectures, from the catalog) with rows:
//     one m over its devices' rows, fitted as in step 2. A device without rows of its
//     own takes its architecture's m (H200 that of the Hopper devices' runs), and the
//     shared m only where no device of its architecture was measured. Kernels are
//     built per architecture, so a sibling's share of peak is a better guess than the
//     mean over architectures (docs/FIDELITY.md: leave one GPU out).
//  4. A device without rows whose catalog entry holds a copy bandwidth measured on it
//     (DeviceSpec::measured_copy) takes, from step 3's or step 1's figures, the GEMMs'
//     streaming share (gemm_memory) measured: copy / mem_bw_Bps, as a decode GEMV streams
//     its weights at the copy rate (DayZero's measured 99 % on H200: docs/GPU.md). So does
//     a device of an architecture that has no rows where another of its devices was
//     measured so (the mean of their fractions): a held-out H100 takes H200's measured
//     0.888 instead of the other architectures' fitted shares (docs/FIDELITY.md, session 28).
//  5. Each engine's handoff time h (EngineProfile::handoff_s) from its disaggregated runs'
//     TTFT, everything else held at its fitted value: TTFT = (the rest, as above) + h x
//     (handoffs, 1). The disaggregated runs' TTFT enters no other pass. An engine
//     without disaggregated runs takes the mean of the fitted engines' handoff times.

#include <array>
#include <map>
#include <string>
#include <vector>

#include "serve/bench_predict.h"
#include "serve/engine.h"
#include "serve/engine_overheads.h"
#include "serve/simulation.h"
#include "simulate/efficiency.h"
#include "topology/device.h"

namespace dayzero::serve {

// One measured run with its parts at the start figures (no engine overheads).
struct FitRow {
  std::string device;  // catalog name
  std::string model;   // model_path
  Engine engine = Engine::vllm;
  // The engine overlaps its host work with the GPU's: the step overhead is hidden (the
  // fit assumes it shorter than a step) and not fitted to this row.
  bool overlap_scheduling = false;
  LatencyParts ttft, tpot;
  double ttft_s = 0, tpot_s = 0;  // measured
  // A disaggregated run's TPOT is its decode pool's steps, one engine's like any other
  // and fitted so; its TTFT spans both pools and the KV transfer, which the TTFT pass's
  // terms do not describe: false for such a row, whose TTFT sets the engine's handoff
  // time alone (step 5), with everything else held.
  bool fit_ttft = true;
  int64_t prompt_tokens = 0;  // the run's prompt (ISL)
};

// The predicted rows of predict_bench (run with no engine overheads) as fit rows: every
// aggregated run, and the disaggregated runs' TPOT (FitRow::fit_ttft).
std::vector<FitRow> fit_rows(const std::vector<RowPrediction>& predictions);

using FigureScales = std::array<double, simulate::kTimeFigures>;  // m_f; 1 = the start figures

struct FitOptions {
  double prior_rows = 20;  // weight of the pull toward the shared figures, in rows
  int rounds = 25;         // reweighting rounds
  // Each catalog device's architecture (architectures_of): step 3's groups, and the
  // devices without rows that ServingFit::table writes the figures of.
  std::map<std::string, topology::DeviceArchitecture> architectures;
  // Step 4: each catalog device's measured copy bandwidth over its mem_bw_Bps, in (0, 1].
  std::map<std::string, double> measured_copy_fraction;
  // Each catalog device's vendor: a GPU of an architecture without runs takes the shared
  // figures only where a device of its vendor was measured (ServingFit::table).
  std::map<std::string, std::string> vendors;
};

// The catalog's devices that name their architecture.
std::map<std::string, topology::DeviceArchitecture> architectures_of(const topology::DeviceCatalog& catalog);
// FitOptions with the catalog's architectures and measured copy fractions (steps 3, 4).
FitOptions fit_options_from(const topology::DeviceCatalog& catalog);

// Step 3's figures of one architecture, and the measured devices they are fitted to.
struct ArchitectureFit {
  FigureScales scales{};
  std::map<std::string, int64_t> device_rows;
};

struct ServingFit {
  simulate::Efficiency start;  // the figures the parts were computed with
  FigureScales shared{};       // step 1
  std::map<std::string, FigureScales> devices;
  std::map<std::string, int64_t> device_rows;
  std::map<Engine, EngineOverheads> engines;  // step and request overheads, rows
  std::map<topology::DeviceArchitecture, ArchitectureFit> architectures;
  std::map<std::string, topology::DeviceArchitecture> device_architecture;  // FitOptions::architectures
  std::map<std::string, std::string> device_vendor;                         // FitOptions::vendors
  // Step 4: the figures of each device without rows that a measured copy sets.
  struct MeasuredPrior {
    FigureScales scales{};
    double copy_fraction = 0;  // the fraction given: its own, or its architecture's measured devices' mean
    bool own = false;          // measured on the device itself
  };
  std::map<std::string, MeasuredPrior> measured_priors;

  // The device's own figures, else step 4's, else its architecture's, else the shared ones.
  const FigureScales& scales_for(const std::string& device) const;
  double ttft_s(const FitRow& r) const;  // the model's prediction
  double tpot_s(const FitRow& r) const;
  // The start figures with the scales applied.
  simulate::Efficiency efficiency(const FigureScales& m) const;
  // `base` with its default and the fitted devices replaced, and each device of
  // device_architecture without rows given its architecture's figures where one was
  // fitted, else the shared ones (its tile_rows kept) where a device of its vendor was
  // measured: the shared figures describe that vendor's kernels and engines, not another's.
  // Other devices (another vendor's, the CPU host, the generic accelerator) keep their
  // entries. Each entry's source starts with `source`.
  simulate::EfficiencyTable table(simulate::EfficiencyTable base, const std::string& source) const;
  EngineOverheadTable overheads(const std::string& source) const;
};

// Throws std::invalid_argument when no row has positive measured latencies.
ServingFit fit_serving(const std::vector<FitRow>& rows, const simulate::Efficiency& start, const FitOptions& o = {});

}  // namespace dayzero::serve
