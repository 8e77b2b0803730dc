// Hostile JSON input (from a fuzzing probe): every case is one bounded, printable
// line naming the file, never a crash, a silent "last key wins", or an echo of
// the raw input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"
#include "core/json_fields.h"
#include "helpers.h"

namespace dayzero::core {
namespace {

using nlohmann::json;

using testing::error_of;

// One line of printable text: no control characters, no bytes outside ASCII
// (none of these messages needs any).
bool printable_line(const std::string& s) {
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7F) return false;
  }
  return true;
}

std::string nested(int levels, bool closed) {
  return std::string(static_cast<std::size_t>(levels), '[') + (closed ? std::string(levels, ']') : "");
}

TEST(JsonDepth, DeepNestingIsAnErrorNotAStackOverflow) {
  // The probe's file: ~52,000 '[' (121 KB). Showing the parsed value (show ->
  // dump) recursed once per level.
  for (const bool closed : {false, true}) {
    const std::string deep = nested(52'000, closed);
    const std::string e = error_of([&] {
      const json j = parse_json_text(deep, "deep.json");
      Fields f(j, "deep.json");  // shows the value: "expected a JSON object"
    });
    EXPECT_EQ(e, "deep.json: JSON nested deeper than 128 levels at line 1, column 129");
  }
}

TEST(JsonDepth, LimitIsExactAndNamesTheLine) {
  EXPECT_NO_THROW(parse_json_text(nested(kMaxJsonDepth, true), "ok.json"));
  EXPECT_EQ(error_of([] { parse_json_text(nested(kMaxJsonDepth + 1, true), "x.json"); }),
            "x.json: JSON nested deeper than 128 levels at line 1, column 129");
  std::string objects = "{\n";
  for (int i = 0; i < 200; ++i) objects += "\"a\": {";
  const std::string e = error_of([&] { parse_json_text(objects, "o.json"); });
  EXPECT_EQ(e, "o.json: JSON nested deeper than 128 levels at line 2, column " + std::to_string(127 * 6 + 6));
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(parse_json_text("[\"" + nested(1000, false) + "\"]", "s.json"));
}

TEST(JsonDepth, ReadJsonFileIsGuardedToo) {
  const auto file = std::filesystem::temp_directory_path() / ("dayzero_deep_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << nested(52'000, false);
  EXPECT_EQ(error_of([&] { read_json_file(file); }),
            file.string() + ": JSON nested deeper than 128 levels at line 1, column 129");
  std::filesystem::remove(file);
}

TEST(JsonDuplicateKeys, AreErrorsNamingThePathAndPlace) {
  EXPECT_EQ(error_of([] { parse_json_text("{\"a\": 1,\n \"nics\": {\"bw_Bps\": 1,\n  \"bw_Bps\": 2}}", "c.json"); }),
            "c.json: field 'nics.bw_Bps': key appears twice in one object (at line 3, column 3)");
  EXPECT_EQ(error_of([] { parse_json_text(R"({"ops": [{"x": 1}, {"shape": 1, "shape": 2}]})", "p.json"); }),
            "p.json: field 'ops[1].shape': key appears twice in one object (at line 1, column 33)");
  // The same key spelt with an escape is the same key.
  EXPECT_EQ(error_of([] { parse_json_text(R"({"a": 1, "\u0061": 2})", "u.json"); }),
            "u.json: field 'a': key appears twice in one object (at line 1, column 10)");
  try {
    parse_json_text(R"({"a": [{"k": 1, "k": 2}]})", "k.json");
    ADD_FAILURE() << "duplicate accepted";
  } catch (const JsonTextError& e) {
    EXPECT_EQ(e.kind(), JsonTextError::Kind::duplicate_key);
    EXPECT_EQ(e.field(), "a[0].k");
    EXPECT_EQ(e.key(), "k");
  }
}

TEST(JsonDuplicateKeys, SameKeyInOtherObjectsIsFine) {
  EXPECT_NO_THROW(parse_json_text(R"([{"a": 1}, {"a": 2}, {"a": {"a": {"a": 3}}}])", "ok.json"));
  EXPECT_NO_THROW(parse_json_text(R"({"x": {"k": 1}, "y": {"k": 1}, "k": [{"k": 1}]})", "ok.json"));
}

TEST(ErrorMessages, ControlCharactersAndBadUtf8AreEscaped) {
  const std::string hostile = std::string("k\r\n\x1b[31m") + '\0' + "z\xff";
  const InputError e("f.json", hostile, hostile, "bad");
  EXPECT_EQ(std::string(e.what()), "f.json: field 'k\\r\\n\\x1b[31m\\0z\\xff' = k\\r\\n\\x1b[31m\\0z\\xff: bad");
  EXPECT_EQ(e.field(), hostile);  // the parts stay as given
  // Valid UTF-8 is kept; a tab, DEL and a C1 control (U+009B, an 8-bit CSI) are not.
  EXPECT_EQ(printable("\xc3\xa9\t\x7f\xc2\x9b", 80), "\xc3\xa9\\t\\x7f\\u009b");
  // Overlong and surrogate encodings are not UTF-8.
  EXPECT_EQ(printable("\xc0\xaf\xed\xa0\x80", 80), "\\xc0\\xaf\\xed\\xa0\\x80");
}

TEST(ErrorMessages, KeysFromTheFileAreEscaped) {
  // JSON escapes decode to raw control characters in the key.
  const json j = parse_json_text(R"({"k\r\n\u001b[31m\u0000": 1})", "f.json");
  Fields f(j, "f.json");
  EXPECT_EQ(error_of([&] { f.reject_unknown(); }), "f.json: field 'k\\r\\n\\x1b[31m\\0' = 1: unknown field");
}

TEST(ErrorMessages, FieldAndValueAreCut) {
  const InputError e("f.json", std::string(200, 'k'), std::string(200, 'v'), "bad");
  EXPECT_EQ(std::string(e.what()),
            "f.json: field '" + std::string(77, 'k') + "...' = " + std::string(77, 'v') + "...: bad");
  // An escape is never cut in half.
  EXPECT_EQ(printable(std::string(76, 'x') + "\x1b" + "yyyy", 80), std::string(76, 'x') + "...");
  EXPECT_EQ(printable(std::string(80, 'x'), 80), std::string(80, 'x'));
}

TEST(ErrorMessages, UnterminatedStringIsNotEchoedWhole) {
  // The probe's 200 MB input wrote 200 MB to stderr; 10 MB shows the same.
  const std::string text = "{\"a\": \"" + std::string(10'000'000, 'x');
  const std::string e = error_of([&] { parse_json_text(text, "big.json"); });
  EXPECT_LT(e.size(), 300u) << e.size();
  EXPECT_EQ(e.rfind("big.json: not valid JSON: malformed JSON at line 1, column ", 0), 0u) << e;
  EXPECT_NE(e.find("last read: '\"xxxxxxxx"), std::string::npos) << e;
  EXPECT_TRUE(printable_line(e)) << e;
}

TEST(ErrorMessages, RawBytesTheParserQuotesAreEscaped) {
  for (const std::string& text :
       {std::string("[\"a\xff\"]"), std::string("[\"a\x1b[31m\"]"), std::string("[1,\r\n\x01]"),
        std::string("[\"a", 3) + '\0' + "\"]", std::string("{\"a\":\xfe}")}) {
    const std::string e = error_of([&] { parse_json_text(text, "r.json"); });
    EXPECT_EQ(e.rfind("r.json: not valid JSON", 0), 0u) << e;
    EXPECT_TRUE(printable_line(e)) << e;
  }
}

TEST(JsonNumbers, OverflowNamesTheFileFieldAndPlace) {
  EXPECT_EQ(error_of([] { parse_json_text(R"({"a": {"b": [1, 1e400]}})", "n.json"); }),
            "n.json: field 'a.b[1]' = 1e400: number out of range (beyond a double) at line 1, column 17");
  EXPECT_EQ(error_of([] { parse_json_text("\n  -1e400", "n.json"); }),
            "n.json = -1e400: number out of range (beyond a double) at line 2, column 3");
  EXPECT_EQ(error_of([] { parse_json_text("{\"n\": 1" + std::string(400, '0') + "}", "n.json"); }),
            "n.json: field 'n' = 1" + std::string(76, '0') +
                "...: number out of range (beyond a double) at line 1, "
                "column 7");
  // Underflow is zero, as before.
  EXPECT_EQ(parse_json_text("[1e-400]", "n.json")[0].get<double>(), 0.0);
}

}  // namespace
}  // namespace dayzero::core
