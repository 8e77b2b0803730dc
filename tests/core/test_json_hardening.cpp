// Hostile input in error messages (from a fuzzing probe): every message is one
// bounded, printable line, never an echo of the raw input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"
#include "core/json_fields.h"

namespace dayzero::core {
namespace {

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
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

}  // namespace
}  // namespace dayzero::core
