#pragma once
// One run of a vLLM or SGLang result file as a BenchRow: the field mapping of
// serve/bench_results.h, apart from how a file is split into runs.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/bench_results.h"

namespace dayzero::serve {

struct RunSource {
  std::string file;  // for messages
  std::string stem;  // the file's name without its extension: ids are "<stem>:<run>"
  int64_t run = 1;   // 1-based, in the file
  int64_t line = 1;  // where the run's object starts; messages name the run by it
  BenchTool tool = BenchTool::vllm;
};

// The run's object as a BenchRow (mode "agg"). A missing or malformed field, a
// negative or non-numeric latency, an engine DayZero does not model, or a layout
// that neither the run nor `d` gives is a core::InputError naming the file, the
// run's line and the field (with the flag that would give it).
BenchRow bench_row_of(const nlohmann::json& run, const RunSource& src, const BenchDefaults& d);

}  // namespace dayzero::serve
