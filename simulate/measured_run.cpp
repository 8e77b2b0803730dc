#include "simulate/measured_run.h"

#include <stdexcept>

#include "model/model.h"

namespace dayzero::simulate {

namespace fs = std::filesystem;

MeasuredRun load_measured_run(const fs::path& measurements_file, const fs::path& data_dir,
                              const fs::path& extra_catalog) {
  MeasuredRun run;
  run.file = measurements_file;
  run.measurements = plan::load_measurements(measurements_file);
  run.catalog = topology::DeviceCatalog::load_builtin(data_dir);
  if (!extra_catalog.empty()) run.catalog.add_file(extra_catalog);
  run.data_dir = data_dir;
  return run;
}

DeviceFigures device_figures(const MeasuredRun& run, const std::string& device, const fs::path& calibration_file) {
  const topology::DeviceSpec* d = run.catalog.find(device);
  if (!d) {
    std::string known;
    for (const auto& n : run.catalog.names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("device \"" + device + "\" is not in the device catalog (" + known + ")");
  }
  DeviceFigures f;
  f.device = *d;
  f.table_file = calibration_file.empty() ? run.data_dir / "devices" / "efficiency.json" : calibration_file;
  f.table = EfficiencyTable::load(f.table_file);
  f.efficiency = f.table.for_device(device);
  f.efficiency_source = f.table.source_for(device);
  return f;
}

std::optional<fs::path> run_model_config(const MeasuredRun& run) {
  if (auto found = find_run_model(run.measurements, run.file)) return found;
  const std::string& name = run.measurements.model;
  std::error_code ec;
  if (!name.empty() && name.find('/') == std::string::npos && fs::exists(run.data_dir / "models" / name, ec))
    return run.data_dir / "models" / name;
  return std::nullopt;
}

RunValidation validate_measured_run(const MeasuredRun& run, const DeviceFigures& figures) {
  RunValidation out;
  try {
    out.report = validate(run.measurements, figures.device, figures.efficiency);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(run.file.string() + ": " + e.what());
  }
  if (out.report.ops.empty())
    throw std::runtime_error(run.file.string() + ": field 'ops': no op with calls > 0 to validate");
  const auto config = run_model_config(run);
  if (!config) {
    out.whole_run_skipped = "the run's model config '" + run.measurements.model + "' was not found";
    return out;
  }
  try {
    const model::Model m = model::load_model(*config);
    out.whole_run = predict_run(run.measurements, m, one_node_cluster(figures.device, run.measurements.world_size),
                                figures.efficiency);
  } catch (const std::exception& e) {
    out.whole_run_skipped = e.what();
  }
  return out;
}

}  // namespace dayzero::simulate
