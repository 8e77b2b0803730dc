#pragma once
// Reading DayZero's JSON inputs: parsing a file or a text with errors that say
// where (line and column), and typed, validated access to the fields of one JSON
// object. Every error is a core::InputError naming the file, the field (a dotted
// path such as "nics.bw_Bps" or "ops[3].shape") and the value. The reader records
// which keys were asked for, so that reject_unknown() turns a misspelt field into
// an error instead of a silently ignored default.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dayzero::core {

// A JSON value as it would appear in the file, shortened for one-line messages.
std::string show(const nlohmann::json& v);

// Parses `text`; a syntax error names `source`, the line and the column.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);
// Reads and parses a file; a file that cannot be opened is an InputError too.
nlohmann::json read_json_file(const std::filesystem::path& file);

class Fields {
 public:
  // `obj` must be a JSON object. `path` prefixes field names in messages ("nics.").
  Fields(const nlohmann::json& obj, std::string file, std::string path = "");

  bool has(const std::string& key) const;  // present and not null
  std::string field(const std::string& key) const { return path_ + key; }

  // The raw value: required (present and not null), or null when absent.
  const nlohmann::json& req(const std::string& key);
  const nlohmann::json* opt(const std::string& key);

  // Integers (a JSON integer, or a number with no fractional part) that must be >= min
  // and <= max (a documented bound on a count or a size, so that later arithmetic on it
  // stays in range; kNoMax where none applies).
  static constexpr int64_t kNoMax = INT64_MAX;
  int64_t req_int(const std::string& key, int64_t min = 1, int64_t max = kNoMax);
  int64_t opt_int(const std::string& key, int64_t fallback, int64_t min = 1, int64_t max = kNoMax);
  std::optional<int64_t> maybe_int(const std::string& key, int64_t min = 1, int64_t max = kNoMax);
  double opt_double(const std::string& key, double fallback);
  // Finite numbers that must be > 0 (bandwidths, sizes, rates), or >= 0 (latencies).
  double req_positive(const std::string& key);
  std::optional<double> opt_positive(const std::string& key);
  double opt_non_negative(const std::string& key, double fallback);
  bool opt_bool(const std::string& key, bool fallback);
  std::string req_string(const std::string& key);  // a non-empty string
  std::string opt_string(const std::string& key, const std::string& fallback);
  std::vector<std::string> opt_strings(const std::string& key);
  std::vector<int64_t> opt_ints(const std::string& key, int64_t min = 0, int64_t max = kNoMax);
  std::vector<double> opt_doubles(const std::string& key, double min);
  const nlohmann::json* opt_object(const std::string& key);

  // Marks `key` as read without reading it (derived values a reader recomputes).
  void skip(const std::string& key) { read_.insert(key); }
  // Keys of the object that no accessor asked for, and the error for the first one.
  std::vector<std::string> unread() const;
  void reject_unknown() const;

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;  // shows the key's value
  [[noreturn]] void fail(const std::string& key, const nlohmann::json& value, const std::string& problem) const;
  [[noreturn]] void fail_value(const std::string& key, const std::string& value, const std::string& problem) const;
  const std::string& file() const { return file_; }

 private:
  int64_t to_int(const std::string& key, const nlohmann::json& v, int64_t min, int64_t max) const;
  double number(const std::string& key, const nlohmann::json& v) const;

  const nlohmann::json& obj_;
  std::string file_, path_;
  std::set<std::string> read_;
};

}  // namespace dayzero::core
