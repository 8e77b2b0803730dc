// core/input_file.h: only regular files are read, and never more than the limit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_fields.h"
#include "helpers.h"

namespace dayzero::core {
namespace {

namespace fs = std::filesystem;

using testing::error_of;

class InputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dayzero_input_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(InputFile, ReadsARegularFileAndAFileThroughASymlink) {
  const fs::path f = dir_ / "a.json";
  std::ofstream(f) << "{\"x\": 1}";
  EXPECT_EQ(read_input_file(f), "{\"x\": 1}");
  fs::create_symlink(f, dir_ / "link.json");
  EXPECT_EQ(read_input_file(dir_ / "link.json"), "{\"x\": 1}");
}

// Reproducers from issue 16: a FIFO blocked for ever, /dev/zero (or a config.json
// linked to it) was read without limit, a directory gave a library's message.
TEST_F(InputFile, AFifoADeviceAndADirectoryAreErrorsNamingTheFile) {
  const fs::path fifo = dir_ / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { read_input_file(fifo); }),
            fifo.string() + ": not a regular file (a FIFO, a device or a socket), expected a file");
  EXPECT_NE(error_of([&] { read_json_file("/dev/zero"); }).find("/dev/zero: not a regular file"), std::string::npos);
  fs::create_directories(dir_ / "model");
  fs::create_symlink("/dev/zero", dir_ / "model" / "config.json");
  EXPECT_NE(error_of([&] { read_input_file(dir_ / "model" / "config.json"); }).find("not a regular file"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { read_input_file(dir_); }), dir_.string() + ": is a directory, expected a file");
  EXPECT_EQ(error_of([&] { read_input_file(dir_ / "missing.json"); }),
            (dir_ / "missing.json").string() + ": no such file");
}

TEST_F(InputFile, AFileOverTheLimitIsRefusedBeforeItIsRead) {
  const fs::path f = dir_ / "big.json";
  std::ofstream(f) << std::string(1000, ' ');
  EXPECT_EQ(read_input_file(f, 1000).size(), 1000u);
  EXPECT_EQ(error_of([&] { read_input_file(f, 999); }),
            f.string() + ": file is 1000 bytes, more than the 999-byte limit for this kind of input");
}

}  // namespace
}  // namespace dayzero::core

namespace dayzero::core {
namespace {

// Only a UTF-8 byte order mark at the very start goes; anything else stays as it is.
TEST(InputText, AUtf8ByteOrderMarkAtTheStartIsDropped) {
  EXPECT_EQ(without_utf8_bom("\xEF\xBB\xBFid,x\n"), "id,x\n");
  EXPECT_EQ(without_utf8_bom("id,x\n"), "id,x\n");
  EXPECT_EQ(without_utf8_bom("\xEF\xBB"), "\xEF\xBB");
  EXPECT_EQ(without_utf8_bom("a\xEF\xBB\xBF"), "a\xEF\xBB\xBF");
  EXPECT_EQ(without_utf8_bom(""), "");
}

}  // namespace
}  // namespace dayzero::core
