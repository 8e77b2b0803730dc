#pragma once
// Internal to topology/: strict, typed access to the fields of one JSON object, with
// errors that name the file, the field (as a dotted path) and the value. `finish()`
// rejects every key that no accessor asked for, so a misspelt field is an error
// rather than a silently ignored default.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "topology/error.h"

namespace dayzero::topology::detail {

// A JSON value as it would appear in the file, shortened for messages.
std::string show(const nlohmann::json& v);

// Parses `text`; a syntax error becomes a TopologyError naming `source` and the byte offset.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);
// Reads and parses a file; a missing or unreadable file is a TopologyError too.
nlohmann::json parse_json_file(const std::filesystem::path& file);

class ObjectReader {
 public:
  // `path` is the dotted prefix of this object's fields in messages ("nics.").
  ObjectReader(const nlohmann::json& obj, std::string file, std::string path);

  bool has(const std::string& key) const;  // present and not null
  std::string field(const std::string& key) const { return path_ + key; }

  const nlohmann::json& req(const std::string& key);
  const nlohmann::json* opt(const std::string& key);

  std::string req_string(const std::string& key);
  std::string opt_string(const std::string& key, const std::string& fallback);
  // Integers (a JSON number with no fractional part) that must be >= min.
  int64_t req_int(const std::string& key, int64_t min);
  int64_t opt_int(const std::string& key, int64_t fallback, int64_t min);
  // Finite numbers that must be > 0 (bandwidths, sizes, rates).
  double req_positive(const std::string& key);
  std::optional<double> opt_positive(const std::string& key);
  // Finite numbers that must be >= 0 (latencies).
  double opt_non_negative(const std::string& key, double fallback);

  // Throws on the first key of the object that no accessor read.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const nlohmann::json& value, const std::string& problem) const;
  const std::string& file() const { return file_; }

 private:
  double number(const std::string& key, const nlohmann::json& v) const;

  const nlohmann::json& obj_;
  std::string file_, path_;
  std::set<std::string> read_;
};

}  // namespace dayzero::topology::detail
