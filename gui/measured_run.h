#pragma once
// What the "Predicted vs measured" tab works on: one Measurements file (from
// `dayzero run`), the device catalog and the shipped efficiency table, and the
// report simulate::validate makes of them for a device and an optional
// calibration file. Plain C++ (no Qt), loaded through the same library calls as
// `dayzero validate`.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simulate/efficiency.h"
#include "plan/measurements.h"
#include "simulate/run_prediction.h"
#include "simulate/validation.h"
#include "topology/device.h"

namespace dayzero::gui {

// The device a CPU run is validated on unless the user picks another.
inline constexpr const char* kDefaultMeasuredDevice = "cpu-host";

struct MeasuredRun {
  // Throws what load_measurements and the catalog loaders throw (file, field, value).
  explicit MeasuredRun(const std::filesystem::path& measurements_file);
  std::filesystem::path file;
  plan::Measurements measurements;
  topology::DeviceCatalog catalog;
  simulate::EfficiencyTable shipped;  // scenarios/devices/efficiency.json
};

struct MeasuredReport {
  simulate::ValidationReport report;
  std::string efficiency_file;    // the shipped table or the calibration file
  std::string efficiency_source;  // that table's `source` for the device
  // The whole run re-simulated (its plan and workload on one node of the device),
  // as `dayzero validate` prints it; or why not (no model config found).
  std::optional<simulate::RunPrediction> whole_run;
  std::string whole_run_skipped;
};

// The report on `device` (a catalog name) with the shipped figures, or those of
// `calibration_file` when not empty. Throws std::runtime_error naming the device
// or the file and field.
MeasuredReport validate_run(const MeasuredRun& run, const std::string& device,
                            const std::filesystem::path& calibration_file);

}  // namespace dayzero::gui
