#pragma once
// Shared by the core/ tests.
#include <functional>
#include <string>

#include "core/error.h"

namespace dayzero::core::testing {

// The message of the InputError `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace dayzero::core::testing
