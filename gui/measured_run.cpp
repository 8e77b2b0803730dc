#include "gui/measured_run.h"

#include <stdexcept>

#include "gui/session.h"

namespace dayzero::gui {

MeasuredRun::MeasuredRun(const std::filesystem::path& measurements_file)
    : file(measurements_file),
      measurements(plan::load_measurements(measurements_file)),
      catalog(topology::DeviceCatalog::load_builtin(data_dir())),
      shipped(simulate::EfficiencyTable::load_builtin(data_dir())) {}

MeasuredReport validate_run(const MeasuredRun& run, const std::string& device,
                            const std::filesystem::path& calibration_file) {
  const topology::DeviceSpec* d = run.catalog.find(device);
  if (!d) throw std::runtime_error("device \"" + device + "\" is not in the device catalog");
  MeasuredReport out;
  simulate::EfficiencyTable table = run.shipped;
  out.efficiency_file = (data_dir() / "devices" / "efficiency.json").string();
  if (!calibration_file.empty()) {
    table = simulate::EfficiencyTable::load(calibration_file);
    out.efficiency_file = calibration_file.string();
  }
  out.efficiency_source = table.source_for(device);
  try {
    out.report = simulate::validate(run.measurements, *d, table.for_device(device));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(run.file.string() + ": " + e.what());
  }
  if (const auto config = simulate::find_run_model(run.measurements, run.file)) {
    try {
      const model::Model m = model::load_model(*config);
      out.whole_run = simulate::predict_run(run.measurements, m,
                                            simulate::one_node_cluster(*d, run.measurements.world_size),
                                            table.for_device(device));
    } catch (const std::exception& e) {
      out.whole_run_skipped = e.what();
    }
  } else {
    out.whole_run_skipped = "the run's model config '" + run.measurements.model + "' was not found";
  }
  return out;
}

}  // namespace dayzero::gui
