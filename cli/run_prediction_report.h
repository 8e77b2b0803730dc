#pragma once
// validate's whole-run section: the run's plan re-simulated on a one-node cluster
// of the chosen device (simulate/run_prediction.h), against the measured steps.

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "cli/closed_loop.h"
#include "simulate/run_prediction.h"

namespace dayzero::cli {

struct RunPredictionResult {
  std::optional<simulate::RunPrediction> prediction;
  std::string skipped;  // why there is none (the model config cannot be found, ...)
};

// The model config comes from the Measurements' `model` path (as written, or
// relative to the Measurements file's directory) or a bundled model name.
RunPredictionResult predict_whole_run(const LoopInputs& in);
void print_run_prediction(std::ostream& out, const RunPredictionResult& r, const LoopInputs& in);
nlohmann::json run_prediction_json(const RunPredictionResult& r);

}  // namespace dayzero::cli
