#pragma once
// Reading an input file whole, safely: only a regular file (symlinks followed) is
// read, and at most a limit of bytes, so that a FIFO, a device such as /dev/zero, a
// directory or a multi-gigabyte file given where a config or a cluster is expected
// is an InputError naming the file, never a hang or an unbounded read.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace dayzero::core {

// Every text input DayZero reads whole (JSON configs, clusters, plans, scenarios,
// benchmark CSVs and result files, safetensors index files) is far below this: the
// largest shipped one, the measured-runs CSV, is 1.5 MB; a 1-trillion-parameter
// model's shard index is about 10 MB.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{64} << 20;  // 64 MiB

// The file's bytes. Throws InputError when it does not exist, is not a regular file
// (a directory, a FIFO, a device, a socket), is larger than `max_bytes`, or cannot be
// read.
std::string read_input_file(const std::filesystem::path& file, std::uintmax_t max_bytes = kMaxInputFileBytes);

// `text` without a leading UTF-8 byte order mark (EF BB BF), which spreadsheet programs
// write at the start of a CSV they save: the header's first column name would carry it.
std::string_view without_utf8_bom(std::string_view text);

// The same checks without reading: throws InputError unless `file` is a regular file
// (symlinks followed). For readers that stream a file themselves.
void require_regular_file(const std::filesystem::path& file);

}  // namespace dayzero::core
