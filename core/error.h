#pragma once
// The one error type for bad input, in every library: a file DayZero was given
// (a config.json, a cluster, a plan, a scenario, a Measurements file) whose
// content is wrong. It names where (the file), what (the field, as a dotted path)
// and the offending value, so that `main` prints it as one line. Library code
// throws it; it never prints or exits (CONTRIBUTING.md, "Errors").

#include <stdexcept>
#include <string>

namespace dayzero::core {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, std::string value, const std::string& problem)
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
    std::string s = file.empty() ? std::string("<input>") : file;
    if (!field.empty()) s += ": field '" + field + "'";
    if (!value.empty()) s += " = " + value;
    s += ": " + problem;
    return s;
  }
  std::string file_, field_, value_;
};

}  // namespace dayzero::core
