// Number and date text for tables and reports (text.h).
#include "core/text.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace dayzero::core {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string format_double(const char* format, double x) {
  char buf[128];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  std::snprintf(buf, sizeof buf, format, x);
#pragma GCC diagnostic pop
  return buf;
}

namespace {
std::string fixed_commas(double x, int decimals) {
  const auto whole = static_cast<int64_t>(x);
  std::string frac = fixed(x - static_cast<double>(whole), decimals);  // "0.xx"
  if (frac[0] == '1') return fixed_commas(static_cast<double>(whole + 1), decimals);
  return with_commas(whole) + frac.substr(1);
}
}  // namespace

std::string billions(int64_t n) { return fixed(static_cast<double>(n) / 1e9, 2) + " B"; }

std::string gb_and_gib(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  return fixed_commas(b / 1e9, 2) + " GB (" + fixed_commas(b / (1024.0 * 1024.0 * 1024.0), 2) + " GiB)";
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string today_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

}  // namespace dayzero::core
