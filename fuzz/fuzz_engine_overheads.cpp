// The serving engines' host overheads (serve::EngineOverheadTable::from_json):
// scenarios/devices/engine-overheads.json and `calibrate --bench` output, then each
// engine's profile with them and a round trip through to_json.
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "fuzz/fuzz_common.h"
#include "serve/engine.h"
#include "serve/engine_overheads.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::serve;
  dayzero::fuzz::expect_documented_errors([&] {
    const nlohmann::json j = dayzero::core::parse_json_text(dayzero::fuzz::text_of(data, size), "overheads.json");
    const EngineOverheadTable t = EngineOverheadTable::from_json(j, "overheads.json");
    for (const Engine e : {Engine::vllm, Engine::sglang, Engine::trtllm}) (void)t.apply(default_profile(e));
    (void)EngineOverheadTable::from_json(t.to_json("round trip"), "round trip");
  });
  return 0;
}
