#include "model/module_regex.h"

#include <cctype>
#include <stdexcept>

namespace dayzero::model {

namespace {

[[noreturn]] void refuse(const std::string& pattern, const std::string& why) {
  throw std::invalid_argument("regular expression \"" + pattern + "\": " + why +
                              " (supported: literals, \\x, ., (a|b) of literals, and *, +, ? after one of these)");
}

// One literal character at pattern[i] (an escape takes two); advances i.
char literal_at(const std::string& p, size_t& i) {
  if (p[i] == '\\') {
    if (i + 1 >= p.size()) refuse(p, "ends with a lone backslash");
    const char c = p[i + 1];
    if (std::isalnum(static_cast<unsigned char>(c))) refuse(p, std::string("escape \\") + c + " is not supported");
    i += 2;
    return c;
  }
  const char c = p[i];
  if (std::string("[]{}^$|()*+?").find(c) != std::string::npos)
    refuse(p, std::string("'") + c + "' is not supported here");
  ++i;
  return c;
}

}  // namespace

ModuleRegex::ModuleRegex(const std::string& p) {
  if (static_cast<int64_t>(p.size()) > kMaxModuleRegexChars)
    refuse(p.substr(0, 40) + "...", "longer than " + std::to_string(kMaxModuleRegexChars) + " characters");
  for (size_t i = 0; i < p.size();) {
    Atom a;
    if (p[i] == '.') {
      a.any = true;
      ++i;
    } else if (p[i] == '(') {
      ++i;
      a.literals.emplace_back();
      while (true) {
        if (i >= p.size()) refuse(p, "unclosed group");
        if (p[i] == ')') break;
        if (p[i] == '|') {
          a.literals.emplace_back();
          ++i;
          continue;
        }
        a.literals.back() += literal_at(p, i);
      }
      ++i;  // ')'
    } else {
      a.literals.push_back(std::string(1, literal_at(p, i)));
    }
    if (i < p.size() && (p[i] == '*' || p[i] == '+' || p[i] == '?')) {
      a.repeat = p[i] == '*' ? Repeat::star : p[i] == '+' ? Repeat::plus : Repeat::optional;
      ++i;
      if (i < p.size() && (p[i] == '*' || p[i] == '+' || p[i] == '?')) refuse(p, "a repeat of a repeat");
    }
    atoms_.push_back(std::move(a));
  }
}

bool ModuleRegex::match_from(size_t a, size_t pos, const std::string& name, std::vector<int8_t>& memo) const {
  if (a == atoms_.size()) return true;  // re.match: a prefix of the name suffices
  int8_t& m = memo[a * (name.size() + 1) + pos];
  if (m >= 0) return m == 1;
  const Atom& atom = atoms_[a];
  // Ends of one occurrence of the atom starting at `at`.
  auto step = [&](size_t at, auto&& each) {
    if (atom.any) {
      if (at < name.size()) each(at + 1);
      return;
    }
    for (const auto& lit : atom.literals)
      if (name.compare(at, lit.size(), lit) == 0 && at + lit.size() <= name.size()) each(at + lit.size());
  };
  bool ok = false;
  if (atom.repeat == Repeat::optional || atom.repeat == Repeat::star) ok = match_from(a + 1, pos, name, memo);
  if (!ok) {
    // One occurrence, then either the next atom or (for * and +) this atom again, as the
    // state (a, end) with the repeat now optional: memoised on the positions reached.
    std::vector<size_t> frontier{pos};
    std::vector<bool> seen(name.size() + 1, false);
    while (!frontier.empty() && !ok) {
      const size_t at = frontier.back();
      frontier.pop_back();
      step(at, [&](size_t end) {
        if (ok) return;
        if (end == at && atom.repeat != Repeat::one && atom.repeat != Repeat::optional) return;  // empty loop
        if (match_from(a + 1, end, name, memo)) ok = true;
        else if ((atom.repeat == Repeat::star || atom.repeat == Repeat::plus) && !seen[end]) {
          seen[end] = true;
          frontier.push_back(end);
        }
      });
    }
  }
  m = ok ? 1 : 0;
  return ok;
}

bool ModuleRegex::matches(const std::string& name) const {
  std::vector<int8_t> memo(atoms_.size() * (name.size() + 1), -1);
  return match_from(0, 0, name, memo);
}

}  // namespace dayzero::model
