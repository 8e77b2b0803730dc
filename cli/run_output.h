#pragma once
// `dayzero run`'s printout of a run's Measurements: the generated tokens, the step times,
// each rank's memory (and the device's), the FP8 GEMM path, and rank 0's slowest ops and
// collectives.

#include <ostream>

#include "plan/measurements.h"

namespace dayzero::cli {

void print_run(std::ostream& out, const plan::Measurements& ms);

}  // namespace dayzero::cli
