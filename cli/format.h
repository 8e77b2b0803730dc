#pragma once
// Number formatting for terminal tables. GB = 1e9 bytes, GiB = 2^30 bytes;
// every figure printed says which.

#include <cstdint>
#include <filesystem>
#include <string>

namespace dayzero::cli {

std::string with_commas(int64_t n);         // 671026419712 -> "671,026,419,712"
std::string fixed(double x, int decimals);  // printf("%.*f")
std::string billions(int64_t n);            // "671.03 B"
std::string gb_and_gib(int64_t bytes);      // "1,342.05 GB (1,249.88 GiB)"
std::string pad_right(const std::string& s, size_t width);
std::string pad_left(const std::string& s, size_t width);
std::string today_utc();  // "2026-11-30", for provenance lines

// A model argument: an existing path, else the name of a bundled model folder.
std::filesystem::path resolve_model_path(const std::string& arg);
// A cluster argument: an existing path, else a bundled cluster name (scenarios/clusters/NAME.json).
std::filesystem::path resolve_cluster_path(const std::string& arg);

}  // namespace dayzero::cli
