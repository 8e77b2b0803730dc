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

// Deepest nesting of arrays and objects parse_json_text accepts. DayZero's inputs
// are a few levels deep (a safetensors header 3, a Hugging Face config about 4);
// the limit keeps every reader, and every recursive walk of a parsed value
// (dump, comparison, copy), off the stack's edge.
inline constexpr int kMaxJsonDepth = 128;

// What parse_json_text rejects, with where; readers that report in an error type
// of their own (safetensors) rebuild their message from the parts.
class JsonTextError : public InputError {
 public:
  enum class Kind {
    syntax,         // not JSON; detail() is the parser's message, cut short
    too_deep,       // nested deeper than kMaxJsonDepth
    duplicate_key,  // an object repeats a key; field() is its path, key() the key
    out_of_range,   // a number beyond a double's range; field() is its path
  };
  JsonTextError(Kind kind, std::string source, std::string field, std::string value, const std::string& problem,
                std::string detail, std::string key, std::size_t line, std::size_t column)
      : InputError(std::move(source), std::move(field), std::move(value), problem),
        kind_(kind),
        detail_(std::move(detail)),
        key_(std::move(key)),
        line_(line),
        column_(column) {}
  Kind kind() const { return kind_; }
  const std::string& detail() const { return detail_; }
  const std::string& key() const { return key_; }
  std::size_t line() const { return line_; }
  std::size_t column() const { return column_; }

 private:
  Kind kind_;
  std::string detail_, key_;
  std::size_t line_, column_;
};

// Parses `text`. A syntax error, nesting deeper than kMaxJsonDepth, a key repeated
// in one object, or a number out of a double's range is a JsonTextError naming
// `source`, the line and the column (and the key's path where there is one). The
// one parser of JSON text in DayZero: every reader goes through it.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);
// Reads (core::read_input_file) and parses a file.
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
