// The first bytes of a safetensors file: the 8-byte header length and the JSON
// header (model::safetensors_header_length, model::parse_safetensors_header).
//
// Input: 8 bytes (little-endian) giving the size of a data section that is not in
// the input (modulo 2^40), then the file's bytes: its 8-byte prefix, the header and
// whatever follows. The seeds are the fixtures' headers with their data left out.
#include <algorithm>
#include <array>
#include <cstring>

#include "fuzz/fuzz_common.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dayzero::model;
  if (size < 8) return 0;
  uint64_t virtual_data = 0;
  for (int i = 7; i >= 0; --i) virtual_data = (virtual_data << 8) | data[i];
  virtual_data %= uint64_t{1} << 40;
  const uint8_t* file = data + 8;
  const size_t file_size = size - 8;
  const int64_t file_bytes = static_cast<int64_t>(file_size + virtual_data);
  dayzero::fuzz::expect_documented_errors([&] {
    if (file_bytes < 8) throw SafetensorsError("fuzz.safetensors", "", "shorter than the header length");
    std::array<unsigned char, 8> prefix{};
    std::memcpy(prefix.data(), file, std::min<size_t>(8, file_size));
    const int64_t n = safetensors_header_length(prefix, file_bytes, "fuzz.safetensors");
    if (static_cast<size_t>(n) > file_size - std::min<size_t>(8, file_size)) return;  // header past the input
    const std::string_view header(reinterpret_cast<const char*>(file) + 8, static_cast<size_t>(n));
    const SafetensorsHeader h = parse_safetensors_header(header, file_bytes - 8 - n, "fuzz.safetensors");
    int64_t bytes = 0;
    for (const TensorInfo& t : h.tensors) bytes += t.bytes();
    if (bytes != h.data_bytes) std::abort();
  });
  return 0;
}
