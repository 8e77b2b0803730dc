// model::parse_config (a Hugging Face config.json, every family), then what `inspect`
// does next: the model built, its parameter counts, weight bytes and KV cache sizes.
#include "fuzz/fuzz_common.h"
#include "model/config.h"
#include "model/dtype.h"
#include "model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::model;
  dayzero::fuzz::expect_documented_errors([&] {
    ModelConfig config = parse_config(dayzero::fuzz::text_of(data, size), "config.json");
    const Model m = build_model(std::move(config));
    (void)m.params_total();
    (void)m.params_active();
    (void)m.params_mtp();
    (void)m.params_by_part();
    for (const WeightPrecision p : kAllPrecisions) (void)m.weights_bytes(p);
    (void)m.kv_bytes_per_token(2);
    (void)m.kv_cache_bytes(4096, 1);
  });
  return 0;
}
