// The safetensors reader rejects what the reference reader rejects (and
// duplicates), and reads back what the writer wrote.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/safetensors.h"

using namespace dayzero::model;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  const auto d = fs::temp_directory_path() / ("dayzero_st_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// A file of: 8-byte little-endian `n` (default: header size), header, `data_bytes` zero bytes.
fs::path raw_file(const std::string& name, const std::string& header, int64_t data_bytes, int64_t n = -1) {
  const auto path = temp_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t len = n < 0 ? header.size() : static_cast<uint64_t>(n);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out << header;
  out << std::string(static_cast<size_t>(data_bytes), '\0');
  return path;
}

std::string error_of(const fs::path& p) {
  try {
    read_safetensors_header(p);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

void expect_rejected(const fs::path& p, const std::string& fragment) {
  const std::string msg = error_of(p);
  EXPECT_NE(msg.find(p.string()), std::string::npos) << "no file name in: " << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << msg;
}

const char* kTwo =
    R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[8,16]}})";

}  // namespace

TEST(Safetensors, ValidFileParses) {
  const auto h = read_safetensors_header(raw_file("ok.st", kTwo, 16));
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[1].dtype, DType::bf16);
  EXPECT_EQ(h.tensors[1].shape, (std::vector<int64_t>{2, 2}));
}

TEST(Safetensors, WhitespaceAroundHeaderAccepted) {  // as the reference reader (v0.8) does
  EXPECT_EQ(error_of(raw_file("ws.st", std::string("\t\n") + kTwo + "   ", 16)), "");
}

TEST(Safetensors, EmptyHeaderIsValid) { EXPECT_EQ(error_of(raw_file("empty.st", "{}", 0)), ""); }

TEST(Safetensors, ShorterThanPrefix) {
  const auto p = temp_dir() / "tiny.st";
  std::ofstream(p) << "abc";
  expect_rejected(p, "shorter than the 8-byte header length");
}

TEST(Safetensors, AbsurdHeaderLength) {
  expect_rejected(raw_file("huge.st", kTwo, 16, 200'000'000), "exceeds the 100,000,000-byte limit");
  expect_rejected(raw_file("past.st", kTwo, 16, 5000), "runs past the end");
}

TEST(Safetensors, CorruptHeader) {
  expect_rejected(raw_file("json.st", R"({"a":{"dtype":"F32",)", 8), "not valid JSON");
  expect_rejected(raw_file("utf8.st", "{\"\xff\xfe\":{}}", 0), "not valid JSON");
  expect_rejected(raw_file("arr.st", "[1,2]", 0), "not a JSON object");
}

TEST(Safetensors, EntryFieldsValidated) {
  expect_rejected(raw_file("nodtype.st", R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8), "lacks 'dtype'");
  expect_rejected(raw_file("dtype.st", R"({"a":{"dtype":"F12","shape":[2],"data_offsets":[0,8]}})", 8),
                  "unknown dtype \"F12\"");
  expect_rejected(raw_file("neg.st", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "non-negative");
  expect_rejected(raw_file("offs.st", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "[begin, end]");
  expect_rejected(raw_file("meta.st", R"({"__metadata__":{"format":1}})", 0), "not a string");
}

TEST(Safetensors, BytesMustMatchShapeTimesDtype) {
  expect_rejected(raw_file("size.st", R"({"a":{"dtype":"I32","shape":[2,2],"data_offsets":[0,4]}})", 4), "needs 16");
  expect_rejected(
      raw_file("ovf.st", R"({"a":{"dtype":"F32","shape":[2,9223372036854775807],"data_offsets":[0,8]}})", 8),
      "overflows");
}

TEST(Safetensors, OffsetsMustTileTheData) {
  // Overlap: b starts inside a.
  expect_rejected(
      raw_file(
          "overlap.st",
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          12),
      "overlap");
  // Gap: b starts after a hole.
  expect_rejected(
      raw_file(
          "gap.st",
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
          20),
      "gap");
  // Does not start at 0.
  expect_rejected(raw_file("start.st", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "gap");
  // Truncated: the data section is shorter than the offsets say.
  expect_rejected(raw_file("trunc.st", kTwo, 10), "runs past the end of the file");
  // Trailing bytes after the last tensor.
  expect_rejected(raw_file("trail.st", kTwo, 20), "trailing bytes");
}

TEST(Safetensors, DuplicateNamesRejected) {
  expect_rejected(
      raw_file(
          "dup.st",
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
          8),
      "appears twice");
}

TEST(Safetensors, WriterRoundTripsThroughMappedReader) {
  const auto path = temp_dir() / "rt.safetensors";
  std::vector<TensorToWrite> t;
  t.push_back({"w", DType::f32, {3, 5}, [](int64_t off, std::span<std::byte> out) {
                 for (size_t i = 0; i < out.size(); ++i)
                   out[i] = std::byte(static_cast<unsigned char>(off + static_cast<int64_t>(i)));
               }});
  t.push_back({"scalar", DType::bf16, {}, nullptr});
  write_safetensors(path, t);
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
  SafetensorsFile f(path);
  EXPECT_EQ(f.header().metadata.at("format"), "pt");
  EXPECT_EQ((8 + f.header().header_bytes) % 8, 0);  // data 8-byte aligned
  const TensorInfo* w = f.find("w");
  ASSERT_NE(w, nullptr);
  const auto bytes = f.data(*w);
  ASSERT_EQ(bytes.size(), 60u);
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(static_cast<int>(bytes[i]), static_cast<int>(i));
  ASSERT_NE(f.find("scalar"), nullptr);
  EXPECT_EQ(f.find("scalar")->bytes(), 2);
}

TEST(Safetensors, ShardIndexRoundTrip) {
  const auto path = temp_dir() / "model.safetensors.index.json";
  ShardIndex idx;
  idx.weight_map = {{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}};
  idx.total_size = 16;
  write_shard_index(path, idx);
  const ShardIndex back = read_shard_index(path);
  EXPECT_EQ(back.weight_map, idx.weight_map);
  EXPECT_EQ(back.total_size, 16);
  std::ofstream(path) << R"({"metadata": {}, "weight_map": {"a": 3}})";
  EXPECT_THROW(read_shard_index(path), SafetensorsError);
}

// The text and prefix entry points the path readers call (and the fuzz targets use).
TEST(Safetensors, HeaderLengthAndIndexFromMemory) {
  const std::array<unsigned char, 8> prefix = {16, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(safetensors_header_length(prefix, 24, "m.safetensors"), 16);
  EXPECT_THROW(safetensors_header_length(prefix, 23, "m.safetensors"), SafetensorsError);  // past the end
  const std::array<unsigned char, 8> huge = {0, 0, 0, 0, 0, 0, 0, 0x80};
  EXPECT_THROW(safetensors_header_length(huge, INT64_MAX, "m.safetensors"), SafetensorsError);
  const ShardIndex idx = parse_shard_index(R"({"weight_map": {"a": "s1.safetensors"}})", "index.json");
  EXPECT_EQ(idx.weight_map.at("a"), "s1.safetensors");
  EXPECT_FALSE(idx.total_size);
  EXPECT_THROW(parse_shard_index(R"({"weight_map": {"a": "../s1.safetensors"}})", "index.json"), SafetensorsError);
}

// Hostile headers and indexes go through core::parse_json_text's limits, told as
// SafetensorsErrors naming the file.
TEST(Safetensors, HostileJsonIsRejectedNamingTheFile) {
  expect_rejected(raw_file("deep.st", "{\"a\":" + std::string(52'000, '['), 0),
                  "header: JSON nested deeper than 128 levels at line 1, column 133");
  expect_rejected(raw_file("dupkey.st", R"({"a":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}})", 8),
                  "header: field 'a.dtype': key appears twice in one object (at line 1, column 21)");
  expect_rejected(raw_file("esc.st", R"({"\u001b[31m":{},"\u001b[31m":{}})", 0), "tensor '\\x1b[31m': appears twice");
  expect_rejected(raw_file("big.st", R"({"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,8]}})", 8),
                  "header: field 'a.shape[0]' = 1e400: number out of range");
  const std::string long_string = "{\"a\":\"" + std::string(100'000, 'x');
  const std::string msg = error_of(raw_file("open.st", long_string, 0));
  EXPECT_NE(msg.find("header is not valid JSON (parse error"), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 400u);

  const auto index = temp_dir() / "deep.index.json";
  std::ofstream(index) << std::string(52'000, '[');
  try {
    read_shard_index(index);
    ADD_FAILURE() << "deep index accepted";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(std::string(e.what()), index.string() + ": JSON nested deeper than 128 levels at line 1, column 129");
  }
}

// Issue 16's reproducers, rejected as the reference reader rejects them: a byte-order
// mark before the header, a header padded with NUL bytes and followed by garbage, a
// header that is not an object; a FIFO is refused, not waited on.
TEST(Safetensors, HeaderBytesTheFormatDoesNotAllowAreRejected) {
  const std::string one = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_rejected(raw_file("bom.st", "\xEF\xBB\xBF" + one, 8),
                  "header is not a JSON object: it begins with 0xEF, not '{'");
  expect_rejected(raw_file("nul.st", one + std::string(6, '\0') + "garbage", 8),
                  "header holds a NUL byte at offset 54 (only spaces may pad it after the JSON)");
  expect_rejected(raw_file("list.st", "[1, 2]", 0), "header is not a JSON object: it begins with 0x5B, not '{'");
  EXPECT_EQ(read_safetensors_header(raw_file("spaces.st", one + "      ", 8)).tensors.size(), 1u);  // space padding
  const auto fifo = temp_dir() / "fifo.st";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_rejected(fifo, "not a regular file");
}

// An index may name only files inside the checkpoint's directory, and its total_size
// must be a byte count.
TEST(Safetensors, IndexShardsOutsideTheDirectoryAndBadTotalSizeAreRejected) {
  const auto index_error = [](const std::string& name, const std::string& text) {
    const auto path = temp_dir() / name;
    std::ofstream(path) << text;
    try {
      read_shard_index(path);
    } catch (const SafetensorsError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(index_error("up.json", R"({"weight_map": {"w": "../../etc/passwd"}})")
                .find("tensor 'w': weight_map names '../../etc/passwd': a shard must be a file inside the "
                      "checkpoint's directory"),
            std::string::npos);
  EXPECT_NE(index_error("abs.json", R"({"weight_map": {"w": "/etc/passwd"}})").find("a shard must be a file inside"),
            std::string::npos);
  EXPECT_NE(index_error("size.json", R"({"metadata": {"total_size": "big"}, "weight_map": {"w": "a.safetensors"}})")
                .find("metadata.total_size = \"big\": must be a non-negative integer"),
            std::string::npos);
  EXPECT_NE(index_error("neg.json", R"({"metadata": {"total_size": -5}, "weight_map": {"w": "a.safetensors"}})")
                .find("metadata.total_size = -5"),
            std::string::npos);
  EXPECT_EQ(index_error("ok.json", R"({"metadata": {"total_size": 0}, "weight_map": {"w": "sub/a.safetensors"}})"), "");
}
