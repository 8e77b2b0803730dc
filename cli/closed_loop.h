#pragma once
// What `calibrate` and `validate` share: a measured run and the figures of the
// catalog device its ops are re-costed on, loaded by the library's one call
// (simulate/measured_run.h), and the run described in one line.

#include <string>

#include "simulate/measured_run.h"

namespace dayzero::cli {

struct LoopInputs {
  simulate::MeasuredRun run;
  simulate::DeviceFigures figures;
};

// Loads the Measurements (strict), the device from the shipped catalog plus
// `catalog_file` (when not empty), and the efficiency table: `calibration_file`
// when not empty, else scenarios/devices/efficiency.json. `device` empty: the host
// (cpu-host) for a run on the CPU backend, an error for any other backend. Errors
// name the file and the field (an unknown device names --device and the catalog's).
LoopInputs load_loop_inputs(const std::string& measurements_file, const std::string& device,
                            const std::string& catalog_file, const std::string& calibration_file);

// The run, in one line: model, ranks, machine.
std::string describe_run(const plan::Measurements& m);

}  // namespace dayzero::cli
