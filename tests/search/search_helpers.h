#pragma once
// Shared by the search's tests: scenarios loaded as `dayzero plan` loads them, and
// scenario files written for a test (model and cluster paths resolved against the
// bundled data folder).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "search/session.h"

namespace dayzero::search::testing {

// The searches below cost plans with the built-in default efficiencies ({}), not
// the shipped table: what they check does not depend on those figures.
using Loaded = Session;
inline Loaded load(const std::filesystem::path& file) { return load_session(file, DAYZERO_DATA_DIR); }

inline Loaded bundled(const std::string& name) { return load(std::string(DAYZERO_DATA_DIR) + "/" + name + ".json"); }

inline std::filesystem::path write_scenario(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::path(DAYZERO_DATA_DIR);  // so relative model/cluster paths resolve
  const auto file =
      std::filesystem::temp_directory_path() / ("dayzero_scn_" + std::to_string(::getpid()) + "_" + name + ".json");
  std::string t = text;
  for (const char* key : {"models/", "clusters/"}) {
    for (size_t pos = t.find(std::string("\"") + key); pos != std::string::npos;
         pos = t.find(std::string("\"") + key, pos + 1))
      t.insert(pos + 1, dir.string() + "/");
  }
  std::ofstream(file) << t;
  return file;
}

}  // namespace dayzero::search::testing
