#pragma once
// Validating a measured run (DESIGN's closed loop, steps 3 and 4) in one place:
// `dayzero validate`, `dayzero calibrate` and the GUI's "Predicted vs measured"
// tab all load a run and the figures of the device it is costed on here, and
// validate through validate_measured_run.

#include <filesystem>
#include <optional>
#include <string>

#include "plan/measurements.h"
#include "simulate/efficiency.h"
#include "simulate/run_prediction.h"
#include "simulate/validation.h"
#include "topology/device.h"

namespace dayzero::simulate {

// A Measurements file (from `dayzero run`) and the device catalog to cost it on.
struct MeasuredRun {
  std::filesystem::path file;
  plan::Measurements measurements;
  topology::DeviceCatalog catalog;  // data_dir's shipped catalog, plus the extra file when given
  std::filesystem::path data_dir;   // shipped data: the efficiency table, bundled models
};

// Reads the Measurements (strict) and the catalogs. Throws core::InputError naming
// the file and the field.
MeasuredRun load_measured_run(const std::filesystem::path& measurements_file, const std::filesystem::path& data_dir,
                              const std::filesystem::path& extra_catalog = {});

// The device a run is costed on and the efficiency figures it is costed with.
struct DeviceFigures {
  topology::DeviceSpec device;
  EfficiencyTable table;  // the shipped table, or the calibration file
  std::filesystem::path table_file;
  Efficiency efficiency;  // the table's figures for the device
  std::string efficiency_source;
};

// `device` by catalog name (std::invalid_argument naming the catalog's devices
// when unknown); the figures of `calibration_file`, or of data_dir's shipped table
// when it is empty.
DeviceFigures device_figures(const MeasuredRun& run, const std::string& device,
                             const std::filesystem::path& calibration_file = {});

struct RunValidation {
  ValidationReport report;  // op by op, per phase and kind, end to end over the measured ops
  // The whole run re-simulated (its plan and workload on one node of the device),
  // or why not (no model config found, a plan the device's node cannot hold).
  std::optional<RunPrediction> whole_run;
  std::string whole_run_skipped;
};

// The run's model config: find_run_model's answer, else a bundled model of that
// name under data_dir/models.
std::optional<std::filesystem::path> run_model_config(const MeasuredRun& run);

// Throws std::runtime_error naming the Measurements file when an op cannot be
// costed or no op was timed.
RunValidation validate_measured_run(const MeasuredRun& run, const DeviceFigures& figures);

}  // namespace dayzero::simulate
