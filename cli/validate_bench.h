#pragma once
// `dayzero validate --bench FILE`: measured serving runs (the aiconfigurator CSV
// format) predicted row by row, measured against predicted, and summarized.

#include <string>

namespace dayzero::cli {

void run_validate_bench(const std::string& file, const std::string& calibration, bool json, bool rows);

}  // namespace dayzero::cli
