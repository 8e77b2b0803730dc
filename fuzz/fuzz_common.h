#pragma once
// Shared by the libFuzzer targets (fuzz/README in docs/FUZZING.md): the input as
// text, and the one rule every target checks. A reader given bad input throws an
// exception of the std::runtime_error family (core::InputError, a
// model::SafetensorsError, std::overflow_error) or a documented
// std::invalid_argument; any other exception (a nlohmann::json::exception leaking
// out, std::bad_alloc, std::length_error, a std::logic_error meant for broken
// invariants) is a finding and aborts, as do crashes, sanitizer reports, timeouts
// and the memory limit, which libFuzzer catches itself.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dayzero::fuzz {

inline std::string_view text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The source tree, for the shipped data (scenarios/) a reader resolves names against.
inline std::filesystem::path source_dir() { return DAYZERO_FUZZ_SOURCE_DIR; }

// Runs `body`; a documented error is the expected outcome of bad input, anything
// else aborts with its message so that libFuzzer saves the input.
template <typename Body>
void expect_documented_errors(Body&& body) {
  try {
    body();
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "undocumented exception escaped a reader: %s\n", e.what());
    std::abort();
  }
}

}  // namespace dayzero::fuzz
