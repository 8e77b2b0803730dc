#pragma once
// What `calibrate` and `validate` share: a Measurements file, the catalog device
// its ops are re-costed on, and the efficiency figures to cost them with.

#include <string>

#include "simulate/efficiency.h"
#include "plan/measurements.h"
#include "topology/device.h"

namespace dayzero::cli {

struct LoopInputs {
  std::string measurements_file;
  plan::Measurements measurements;
  topology::DeviceSpec device;
  simulate::EfficiencyTable table;  // the shipped table, or the --calibration file
  std::string table_file;
  simulate::Efficiency efficiency;  // the table's figures for the device
  std::string efficiency_source;
};

// Loads the Measurements (strict), the device from the shipped catalog plus
// `catalog_file` (when not empty), and the efficiency table: `calibration_file`
// when not empty, else scenarios/devices/efficiency.json. Errors name the file
// and the field (an unknown device names --device and the catalog's devices).
LoopInputs load_loop_inputs(const std::string& measurements_file, const std::string& device,
                            const std::string& catalog_file, const std::string& calibration_file);

// The run, in one line: model, ranks, machine.
std::string describe_run(const plan::Measurements& m);

}  // namespace dayzero::cli
