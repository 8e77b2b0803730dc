// A scenario (search::scenario_from_json) as if read from scenarios/ (relative model
// and cluster names resolve against the shipped data), then, for an inline model
// config, the model it describes (search::load_scenario_model).
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "fuzz/fuzz_common.h"
#include "search/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::search;
  static const std::filesystem::path file = dayzero::fuzz::source_dir() / "scenarios" / "fuzz.json";
  dayzero::fuzz::expect_documented_errors([&] {
    const nlohmann::json j = dayzero::core::parse_json_text(dayzero::fuzz::text_of(data, size), file.string());
    const Scenario s = scenario_from_json(j, file);
    if (!s.inline_config.empty()) (void)load_scenario_model(s).params_total();
  });
  return 0;
}
