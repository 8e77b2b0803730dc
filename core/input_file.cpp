#include "core/input_file.h"

#include <fstream>

#include "core/error.h"

namespace dayzero::core {

namespace fs = std::filesystem;

void require_regular_file(const fs::path& file) {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);  // follows symlinks
  if (ec || !fs::exists(st)) throw InputError(file.string(), "", "", "no such file");
  if (fs::is_directory(st)) throw InputError(file.string(), "", "", "is a directory, expected a file");
  if (!fs::is_regular_file(st))
    throw InputError(file.string(), "", "", "not a regular file (a FIFO, a device or a socket), expected a file");
}

std::string read_input_file(const fs::path& file, std::uintmax_t max_bytes) {
  require_regular_file(file);
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(file, ec);
  if (ec) throw InputError(file.string(), "", "", "cannot be read (" + ec.message() + ")");
  const auto too_large = [&](std::uintmax_t bytes) {
    return InputError(file.string(), "", "",
                      "file is " + std::to_string(bytes) + " bytes, more than the " + std::to_string(max_bytes) +
                          "-byte limit for this kind of input");
  };
  if (size > max_bytes) throw too_large(size);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), "", "", "cannot open file");
  // Read at most max_bytes + 1, in case the file grew since its size was taken.
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  char extra[4096];
  while (in.read(extra, sizeof extra) || in.gcount() > 0) {
    text.append(extra, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) throw too_large(text.size());
  }
  if (in.bad()) throw InputError(file.string(), "", "", "read failed");
  return text;
}

std::string_view without_utf8_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}

}  // namespace dayzero::core
