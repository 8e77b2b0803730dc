#include "core/data_dir.h"

#include <cstdlib>

namespace dayzero::core {

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("DAYZERO_DATA_DIR"); env && *env) return env;
  return DAYZERO_DATA_DIR;
}

}  // namespace dayzero::core
