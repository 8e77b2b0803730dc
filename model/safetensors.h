#pragma once
// The safetensors format (huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON header, then the tensor bytes. The reader validates the
// header as the reference implementation does (and rejects duplicates, which it
// does not); the data is memory-mapped, never copied. The writer streams tensors
// to a temporary file and renames it into place.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "model/dtype.h"

namespace dayzero::model {

// Header bigger than this is refused (reference reader: MAX_HEADER_SIZE = 100,000,000).
inline constexpr int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

class SafetensorsError : public std::runtime_error {
 public:
  // The file and the tensor's name are made printable (core::printable): a header's
  // bytes never reach a terminal raw.
  SafetensorsError(const std::string& file, const std::string& tensor, const std::string& problem)
      : std::runtime_error(core::printable(file, 1000) +
                           (tensor.empty() ? "" : ": tensor '" + core::printable(tensor, core::kMaxShownChars) + "'") +
                           ": " + problem) {}
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  int64_t begin = 0;  // offsets into the data section (after the header), end exclusive
  int64_t end = 0;
  int64_t bytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in file (offset) order
  std::map<std::string, std::string> metadata;
  int64_t header_bytes = 0;  // N
  int64_t data_bytes = 0;    // bytes after the header
};

// Validates a header's JSON given the size of the data section that follows it.
SafetensorsHeader parse_safetensors_header(std::string_view json, int64_t data_bytes, const std::string& file);
// The header length N that a file's first 8 bytes give (little-endian), checked
// against kMaxSafetensorsHeaderBytes and against the `file_bytes` the file holds.
int64_t safetensors_header_length(std::span<const unsigned char, 8> prefix, int64_t file_bytes,
                                  const std::string& file);
// Reads and validates only the 8-byte prefix and the header of a file.
SafetensorsHeader read_safetensors_header(const std::filesystem::path& file);

// A memory-mapped safetensors file: tensor bytes are views into the mapping.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& file);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const SafetensorsHeader& header() const { return header_; }
  const TensorInfo* find(std::string_view name) const;
  std::span<const std::byte> data(const TensorInfo& t) const;

 private:
  std::string path_;
  SafetensorsHeader header_;
  const std::byte* map_ = nullptr;
  size_t map_bytes_ = 0;
  int64_t data_offset_ = 0;
};

// A tensor to write: its bytes come from `fill`, called with chunks (offset into the
// tensor, destination) so huge tensors stream through a buffer; chunks are filled by
// several threads at once, so `fill` must depend on the offset alone (and be safe to
// call concurrently).
// Without `fill` the tensor is zeros, left as a hole in a sparse file.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::function<void(int64_t offset, std::span<std::byte> out)> fill;
};
// Writes `tensors` in the given order (header padded with spaces to 8 bytes, as the
// reference writer does) to `file` via a temporary file and a rename.
void write_safetensors(const std::filesystem::path& file, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// model.safetensors.index.json: tensor name -> shard file.
struct ShardIndex {
  std::map<std::string, std::string> weight_map;
  std::optional<int64_t> total_size;  // metadata.total_size, when given
};
ShardIndex read_shard_index(const std::filesystem::path& file);
// The same from an index's text; `file` names it in errors.
ShardIndex parse_shard_index(std::string_view text, const std::string& file);
void write_shard_index(const std::filesystem::path& file, const ShardIndex& index);

}  // namespace dayzero::model
