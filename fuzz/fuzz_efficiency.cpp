// An efficiency table (simulate::EfficiencyTable::from_json): scenarios/devices/
// efficiency.json and the calibration files `calibrate` writes in its format. Then
// each device's figures and a round trip through to_json.
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "fuzz/fuzz_common.h"
#include "simulate/efficiency.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dayzero::simulate::EfficiencyTable;
  dayzero::fuzz::expect_documented_errors([&] {
    const nlohmann::json j = dayzero::core::parse_json_text(dayzero::fuzz::text_of(data, size), "efficiency.json");
    const EfficiencyTable t = EfficiencyTable::from_json(j, "efficiency.json");
    for (const std::string& name : t.device_names()) (void)t.for_device(name);
    const EfficiencyTable again = EfficiencyTable::from_json(t.to_json("round trip"), "round trip");
    if (again.device_names() != t.device_names()) std::abort();
  });
  return 0;
}
