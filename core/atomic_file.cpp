#include "core/atomic_file.h"

#include <unistd.h>

#include <fstream>
#include <stdexcept>

namespace dayzero::core {

void write_file_atomically(const std::filesystem::path& file, const std::string& text, const std::string& what) {
  namespace fs = std::filesystem;
  // The process id keeps two writers (MPI ranks, parallel tests) off each other's temporary.
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const fs::path& where, const std::string& why) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error("cannot write " + what + " to '" + where.string() + "'" + (why.empty() ? "" : ": " + why));
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(tmp, "");
    out << text;
    if (!out.flush()) fail(tmp, "");
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) fail(file, ec.message());
}

}  // namespace dayzero::core
