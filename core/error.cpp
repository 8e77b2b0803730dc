#include "core/error.h"

#include <cstdint>

namespace dayzero::core {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one
// (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, or
// cut short).
std::size_t utf8_length(std::string_view s, std::size_t i, uint32_t& code) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2, code = b & 0x1Fu;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3, code = b & 0x0Fu;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4, code = b & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    code = (code << 6) | (c & 0x3Fu);
  }
  const bool overlong = (n == 3 && code < 0x800) || (n == 4 && code < 0x10000);
  if (overlong || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return n;
}

std::string hex_escape(const char* prefix, unsigned v) {
  static const char* digits = "0123456789abcdef";
  return std::string(prefix) + digits[(v >> 4) & 0xF] + digits[v & 0xF];
}

// The text that shows s[i...] (one character or one invalid byte) and how many bytes it used.
std::string piece_at(std::string_view s, std::size_t i, std::size_t& used) {
  used = 1;
  const auto b = static_cast<unsigned char>(s[i]);
  switch (b) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\0': return "\\0";
    default: break;
  }
  if (b < 0x20 || b == 0x7F) return hex_escape("\\x", b);
  if (b < 0x80) return std::string(1, static_cast<char>(b));
  uint32_t code = 0;
  const std::size_t n = utf8_length(s, i, code);
  if (n == 0) return hex_escape("\\x", b);
  used = n;
  if (code <= 0x9F) return hex_escape("\\u00", code);  // C1 controls (0x9b is a CSI)
  return std::string(s.substr(i, n));
}

}  // namespace

std::string printable(std::string_view s, std::size_t max_chars) {
  const std::size_t room = max_chars > 3 ? max_chars - 3 : 0;  // what fits before "..."
  std::string out;
  std::size_t chars = 0, fit_bytes = 0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t used = 0;
    const std::string piece = piece_at(s, i, used);
    const std::size_t width = piece.size() > 1 && piece[0] == '\\' ? piece.size() : 1;
    chars += width;
    if (chars > max_chars) {
      out.resize(fit_bytes);
      return out + "...";
    }
    out += piece;
    if (chars <= room) fit_bytes = out.size();
    i += used;
  }
  return out;
}

std::string InputError::format(const std::string& file, const std::string& field, const std::string& value,
                               const std::string& problem) {
  std::string s = file.empty() ? std::string("<input>") : printable(file, kMaxProblemChars);
  if (!field.empty()) s += ": field '" + printable(field, kMaxShownChars) + "'";
  if (!value.empty()) s += " = " + printable(value, kMaxShownChars);
  s += ": " + printable(problem, kMaxProblemChars);
  return s;
}

}  // namespace dayzero::core
