#pragma once
// Shared by the topology tests: the shipped catalog, shipped clusters, and clusters
// written inline (through a temporary file, so error messages carry a real file name).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "topology/cluster.h"
#include "topology/device.h"

namespace dayzero::topology::testing {

inline const std::filesystem::path kDataDir = DAYZERO_DATA_DIR;

inline const DeviceCatalog& catalog() {
  static const DeviceCatalog c = DeviceCatalog::load_builtin(kDataDir);
  return c;
}

inline Cluster shipped(const std::string& name) {
  return Cluster::load(kDataDir / "clusters" / (name + ".json"), catalog());
}

// Writes `text` to a fresh file named after the running test and returns its path.
inline std::filesystem::path write_temp(const std::string& text, const std::string& suffix = ".json") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto path = std::filesystem::temp_directory_path() /
                    ("dayzero_" + std::string(info->test_suite_name()) + "_" + info->name() + suffix);
  std::ofstream(path) << text;
  return path;
}

inline Cluster inline_cluster(const std::string& json) { return Cluster::load(write_temp(json), catalog()); }

// Expects `fn` to throw a std::exception whose message contains every one of `parts`.
template <class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

}  // namespace dayzero::topology::testing
