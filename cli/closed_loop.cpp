#include "cli/closed_loop.h"

#include <stdexcept>

#include "cli/format.h"

namespace dayzero::cli {

LoopInputs load_loop_inputs(const std::string& measurements_file, const std::string& device,
                            const std::string& catalog_file, const std::string& calibration_file) {
  LoopInputs in;
  in.measurements_file = measurements_file;
  in.measurements = plan::load_measurements(measurements_file);
  topology::DeviceCatalog catalog = topology::DeviceCatalog::load_builtin(data_dir());
  if (!catalog_file.empty()) catalog.add_file(catalog_file);
  const topology::DeviceSpec* d = catalog.find(device);
  if (!d) {
    std::string known;
    for (const auto& n : catalog.names()) known += (known.empty() ? "" : ", ") + n;
    throw std::runtime_error("option '--device' = \"" + device + "\": not in the device catalog (" + known + ")");
  }
  in.device = *d;
  in.table_file = calibration_file.empty() ? (data_dir() / "devices" / "efficiency.json").string() : calibration_file;
  in.table = simulate::EfficiencyTable::load(in.table_file);
  in.efficiency = in.table.for_device(device);
  in.efficiency_source = in.table.source_for(device);
  return in;
}

std::string describe_run(const plan::Measurements& m) {
  std::string s = m.model + ", " + std::to_string(m.world_size) + " rank" + (m.world_size == 1 ? "" : "s");
  if (!m.machine.cpu_model.empty()) s += ", on " + m.machine.cpu_model;
  if (m.machine.kernel_threads > 0) s += " (" + std::to_string(m.machine.kernel_threads) + " kernel threads per rank)";
  s += ", " + std::to_string(m.ops.size()) + " timed ops (" + std::to_string(m.timing_iterations) +
       " iterations each)";
  return s;
}

}  // namespace dayzero::cli
