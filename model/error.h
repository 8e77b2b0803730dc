#pragma once
// Errors raised while reading a model description. Every error names where it
// came from (the file), what was wrong (the field) and the offending value, so
// that the CLI can print it as one line.

#include <stdexcept>
#include <string>

namespace dayzero::model {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string field, std::string value, const std::string& problem)
      : std::runtime_error(format(file, field, value, problem)),
        file_(std::move(file)),
        field_(std::move(field)),
        value_(std::move(value)) {}

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }

 private:
  static std::string format(const std::string& file, const std::string& field,
                            const std::string& value, const std::string& problem) {
    std::string s = file.empty() ? std::string("<config>") : file;
    if (!field.empty()) s += ": field '" + field + "'";
    if (!value.empty()) s += " = " + value;
    s += ": " + problem;
    return s;
  }
  std::string file_, field_, value_;
};

}  // namespace dayzero::model
