// A device catalog (topology::DeviceCatalog::add_json, as `--catalog FILE` reads
// it), added over the shipped one, then each device's peak for every compute dtype.
#include <nlohmann/json.hpp>

#include "core/json_fields.h"
#include "fuzz/fuzz_common.h"
#include "topology/device.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::topology;
  static const DeviceCatalog builtin = DeviceCatalog::load_builtin(dayzero::fuzz::source_dir() / "scenarios");
  dayzero::fuzz::expect_documented_errors([&] {
    const nlohmann::json j = dayzero::core::parse_json_text(dayzero::fuzz::text_of(data, size), "catalog.json");
    DeviceCatalog catalog = builtin;
    catalog.add_json(j, "catalog.json");
    for (const DeviceSpec& d : catalog.devices())
      for (const ComputeDtype t : kAllComputeDtypes) (void)d.peak_flops_for(t);
  });
  return 0;
}
