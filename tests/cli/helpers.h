#pragma once
// Shared by the CLI tests: run the dayzero binary (DAYZERO_BIN) with arguments
// through the shell, capturing stdout, stderr and the exit status.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace dayzero::cli::testing {

struct Result {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `args` go through /bin/sh: quote what needs it; an `ENV=value` prefix goes in `env`.
inline Result run(const std::string& args, const std::string& env = "") {
  const auto err_file =
      std::filesystem::temp_directory_path() / ("dayzero_cli_err_" + std::to_string(::getpid()) + ".txt");
  const std::string cmd =
      (env.empty() ? "" : env + " ") + std::string(DAYZERO_BIN) + " " + args + " 2>" + err_file.string();
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = slurp(err_file);
  std::filesystem::remove(err_file);
  return r;
}

}  // namespace dayzero::cli::testing
