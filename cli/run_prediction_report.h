#pragma once
// validate's whole-run section: the run's plan re-simulated on a one-node cluster
// of the chosen device (simulate/run_prediction.h), against the measured steps.

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "cli/closed_loop.h"
#include "simulate/measured_run.h"

namespace dayzero::cli {

// The whole-run part of a validation (simulate::validate_measured_run): printed,
// or as JSON (`device_memory`: a device run's ranks, their weights and kernels'
// buffers on the device beside the ledger's, as the text's "on the device" lines).
void print_run_prediction(std::ostream& out, const simulate::RunValidation& v, const LoopInputs& in);
nlohmann::json run_prediction_json(const simulate::RunValidation& v, const LoopInputs& in);

}  // namespace dayzero::cli
