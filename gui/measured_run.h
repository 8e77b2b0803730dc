#pragma once
// What the "Predicted vs measured" tab works on: one Measurements file (from
// `dayzero run`) loaded with its device catalog, and the report the library's one
// validation call (simulate/measured_run.h, as `dayzero validate` makes it) gives
// for a device and an optional calibration file. Plain C++ (no Qt).

#include <filesystem>
#include <optional>
#include <string>

#include "simulate/measured_run.h"

namespace dayzero::gui {

// The device a CPU run is validated on unless the user picks another.
inline constexpr const char* kDefaultMeasuredDevice = "cpu-host";

using simulate::MeasuredRun;
// The run and the shipped catalog; throws what the loaders throw (file, field, value).
MeasuredRun load_measured(const std::filesystem::path& measurements_file);

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
// `calibration_file` when not empty. Throws naming the device or the file and field.
MeasuredReport validate_run(const MeasuredRun& run, const std::string& device,
                            const std::filesystem::path& calibration_file);

}  // namespace dayzero::gui
