#pragma once
// Errors raised while reading a device catalog or a cluster description, or when a
// collective is asked for on a group the cluster cannot form. Every message names
// where it came from (the file), what was wrong (the field) and the offending value,
// so that the CLI can print it as one line. Library code throws; it never prints.

#include <stdexcept>
#include <string>

namespace dayzero::topology {

class TopologyError : public std::runtime_error {
 public:
  TopologyError(std::string file, std::string field, std::string value, const std::string& problem)
      : std::runtime_error(format(file, field, value, problem)),
        file_(std::move(file)),
        field_(std::move(field)),
        value_(std::move(value)) {}

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }

 private:
  static std::string format(const std::string& file, const std::string& field, const std::string& value,
                            const std::string& problem) {
    std::string s = file.empty() ? std::string("<cluster>") : file;
    if (!field.empty()) s += ": field '" + field + "'";
    if (!value.empty()) s += " = " + value;
    s += ": " + problem;
    return s;
  }
  std::string file_, field_, value_;
};

}  // namespace dayzero::topology
