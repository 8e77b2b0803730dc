// parse_json_text: nlohmann's parser with DayZero's guards. A parser callback
// tracks the open arrays and objects, so that nesting past kMaxJsonDepth stops
// the parse before the deep value exists, and a key repeated in one object is an
// error; the callback also knows the path of the value being read. Where in the
// text (line, column) is found afterwards by a scan of the text up to the point
// the parser reached, which is valid JSON.
#include <cmath>
#include <cstdlib>
#include <set>
#include <vector>

#include "core/input_file.h"
#include "core/json_fields.h"

namespace dayzero::core {

namespace {

using json = nlohmann::json;

// Longest part of the input the parser's message quotes ("last read: '...'").
constexpr std::size_t kMaxLastRead = 40;

struct Frame {
  bool object = false;
  std::set<std::string> keys;  // an object's keys so far
  std::string key;             // an object's key being read
  std::size_t index = 0;       // an array's index being read
};

// Thrown from the callback, caught by parse_json_text.
struct Stop {
  JsonTextError::Kind kind;
  std::string path, key;
  std::size_t nth_key = 0;  // duplicate_key: which key of the text (0-based)
};

class Guard {
 public:
  bool on(json::parse_event_t event, const json& parsed) {
    using E = json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (frames_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
          throw Stop{JsonTextError::Kind::too_deep, "", ""};
        frames_.push_back(Frame{event == E::object_start, {}, {}, 0});
        break;
      case E::key: key(parsed.get_ref<const std::string&>()); break;
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        element_done();
        break;
      case E::value: element_done(); break;
    }
    return true;
  }
  // The path of the value being read ("a.b[2]"), from the first `n` open containers.
  std::string path(std::size_t n) const {
    std::string p;
    for (std::size_t i = 0; i < n && i < frames_.size(); ++i) {
      if (frames_[i].object) {
        if (!p.empty()) p += '.';
        p += frames_[i].key;
      } else {
        p += '[';
        p += std::to_string(frames_[i].index);
        p += ']';
      }
    }
    return p;
  }
  std::size_t depth() const { return frames_.size(); }

 private:
  void key(const std::string& k) {
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {
      const std::string parent = path(frames_.size() - 1);
      throw Stop{JsonTextError::Kind::duplicate_key, parent.empty() ? k : parent + "." + k, k, keys_seen_};
    }
    f.key = k;
    ++keys_seen_;
  }
  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }
  std::vector<Frame> frames_;
  std::size_t keys_seen_ = 0;
};

bool overflows(std::string_view number) { return std::isinf(std::strtod(std::string(number).c_str(), nullptr)); }

enum class Find { deep, key, overflow };

// Byte offset in `text` of what stopped the parser: the bracket that opens one
// level too many, the `nth_key`-th object key, or the first number beyond a
// double. The text before it is valid JSON (the parser read it), so strings,
// brackets and keys are where they seem.
std::size_t locate(std::string_view text, Find what, std::size_t nth_key) {
  std::vector<bool> open;  // per open container: is it an object
  bool expect_key = false;
  std::size_t keys = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      if (expect_key && what == Find::key && keys++ == nth_key) return i;
      expect_key = false;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '{' || c == '[') {
      open.push_back(c == '{');
      if (what == Find::deep && open.size() > static_cast<std::size_t>(kMaxJsonDepth)) return i;
      expect_key = c == '{';
    } else if (c == '}' || c == ']') {
      if (!open.empty()) open.pop_back();
      expect_key = false;
    } else if (c == ',') {
      expect_key = !open.empty() && open.back();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t end = i;
      while (end < text.size() && std::string_view("+-.eE0123456789").find(text[end]) != std::string_view::npos) ++end;
      if (what == Find::overflow && overflows(text.substr(i, end - i))) return i;
      i = end - 1;
      expect_key = false;
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      expect_key = false;
    }
  }
  return text.size();
}

struct LineColumn {
  std::size_t line = 1, column = 1;
  std::string text() const { return "line " + std::to_string(line) + ", column " + std::to_string(column); }
};

// 1-based line and column (in bytes) of byte offset `at`.
LineColumn line_column(std::string_view text, std::size_t at) {
  LineColumn lc;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++lc.line;
      lc.column = 1;
    } else {
      ++lc.column;
    }
  }
  return lc;
}

// nlohmann's message from "parse error" on, with the input it quotes ("last read:
// '...'", the whole of an unterminated string) cut to kMaxLastRead bytes.
std::string parser_message(const std::string& what) {
  const auto at = what.find("parse error");
  std::string m = what.substr(at == std::string::npos ? 0 : at);
  const std::string mark = "; last read: '";
  const auto read = m.find(mark);
  if (read == std::string::npos) return m;
  const std::size_t from = read + mark.size();
  if (m.size() - from <= kMaxLastRead + 1) return m;
  std::size_t cut = from + kMaxLastRead;
  while (cut > from && (static_cast<unsigned char>(m[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return m.substr(0, cut) + "...'";
}

JsonTextError syntax_error(std::string_view text, const std::string& source, const json::parse_error& e) {
  // e.byte is the 1-based offset of the failing character.
  const LineColumn lc = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
  const std::string detail = parser_message(e.what());
  return JsonTextError(JsonTextError::Kind::syntax, source, "", "",
                       "not valid JSON: malformed JSON at " + lc.text() + " (" + detail + ")", detail, "", lc.line,
                       lc.column);
}

JsonTextError stopped(std::string_view text, const std::string& source, const Stop& s) {
  using K = JsonTextError::Kind;
  if (s.kind == K::too_deep) {
    const LineColumn lc = line_column(text, locate(text, Find::deep, 0));
    return JsonTextError(K::too_deep, source, "", "",
                         "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at " + lc.text(), "", "",
                         lc.line, lc.column);
  }
  const LineColumn lc = line_column(text, locate(text, Find::key, s.nth_key));
  return JsonTextError(K::duplicate_key, source, s.path, "", "key appears twice in one object (at " + lc.text() + ")",
                       "", s.key, lc.line, lc.column);
}

JsonTextError out_of_range(std::string_view text, const std::string& source, const Guard& g) {
  const std::size_t at = locate(text, Find::overflow, 0);
  std::size_t end = at;
  while (end < text.size() && std::string_view("+-.eE0123456789").find(text[end]) != std::string_view::npos) ++end;
  const LineColumn lc = line_column(text, at);
  return JsonTextError(JsonTextError::Kind::out_of_range, source, g.path(g.depth()),
                       std::string(text.substr(at, end - at)), "number out of range (beyond a double) at " + lc.text(),
                       "", "", lc.line, lc.column);
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& source) {
  Guard guard;
  const json::parser_callback_t cb = [&guard](int, json::parse_event_t event, json& parsed) {
    return guard.on(event, parsed);
  };
  try {
    return json::parse(text.begin(), text.end(), cb);
  } catch (const Stop& s) {
    throw stopped(text, source, s);
  } catch (const json::parse_error& e) {
    throw syntax_error(text, source, e);
  } catch (const json::out_of_range&) {  // 406: a number beyond a double
    throw out_of_range(text, source, guard);
  }
}

json read_json_file(const std::filesystem::path& file) { return parse_json_text(read_input_file(file), file.string()); }

}  // namespace dayzero::core
