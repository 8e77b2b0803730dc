#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/input_file.h"
#include "core/json_fields.h"
#include "core/parallel.h"

namespace dayzero::model {

namespace {

using nlohmann::json;

int64_t to_offset(const json& v, const std::string& file, const std::string& name, const char* what) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    throw SafetensorsError(file, name, std::string(what) + " must be non-negative integers, got " + v.dump());
  const uint64_t u = v.get<uint64_t>();
  if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw SafetensorsError(file, name, std::string(what) + " value " + v.dump() + " does not fit in 64 bits");
  return static_cast<int64_t>(u);
}

TensorInfo parse_entry(const std::string& name, const json& e, const std::string& file) {
  if (!e.is_object()) throw SafetensorsError(file, name, "entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!e.contains(key)) throw SafetensorsError(file, name, std::string("entry lacks '") + key + "'");
  TensorInfo t;
  t.name = name;
  const json& d = e["dtype"];
  if (!d.is_string()) throw SafetensorsError(file, name, "dtype is not a string: " + d.dump());
  const auto dt = dtype_from_name(d.get<std::string>());
  if (!dt) throw SafetensorsError(file, name, "unknown dtype " + d.dump());
  t.dtype = *dt;
  const json& s = e["shape"];
  if (!s.is_array()) throw SafetensorsError(file, name, "shape is not a list: " + s.dump());
  for (const auto& x : s) t.shape.push_back(to_offset(x, file, name, "shape entries"));
  const json& o = e["data_offsets"];
  if (!o.is_array() || o.size() != 2)
    throw SafetensorsError(file, name, "data_offsets must be [begin, end], got " + o.dump());
  t.begin = to_offset(o[0], file, name, "data_offsets");
  t.end = to_offset(o[1], file, name, "data_offsets");
  if (t.end < t.begin)
    throw SafetensorsError(file, name,
                           "data_offsets end " + std::to_string(t.end) + " < begin " + std::to_string(t.begin));
  // Bytes must equal shape x dtype, computed without overflow.
  int64_t bits = dtype_bits(t.dtype);
  for (int64_t dim : t.shape) {
    if (dim != 0 && bits > std::numeric_limits<int64_t>::max() / dim)
      throw SafetensorsError(file, name, "shape " + s.dump() + " overflows 64 bits");
    bits *= dim;
  }
  if (bits % 8 != 0) throw SafetensorsError(file, name, "shape " + s.dump() + " is not a whole number of bytes");
  if (bits / 8 != t.bytes())
    throw SafetensorsError(file, name,
                           "data_offsets span " + std::to_string(t.bytes()) + " bytes but shape " + s.dump() + " of " +
                               std::string(dtype_name(t.dtype)) + " needs " + std::to_string(bits / 8));
  return t;
}

// core::parse_json_text (its limits on nesting, repeated keys and numbers), its
// errors told as SafetensorsErrors. A key repeated at the top of a header is a
// tensor named twice.
json parse_guarded(std::string_view text, const std::string& file, bool header) {
  try {
    return core::parse_json_text(text, file);
  } catch (const core::JsonTextError& e) {
    using Kind = core::JsonTextError::Kind;
    const std::string where = header ? "header: " : "";
    if (e.kind() == Kind::syntax)
      throw SafetensorsError(file, "", std::string(header ? "header is " : "") + "not valid JSON (" + e.detail() + ")");
    if (e.kind() == Kind::too_deep) throw SafetensorsError(file, "", where + e.problem());
    if (header && e.kind() == Kind::duplicate_key && e.field() == e.key())
      throw SafetensorsError(file, core::printable(e.key(), core::kMaxShownChars), "appears twice in the header");
    throw SafetensorsError(file, "",
                           where + "field '" + core::printable(e.field(), core::kMaxShownChars) + "'" +
                               (e.value().empty() ? "" : " = " + core::printable(e.value(), core::kMaxShownChars)) +
                               ": " + e.problem());
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view text, int64_t data_bytes, const std::string& file) {
  // The header is a JSON object, with JSON whitespace around it as the reference
  // reader accepts; a byte-order mark or any other first byte is refused, as there.
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X",
                  first == std::string_view::npos ? 0u : static_cast<unsigned char>(text[first]));
    throw SafetensorsError(file, "",
                           std::string("header is not a JSON object: it begins with ") +
                               (first == std::string_view::npos ? "nothing" : byte) + ", not '{'");
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw SafetensorsError(
        file, "",
        "header holds a NUL byte at offset " + std::to_string(nul) + " (only spaces may pad it after the JSON)");
  const json root = parse_guarded(text, file, true);
  if (!root.is_object()) throw SafetensorsError(file, "", "header is not a JSON object");

  SafetensorsHeader h;
  h.header_bytes = static_cast<int64_t>(text.size());
  h.data_bytes = data_bytes;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw SafetensorsError(file, "__metadata__", "must be an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw SafetensorsError(file, "__metadata__", "value of '" + mk + "' is not a string");
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(key, value, file));
  }
  // Sorted by offset the tensors must tile the data section exactly: from 0, no
  // gaps, no overlaps, and nothing after the last one.
  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  int64_t expected = 0;
  for (const auto& t : h.tensors) {
    if (t.begin < expected)
      throw SafetensorsError(file, t.name,
                             "data_offsets overlap the previous tensor (begin " + std::to_string(t.begin) + " < " +
                                 std::to_string(expected) + ")");
    if (t.begin > expected)
      throw SafetensorsError(file, t.name,
                             "gap in the data before this tensor (begin " + std::to_string(t.begin) +
                                 ", previous end " + std::to_string(expected) + ")");
    expected = t.end;
  }
  if (expected > data_bytes)
    throw SafetensorsError(file, h.tensors.back().name,
                           "data runs past the end of the file (needs " + std::to_string(expected) +
                               " data bytes, file has " + std::to_string(data_bytes) + "): truncated?");
  if (expected < data_bytes)
    throw SafetensorsError(file, "", std::to_string(data_bytes - expected) + " trailing bytes after the last tensor");
  return h;
}

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  const std::string file = path.string();
  try {
    core::require_regular_file(path);  // a FIFO would block, a device read without end
  } catch (const core::InputError& e) {
    throw SafetensorsError(file, "", e.problem());
  }
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw SafetensorsError(file, "", "cannot be read (" + ec.message() + ")");
  const int64_t file_bytes = static_cast<int64_t>(size);
  if (file_bytes < 8)
    throw SafetensorsError(file, "",
                           "file is " + std::to_string(file_bytes) + " bytes, shorter than the 8-byte header length");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SafetensorsError(file, "", "cannot be opened");
  std::array<unsigned char, 8> prefix{};
  in.read(reinterpret_cast<char*>(prefix.data()), 8);
  if (!in) throw SafetensorsError(file, "", "read of the header length failed");
  const int64_t n = safetensors_header_length(prefix, file_bytes, file);
  std::string text(static_cast<size_t>(n), '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) throw SafetensorsError(file, "", "read of the header failed");
  return parse_safetensors_header(text, file_bytes - 8 - n, file);
}

int64_t safetensors_header_length(std::span<const unsigned char, 8> prefix, int64_t file_bytes,
                                  const std::string& file) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[static_cast<size_t>(i)];  // little-endian
  if (n > static_cast<uint64_t>(kMaxSafetensorsHeaderBytes))
    throw SafetensorsError(file, "", "header length " + std::to_string(n) + " exceeds the 100,000,000-byte limit");
  if (static_cast<int64_t>(n) > file_bytes - 8)
    throw SafetensorsError(file, "",
                           "header length " + std::to_string(n) + " runs past the end of the " +
                               std::to_string(file_bytes) + "-byte file");
  return static_cast<int64_t>(n);
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& file) : path_(file.string()) {
  header_ = read_safetensors_header(file);
  data_offset_ = 8 + header_.header_bytes;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SafetensorsError(path_, "", "cannot be opened");
  map_bytes_ = static_cast<size_t>(data_offset_ + header_.data_bytes);
  void* p = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw SafetensorsError(path_, "", "cannot be memory-mapped");
  map_ = static_cast<const std::byte*>(p);
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<std::byte*>(map_), map_bytes_);
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : header_.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& t) const {
  return {map_ + data_offset_ + t.begin, static_cast<size_t>(t.bytes())};
}

void write_safetensors(const std::filesystem::path& file, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<int64_t> sizes;
  int64_t offset = 0;
  for (const auto& t : tensors) {
    const int64_t bytes = storage_bytes(t.shape, StorageFormat::plain_of(t.dtype));
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    sizes.push_back(bytes);
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned

  const auto tmp = std::filesystem::path(file.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw SafetensorsError(tmp.string(), "", "cannot be created");
    uint64_t n = text.size();
    std::array<char, 8> prefix{};
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    out.write(prefix.data(), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    // Chunks of a tensor are filled by every core at once, a batch at a time, and written
    // in order (a DeepSeek-V3 layer's experts are 11 GB of generated values: filling
    // them was the whole cost of `synth` on one core).
    constexpr int64_t kChunk = 1 << 20;
    const int threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
    const int64_t batch = 4 * threads;
    std::vector<std::byte> buf(static_cast<size_t>(batch * kChunk));
    core::WorkerPool pool(threads);
    bool hole = false;  // tensors without `fill` are zeros: seek past them (a sparse file)
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!tensors[i].fill) {
        out.seekp(sizes[i], std::ios::cur);
        hole = hole || sizes[i] > 0;
        continue;
      }
      hole = false;
      for (int64_t first = 0; first < sizes[i]; first += batch * kChunk) {
        const int64_t len = std::min(batch * kChunk, sizes[i] - first);
        const auto chunks = static_cast<size_t>((len + kChunk - 1) / kChunk);
        const auto fill_chunk = [&](int, size_t c0, size_t c1) {
          for (size_t c = c0; c < c1; ++c) {
            const int64_t at = static_cast<int64_t>(c) * kChunk;
            tensors[i].fill(first + at,
                            std::span<std::byte>(buf.data() + at, static_cast<size_t>(std::min(kChunk, len - at))));
          }
        };
        if (chunks == 1) fill_chunk(0, 0, 1);
        else pool.run(chunks, 1, fill_chunk);
        out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(len));
      }
    }
    if (hole) {  // a seek alone does not extend the file: write its last byte
      out.seekp(-1, std::ios::cur);
      out.put('\0');
    }
    if (!out.flush()) throw SafetensorsError(tmp.string(), "", "write failed (disk full?)");
  }
  std::filesystem::rename(tmp, file);
}

namespace {

// A shard's name in an index: a file of the checkpoint's directory, never a path out
// of it (an absolute path, or one through "..", would make `check` and `run` read
// whatever file the index names).
void require_shard_name(const std::string& file, const std::string& tensor, const std::string& shard) {
  const std::filesystem::path p(shard);
  bool escapes = shard.empty() || p.is_absolute() || p.has_root_name() || shard.find('\0') != std::string::npos;
  for (const auto& part : p) escapes = escapes || part == "..";
  if (escapes)
    throw SafetensorsError(file, tensor,
                           "weight_map names '" + core::printable(shard, core::kMaxShownChars) +
                               "': a shard must be a file inside the checkpoint's directory");
}

}  // namespace

ShardIndex read_shard_index(const std::filesystem::path& file) {
  std::string text;
  try {
    text = core::read_input_file(file);
  } catch (const core::InputError& e) {
    throw SafetensorsError(file.string(), "", e.problem());
  }
  return parse_shard_index(text, file.string());
}

ShardIndex parse_shard_index(std::string_view text, const std::string& file) {
  json j = parse_guarded(text, file, false);
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw SafetensorsError(file, "", "has no 'weight_map' object");
  ShardIndex idx;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) throw SafetensorsError(file, name, "weight_map value is not a file name");
    require_shard_name(file, name, shard.get<std::string>());
    idx.weight_map[name] = shard.get<std::string>();
  }
  if (j.contains("metadata") && j["metadata"].is_object() && j["metadata"].contains("total_size")) {
    const json& t = j["metadata"]["total_size"];
    if (!(t.is_number_unsigned() || (t.is_number_integer() && t.get<int64_t>() >= 0)) ||
        t.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw SafetensorsError(file, "",
                             "metadata.total_size = " + core::printable(t.dump(), core::kMaxShownChars) +
                                 ": must be a non-negative integer (the tensors' bytes)");
    idx.total_size = t.get<int64_t>();
  }
  return idx;
}

void write_shard_index(const std::filesystem::path& file, const ShardIndex& index) {
  json j;
  j["metadata"] = json::object();
  if (index.total_size) j["metadata"]["total_size"] = *index.total_size;
  j["weight_map"] = index.weight_map;
  const auto tmp = std::filesystem::path(file.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << '\n';
    if (!out.flush()) throw SafetensorsError(tmp.string(), "", "write failed");
  }
  std::filesystem::rename(tmp, file);
}

}  // namespace dayzero::model
