// core::parse_json_text, the one JSON parser every reader goes through: its limits
// (nesting, repeated keys, numbers beyond a double) and what a reader does next with
// a value (dump it into a message, compare and copy it).
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dayzero::fuzz::expect_documented_errors([&] {
    const nlohmann::json j = dayzero::core::parse_json_text(dayzero::fuzz::text_of(data, size), "fuzz.json");
    const nlohmann::json copy = j;
    if (copy != j) std::abort();
    (void)dayzero::core::show(j);
    (void)j.dump();
  });
  return 0;
}
