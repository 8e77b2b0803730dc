#include "cli/closed_loop.h"

#include <stdexcept>

#include "cli/format.h"
#include "core/data_dir.h"

namespace dayzero::cli {

LoopInputs load_loop_inputs(const std::string& measurements_file, const std::string& device,
                            const std::string& catalog_file, const std::string& calibration_file) {
  LoopInputs in{simulate::load_measured_run(measurements_file, core::data_dir(), catalog_file), {}};
  // The host CPU is the default only for a run on the CPU backend: a GPU run's ops
  // re-costed on the host's figures would be compared with the wrong device.
  std::string on = device;
  if (on.empty() && in.run.measurements.backend != "cpu")
    throw std::runtime_error("option '--device': " + measurements_file + " ran on backend '" +
                             in.run.measurements.backend +
                             "': name the catalog device it ran on (--device H200-SXM, for instance)");
  if (on.empty()) on = "cpu-host";
  try {
    in.figures = simulate::device_figures(in.run, on, calibration_file);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("option '--device': ") + e.what());
  }
  return in;
}

std::string describe_run(const plan::Measurements& m) {
  std::string s = m.model + ", " + std::to_string(m.world_size) + " rank" + (m.world_size == 1 ? "" : "s");
  if (!m.machine.cpu_model.empty()) s += ", on " + m.machine.cpu_model;
  if (m.machine.kernel_threads > 0) s += " (" + std::to_string(m.machine.kernel_threads) + " kernel threads per rank)";
  s += ", " + std::to_string(m.ops.size()) + " timed ops (" + std::to_string(m.timing_iterations) + " iterations each)";
  if (m.fp8_block_gemm == plan::Fp8BlockGemm::w8a8)
    s += "; FP8 block GEMMs as W8A8 (priced at the FP8 peak where the path takes their sizes)";
  if (!m.fp8_block_gemm_note.empty()) s += "; " + m.fp8_block_gemm_note;
  return s;
}

}  // namespace dayzero::cli
