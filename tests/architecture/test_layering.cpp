// The layout is the architecture (docs/ARCHITECTURE.md): one library per top-level
// folder, dependencies only downward. This test reads the tree itself — each
// library's link line in its CMakeLists.txt and every #include of its sources — and
// fails on an arrow that points up or sideways, on a core library that includes Qt,
// CUDA, NCCL or MPI headers, and on a file(GLOB).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

// Each library and the libraries it may use (directly or not), bottom first.
const std::map<std::string, std::set<std::string>> kAllowed = {
    {"core", {}},
    {"model", {"core"}},
    {"topology", {"core"}},
    {"plan", {"model", "core"}},
    {"simulate", {"plan", "model", "topology", "core"}},
    {"serve", {"simulate", "plan", "model", "topology", "core"}},
    {"search", {"simulate", "plan", "model", "topology", "core"}},
    {"deploy", {"serve", "simulate", "plan", "model", "topology", "core"}},
    {"report", {"search", "deploy", "serve", "simulate", "plan", "model", "topology", "core"}},
    {"executor", {"plan", "model", "core"}},
    {"cuda", {"executor", "plan", "model", "core"}},
    {"gui", {"report", "search", "deploy", "serve", "simulate", "plan", "model", "topology", "core"}},
    {"cli",
     {"report", "search", "deploy", "serve", "simulate", "cuda", "executor", "plan", "model", "topology", "core"}},
};
// Libraries that must build and run without Qt, CUDA, NCCL or MPI.
const std::set<std::string> kPortable = {"core",  "model",  "topology", "plan",  "simulate",
                                         "serve", "search", "deploy",   "report"};

const fs::path kRoot = DAYZERO_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> sources(const std::string& lib) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kRoot / lib)) {
    const auto ext = e.path().extension();
    if (ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh") out.push_back(e.path());
  }
  return out;
}

TEST(Layering, IncludesPointOnlyDownward) {
  const std::regex include(R"re(#\s*include\s*"([a-z_]+)/)re");
  for (const auto& [lib, allowed] : kAllowed) {
    ASSERT_TRUE(fs::is_directory(kRoot / lib)) << lib;
    for (const auto& file : sources(lib)) {
      const std::string text = read(file);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), include); it != std::sregex_iterator(); ++it) {
        const std::string used = (*it)[1];
        EXPECT_TRUE(used == lib || allowed.count(used))
            << file.lexically_relative(kRoot).string() << " includes " << used << "/: " << lib << " may use only "
            << ::testing::PrintToString(allowed);
      }
    }
  }
}

TEST(Layering, LinkLinesPointOnlyDownward) {
  const std::regex link(R"re(target_link_libraries\s*\(\s*dayzero_([a-z_]+)([^)]*)\))re");
  const std::regex dep(R"re(dayzero_([a-z]+)\b)re");
  for (const auto& [lib, allowed] : kAllowed) {
    const std::string cmake = read(kRoot / lib / "CMakeLists.txt");
    for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string deps = (*it)[2];
      for (auto d = std::sregex_iterator(deps.begin(), deps.end(), dep); d != std::sregex_iterator(); ++d) {
        const std::string used = (*d)[1];
        if (used == "warnings") continue;  // the compiler-flags interface target
        EXPECT_TRUE(used == lib || allowed.count(used)) << lib << "/CMakeLists.txt links dayzero_" << used;
      }
    }
  }
  // The CUDA backend's headers name no CUDA type: its users compile without the toolkit's headers.
  for (const auto& file : sources("cuda")) {
    if (file.extension() == ".h") {
      EXPECT_EQ(read(file).find("#include <cuda"), std::string::npos) << file.lexically_relative(kRoot).string();
    }
  }
  // The executor runs a Plan without the simulator.
  EXPECT_EQ(read(kRoot / "executor" / "CMakeLists.txt").find("dayzero_simulate"), std::string::npos);
}

TEST(Layering, PortableLibrariesIncludeNoQtCudaNcclOrMpi) {
  const std::regex device(R"re(#\s*include\s*<(Q[A-Za-z]+|cuda[^>]*|cublas[^>]*|nccl[^>]*|mpi[^>]*)>)re");
  for (const auto& lib : kPortable)
    for (const auto& file : sources(lib)) {
      const std::string text = read(file);
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, device)) << file.lexically_relative(kRoot).string() << ": " << m.str();
    }
}

TEST(Layering, SourcesAreListedNotGlobbed) {
  for (const auto& e : fs::recursive_directory_iterator(kRoot)) {
    const auto rel = e.path().lexically_relative(kRoot).string();
    if (rel.rfind("build", 0) == 0 || rel.rfind(".git", 0) == 0) continue;
    if (e.path().filename() != "CMakeLists.txt" && e.path().extension() != ".cmake") continue;
    EXPECT_FALSE(std::regex_search(read(e.path()), std::regex(R"(file\s*\(\s*GLOB)"))) << rel;
  }
}

}  // namespace
