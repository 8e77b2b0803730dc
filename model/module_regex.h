#pragma once
// The regular expressions of a compressed-tensors `ignore` list (`re:` entries, e.g.
// Kimi-K2.5's `re:.*mlp\.(gate|up|gate_up|down)_proj.*`), read as the small subset such
// lists use, so that matching is linear and no pattern can make it backtrack for ever:
//   a literal character, `\` + a character (that character), `.` (any character),
//   a group of alternatives `(ab|cd|...)` whose alternatives are literal strings,
//   each optionally followed by `*`, `+` or `?`.
// Anything else (classes, anchors, nested groups, counted repeats) is refused with a
// message naming the pattern. A pattern matches a name as Python's `re.match` does
// (compressed-tensors' `is_match`): at the start of the name, not necessarily to its end.

#include <cstdint>
#include <string>
#include <vector>

namespace dayzero::model {

// Patterns longer than this are refused (the longest published one, Kimi-K2.5's, has 36).
inline constexpr int64_t kMaxModuleRegexChars = 256;

class ModuleRegex {
 public:
  // Throws std::invalid_argument with the reason when `pattern` is outside the subset.
  explicit ModuleRegex(const std::string& pattern);
  bool matches(const std::string& name) const;

 private:
  enum class Repeat { one, star, plus, optional };
  struct Atom {
    bool any = false;                   // `.`
    std::vector<std::string> literals;  // one literal, or a group's alternatives
    Repeat repeat = Repeat::one;
  };
  // Whether atoms [a, end) match a prefix of name[pos, ...): memoised over (a, pos).
  bool match_from(size_t a, size_t pos, const std::string& name, std::vector<int8_t>& memo) const;
  std::vector<Atom> atoms_;
};

}  // namespace dayzero::model
