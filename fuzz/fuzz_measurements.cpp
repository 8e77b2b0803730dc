// A Measurements file (plan::measurements_from_json: what `run` writes and
// `validate` and `calibrate` read), its summaries, and a round trip through
// measurements_to_json.
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "fuzz/fuzz_common.h"
#include "plan/measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero;
  fuzz::expect_documented_errors([&] {
    const nlohmann::json j = core::parse_json_text(fuzz::text_of(data, size), "measurements.json");
    const plan::Measurements m = plan::measurements_from_json(j, "measurements.json");
    (void)m.decode_step_mean_s();
    (void)m.peak_bytes();
    (void)plan::measurements_from_json(plan::measurements_to_json(m), "round trip");
  });
  return 0;
}
