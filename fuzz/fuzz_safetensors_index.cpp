// model.safetensors.index.json (model::parse_shard_index): the weight map, shard
// names that must stay inside the checkpoint's directory, metadata.total_size.
#include "fuzz/fuzz_common.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dayzero::fuzz::expect_documented_errors([&] {
    const dayzero::model::ShardIndex idx =
        dayzero::model::parse_shard_index(dayzero::fuzz::text_of(data, size), "model.safetensors.index.json");
    for (const auto& [tensor, shard] : idx.weight_map)
      if (shard.empty() || shard.find('\0') != std::string::npos) std::abort();
  });
  return 0;
}
