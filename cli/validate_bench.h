#pragma once
// `dayzero validate --bench FILE`: measured serving runs (the aiconfigurator CSV,
// vLLM's and SGLang's result files: serve/bench_results.h) predicted run by run,
// measured against predicted, and summarized.

#include <string>

#include "serve/bench_results.h"

namespace dayzero::cli {

// `defaults`: the command line's system, model, engine and layout for runs whose file
// lacks them. `rows`: list every run (files of up to kRunsListed runs always are).
void run_validate_bench(const std::string& file, const serve::BenchDefaults& defaults, const std::string& calibration,
                        bool json, bool rows);
inline constexpr size_t kRunsListed = 20;

}  // namespace dayzero::cli
