#pragma once
// Writing a result file without ever leaving a half-written one: the text goes to
// a temporary file beside it (same directory, so the rename stays on one file
// system), is flushed, then renamed over the target. A failure removes the
// temporary and leaves any earlier file as it was.

#include <filesystem>
#include <string>

namespace dayzero::core {

// Throws std::runtime_error "cannot write <what> to '<file>': <why>".
void write_file_atomically(const std::filesystem::path& file, const std::string& text, const std::string& what);

}  // namespace dayzero::core
