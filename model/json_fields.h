#pragma once
// Typed, validated access (model/ and the libraries above it use it for their
// JSON inputs) to the fields of one JSON object,
// with errors that name the file, the field and the value. Records which keys
// were read so a caller can list the ones it ignored.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace dayzero::model::detail {

class Fields {
 public:
  // `path` prefixes field names in messages (e.g. "text_config.").
  Fields(const nlohmann::json& obj, std::string file, std::string path = "");

  bool has(const std::string& key) const;  // present and not null

  // Integers: required ones must be present; all must be >= min.
  int64_t req_int(const std::string& key, int64_t min = 1);
  int64_t opt_int(const std::string& key, int64_t fallback, int64_t min = 1);
  std::optional<int64_t> maybe_int(const std::string& key, int64_t min = 1);
  double opt_double(const std::string& key, double fallback);
  bool opt_bool(const std::string& key, bool fallback);
  std::string opt_string(const std::string& key, const std::string& fallback);
  std::vector<std::string> opt_strings(const std::string& key);
  std::vector<int64_t> opt_ints(const std::string& key, int64_t min = 0);
  std::vector<double> opt_doubles(const std::string& key, double min);
  const nlohmann::json* opt_object(const std::string& key);

  // Marks `key` as read without reading it (derived values a reader recomputes).
  void skip(const std::string& key) { read_.insert(key); }

  // Keys of the object that no accessor asked for.
  std::vector<std::string> unread() const;

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  [[noreturn]] void fail_value(const std::string& key, const std::string& value,
                               const std::string& problem) const;
  const std::string& file() const { return file_; }

 private:
  const nlohmann::json* get(const std::string& key);
  int64_t to_int(const std::string& key, const nlohmann::json& v, int64_t min) const;

  const nlohmann::json& obj_;
  std::string file_, path_;
  std::set<std::string> read_;
};

// A JSON value as it would appear in the file, shortened for messages.
std::string show(const nlohmann::json& v);

}  // namespace dayzero::model::detail
