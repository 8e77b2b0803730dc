#pragma once
// The host-side costs of each serving engine, which no kernel shows: a fixed time per
// engine step (scheduling, input preparation, sampling, launches CUDA graphs do not
// hide) and per request (HTTP, tokenization, detokenization, the first token's trip
// back). Fitted to measured serving runs by `calibrate --bench` (serve/serving_fit.h)
// and shipped in scenarios/devices/engine-overheads.json with the fit's provenance and
// the residual band of its rows, which `serve` prints beside its predictions.

#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "serve/engine.h"

namespace dayzero::serve {

// Relative error of a prediction (predicted / measured - 1) on the fitted rows:
// 10th and 90th percentile.
struct ErrorBand {
  double p10 = 0, p90 = 0;
};

// A frontend that holds a request for more steps than this is not waiting on the
// engine's loop but broken: the bound of the table's files and of the fit.
inline constexpr double kMaxAdmissionDelaySteps = 100;

struct EngineOverheads {
  double step_overhead_s = 0;                  // every engine step
  double request_overhead_s = 0;               // every request's TTFT (and end-to-end latency)
  double request_overhead_per_inflight_s = 0;  // and per request in flight when it arrives
  double admission_delay_steps = 0;            // steps before a new request is scheduled (engine.h)
  double handoff_s = 0;                        // disaggregated: prefill pool to decode pool (engine.h)
  int64_t rows = 0;                            // measured runs it was fitted to (0: not fitted)
  // The longest prompt among the runs whose TTFT it was fitted to (0: not recorded):
  // a longer prompt's TTFT extrapolates the fitted prompt-attention figure, whose
  // term grows as the prompt's square (docs/FIDELITY.md, session 38).
  int64_t longest_prompt_tokens = 0;
  ErrorBand ttft_band, tpot_band;
  std::string source;
};

class EngineOverheadTable {
 public:
  // Unknown engines or fields, negative or absurd times (over 1 s), a missing source:
  // core::InputError naming the file and the field.
  static EngineOverheadTable load(const std::filesystem::path& file);
  // The same from a parsed file; `file` names it in errors.
  static EngineOverheadTable from_json(const nlohmann::json& j, const std::string& file);
  // data_dir/devices/engine-overheads.json
  static EngineOverheadTable load_builtin(const std::filesystem::path& data_dir);

  // The engine's overheads; zeros (and no band) for an engine the table lacks.
  EngineOverheads for_engine(Engine e) const;
  void set(Engine e, EngineOverheads o) { engines_[e] = std::move(o); }
  // The profile with the engine's overheads in it.
  EngineProfile apply(EngineProfile p) const;

  nlohmann::json to_json(const std::string& description) const;
  // Writes via a temporary file in the same directory and a rename.
  void save(const std::filesystem::path& file, const std::string& description) const;

 private:
  std::map<Engine, EngineOverheads> engines_;
};

}  // namespace dayzero::serve
