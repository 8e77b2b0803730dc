#pragma once
// The one error type for bad input, in every library: a file DayZero was given
// (a config.json, a cluster, a plan, a scenario, a Measurements file) whose
// content is wrong. It names where (the file), what (the field, as a dotted path)
// and the offending value, so that `main` prints it as one line. Library code
// throws it; it never prints or exits (CONTRIBUTING.md, "Errors").
//
// The parts come from the input, so the message shows them safely: control
// characters become visible escapes (\n, \r, \t, \0, \x1b), bytes that are not
// UTF-8 become \xNN, and the field and the value are cut to kMaxShownChars. The
// accessors return the parts as given.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dayzero::core {

// Longest field or value an error message shows; longer ones end in "...".
inline constexpr std::size_t kMaxShownChars = 80;
// Longest file name or problem an error message shows (a safety net: these are
// written by DayZero, but may embed input).
inline constexpr std::size_t kMaxProblemChars = 1000;

// `s` made printable on one line: control characters escaped (\n \r \t \0, others
// \xNN, C1 controls \u0080-\u009f), bytes that are not valid UTF-8 as \xNN, valid
// UTF-8 kept; longer than `max_chars` characters (an escape counts as its length)
// is cut to end in "...".
std::string printable(std::string_view s, std::size_t max_chars);

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string field, std::string value, const std::string& problem)
      : std::runtime_error(format(file, field, value, problem)),
        file_(std::move(file)),
        field_(std::move(field)),
        value_(std::move(value)),
        problem_(problem) {}

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& problem() const { return problem_; }

 private:
  static std::string format(const std::string& file, const std::string& field, const std::string& value,
                            const std::string& problem);
  std::string file_, field_, value_, problem_;
};

}  // namespace dayzero::core
