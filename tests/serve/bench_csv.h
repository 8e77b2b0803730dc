#pragma once
// Test helpers: measured serving runs written as a CSV file in the public format's
// columns (scenarios/fidelity/serving-measured.csv), for the readers to read back, and the
// options that serve them with the shipped figures.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "serve/bench_predict.h"
#include "simulate/efficiency.h"

namespace dayzero::serve::bench_test {

// The columns every row needs; a test appends others (",silicon_data_source").
inline constexpr const char* kHeader =
    "id,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,"
    "tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms";

// The columns of a disaggregated run: kHeader's with the source, and both pools'.
inline constexpr const char* kDisaggHeader =
    "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,"
    "moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_batch_size,"
    "prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,"
    "prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,"
    "decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n";

// Writes `body` to a file of the temporary folder named for this process and `name`.
inline std::filesystem::path write_csv(const std::string& name, const std::string& body) {
  const std::filesystem::path f =
      std::filesystem::temp_directory_path() / ("dayzero_bench_" + std::to_string(::getpid()) + "_" + name + ".csv");
  std::ofstream(f) << body;
  return f;
}

// Options that serve rows with the shipped data and calibration figures (DAYZERO_DATA_DIR).
inline BenchOptions shipped_options() {
  BenchOptions o;
  o.data_dir = DAYZERO_DATA_DIR;
  o.efficiency = simulate::EfficiencyTable::load_builtin(o.data_dir);
  return o;
}

}  // namespace dayzero::serve::bench_test
