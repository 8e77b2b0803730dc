#pragma once
// `dayzero calibrate --bench FILE --out DIR`: the devices' efficiency figures and the
// engines' host overheads fitted to measured serving runs (serve/serving_fit.h), with
// the residual band of each engine, written as DIR/efficiency.json and
// DIR/engine-overheads.json (serve/calibration_files.h) for `validate --bench
// --calibration DIR` and `serve --calibration DIR`. Run on
// scenarios/fidelity/serving-measured.csv with --out scenarios/devices, it makes the
// shipped defaults.

#include <string>

#include "serve/bench_results.h"

namespace dayzero::cli {

void run_calibrate_bench(const std::string& file, const serve::BenchDefaults& defaults, const std::string& out_dir);

}  // namespace dayzero::cli
