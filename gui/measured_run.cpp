#include "gui/measured_run.h"

#include "core/data_dir.h"
#include "gui/session.h"

namespace dayzero::gui {

MeasuredRun load_measured(const std::filesystem::path& measurements_file) {
  return simulate::load_measured_run(measurements_file, core::data_dir());
}

MeasuredReport validate_run(const MeasuredRun& run, const std::string& device,
                            const std::filesystem::path& calibration_file) {
  const simulate::DeviceFigures figures = simulate::device_figures(run, device, calibration_file);
  simulate::RunValidation v = simulate::validate_measured_run(run, figures);
  return {std::move(v.report), figures.table_file.string(), figures.efficiency_source, std::move(v.whole_run),
          std::move(v.whole_run_skipped)};
}

}  // namespace dayzero::gui
