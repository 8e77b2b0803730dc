#include "cli/test_hooks.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace dayzero::cli {

namespace {
// The variable's value as a non-negative integer, or `fallback` when unset.
int64_t env_count(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  const std::string_view text(v);
  int64_t out = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size() || out < 0)
    throw std::runtime_error(std::string(name) + "='" + std::string(text) +
                             "': must be a non-negative integer (a test-only hook)");
  return out;
}
}  // namespace

std::function<void(int64_t)> test_hang_hook(int rank) {
  const int64_t hang_rank = env_count("DAYZERO_TEST_HANG_RANK", -1);
  const int64_t hang_at = env_count("DAYZERO_TEST_HANG_AT", 1);
  if (hang_rank != rank) return {};
  return [rank, hang_at](int64_t step) {
    if (step != hang_at) return;
    std::cerr << ("dayzero: rank " + std::to_string(rank) + ": test hook: hanging before step " + std::to_string(step) +
                  " (pid " + std::to_string(::getpid()) + ")\n")
              << std::flush;
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  };
}

}  // namespace dayzero::cli
