#pragma once
// Test helper: measured serving runs written as a CSV file in the public format's
// columns (scenarios/fidelity/serving-measured.csv), for the readers to read back.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace dayzero::serve::bench_test {

// The columns every row needs; a test appends others (",silicon_data_source").
inline constexpr const char* kHeader =
    "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,"
    "tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms";

// Writes `body` to a file of the temporary folder named for this process and `name`.
inline std::filesystem::path write_csv(const std::string& name, const std::string& body) {
  const std::filesystem::path f =
      std::filesystem::temp_directory_path() / ("dayzero_bench_" + std::to_string(::getpid()) + "_" + name + ".csv");
  std::ofstream(f) << body;
  return f;
}

}  // namespace dayzero::serve::bench_test
