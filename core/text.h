#pragma once
// Number formatting for terminal tables and reports. GB = 1e9 bytes, GiB = 2^30
// bytes; every figure printed says which.

#include <cstdint>
#include <string>

namespace dayzero::core {

std::string with_commas(int64_t n);         // 671026419712 -> "671,026,419,712"
std::string fixed(double x, int decimals);  // printf("%.*f")
// printf(format, x) for a format of one double conversion ("%.1f ms"), from a literal.
std::string format_double(const char* format, double x);
std::string billions(int64_t n);        // "671.03 B"
std::string gb_and_gib(int64_t bytes);  // "1,342.05 GB (1,249.88 GiB)"
std::string pad_right(const std::string& s, size_t width);
std::string pad_left(const std::string& s, size_t width);
std::string today_utc();  // "2026-11-30", for provenance lines

}  // namespace dayzero::core
