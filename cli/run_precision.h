#pragma once
// What `dayzero run` says and checks about precision: the plan's weight dtypes the
// backend applies, and --check-precision (the run's logits against the full-precision
// run of the same weights and prompts, executor/precision.h).

#include <cstdint>
#include <string>
#include <vector>

#include "executor/communicator.h"
#include "executor/runner.h"
#include "model/model.h"
#include "plan/measurements.h"
#include "plan/plan.h"

namespace dayzero::cli {

// Prints which of the plan's weight dtypes `backend` converts to, and which it only records.
void print_weight_conversions(const plan::Plan& plan, const std::string& backend);

// The reference run (executor::reference_plan) on every rank, its logits compared with
// `candidate`'s where a rank holds a sequence's logits once; the comparisons joined on
// every rank. Collective: every rank calls it.
plan::PrecisionCheck check_precision(const model::Model& m, const plan::Plan& plan, executor::RunnerOptions ro,
                                     const std::string& weights, executor::Communicator& comm,
                                     const std::vector<std::vector<int64_t>>& prompts, int64_t decode_steps,
                                     const executor::RunResult& candidate);

void print_precision(const plan::PrecisionCheck& c);

}  // namespace dayzero::cli
