#include "executor/weights.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/arith.h"

namespace dayzero::executor {

namespace {

// E2M1 code -> value (OCP Microscaling Formats spec v1.0, table of FP4 E2M1; the
// same table as transformers' integrations/mxfp4.py FP4_VALUES and OpenAI's
// gpt_oss/torch/weights.py): codes 0-7 positive, 8-15 the negatives.
constexpr std::array<float, 16> kE2M1Values = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                                               -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
constexpr int kE8M0Bias = 127;  // OCP MX spec: E8M0 scale = 2^(bits - 127)
constexpr int kFp8E4M3Bias = 7;
constexpr int64_t kMxfp4BytesPerBlock = model::kMxfp4BlockElems / 2;  // two E2M1 values per byte

template <class T>
T load(std::span<const std::byte> bytes, int64_t index) {
  T v;
  std::memcpy(&v, bytes.data() + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

[[noreturn]] void fail(const std::string& file, const std::string& tensor, const std::string& problem) {
  throw std::runtime_error(file + ": tensor '" + tensor + "': " + problem);
}

}  // namespace

float bf16_to_float(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

float f16_to_float(uint16_t bits) {
  const int sign = (bits >> 15) & 1, exp = (bits >> 10) & 0x1F, mant = bits & 0x3FF;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);  // subnormal: mant * 2^-14 / 2^10
  else if (exp == 31) v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp(static_cast<float>(mant + 1024), exp - 25);  // (1 + mant/2^10) * 2^(exp-15)
  return sign ? -v : v;
}

float fp8_e4m3_to_float(uint8_t bits) {
  const int sign = (bits >> 7) & 1, exp = (bits >> 3) & 0xF, mant = bits & 0x7;
  float v;
  if (exp == 0xF && mant == 0x7) v = std::numeric_limits<float>::quiet_NaN();
  else if (exp == 0) v = std::ldexp(static_cast<float>(mant), 1 - kFp8E4M3Bias - 3);  // mant/8 * 2^-6
  else v = std::ldexp(static_cast<float>(mant + 8), exp - kFp8E4M3Bias - 3);          // (1 + mant/8) * 2^(exp-7)
  return sign ? -v : v;
}

const std::array<float, 256>& fp8_e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = fp8_e4m3_to_float(static_cast<uint8_t>(c));
    return t;
  }();
  return table;
}

float e2m1_to_float(uint8_t nibble) { return kE2M1Values[nibble & 0xF]; }

float e8m0_to_float(uint8_t bits) {
  if (bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(bits) - kE8M0Bias);
}

int64_t StoredWeight::matrices() const {
  int64_t n = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) n *= shape[i];
  return n;
}

namespace {
// compressed-tensors pack-quantized INT4 (Kimi-K2.5's routed experts): `name`_packed,
// `name`_scale and, when present, `name`_shape ([rows, cols]: the packed words may pad).
StoredWeight find_packed_int4(const model::SafetensorsFile& file, const std::string& name,
                              const model::TensorInfo& packed, StoredWeight w) {
  const std::string fname = "safetensors file";
  const model::TensorInfo* s = file.find(name + "_scale");
  if (!s) fail(fname, name, "pack-quantized INT4 weight without '" + name + "_scale'");
  if (packed.dtype != model::DType::i32 || packed.shape.size() != 2)
    fail(fname, name + "_packed",
         "expected I32 [rows, cols / 8], found " + std::string(model::dtype_name(packed.dtype)) + " " +
             shape_string(packed.shape));
  const bool scale_ok = s->dtype == model::DType::bf16 || s->dtype == model::DType::f32;
  if (!scale_ok || s->shape.size() != 2 || s->shape[0] != packed.shape[0] || s->shape[1] <= 0)
    fail(fname, name + "_scale",
         "expected BF16 or F32 [" + std::to_string(packed.shape[0]) + ", groups], found " +
             std::string(model::dtype_name(s->dtype)) + " " + shape_string(s->shape));
  int64_t cols = packed.shape[1] * 8;
  if (const model::TensorInfo* sh = file.find(name + "_shape")) {
    const auto bytes = file.data(*sh);
    const bool i64 = sh->dtype == model::DType::i64, i32 = sh->dtype == model::DType::i32;
    if (!(i64 || i32) || sh->shape != std::vector<int64_t>{2}) fail(fname, name + "_shape", "expected an integer [2]");
    const int64_t rows = i64 ? load<int64_t>(bytes, 0) : load<int32_t>(bytes, 0);
    cols = i64 ? load<int64_t>(bytes, 1) : load<int32_t>(bytes, 1);
    // [rows, cols] must fill the packed words but their last: 8 (w - 1) < cols <= 8 w.
    if (rows != packed.shape[0] || cols <= 8 * (packed.shape[1] - 1) || cols > 8 * packed.shape[1])
      fail(fname, name + "_shape",
           "[" + std::to_string(rows) + ", " + std::to_string(cols) + "] does not match " + shape_string(packed.shape));
  }
  if (cols % s->shape[1] != 0)
    fail(fname, name + "_scale",
         std::to_string(s->shape[1]) + " groups do not divide " + std::to_string(cols) + " inputs");
  w.kind = model::StorageKind::int4_group;
  w.dtype = model::DType::u8;
  w.shape = {packed.shape[0], cols};
  w.group = cols / s->shape[1];
  w.scale_dtype = s->dtype;
  w.data = file.data(packed);
  w.scales = file.data(*s);
  return w;
}
}  // namespace

StoredWeight find_weight(const model::SafetensorsFile& file, const std::string& name, int64_t fp8_block_rows,
                         int64_t fp8_block_cols) {
  const std::string fname = "safetensors file";
  StoredWeight w;
  w.name = name;
  if (const model::TensorInfo* t = file.find(name)) {
    w.shape = t->shape;
    w.data = file.data(*t);
    w.dtype = t->dtype;
    switch (t->dtype) {
      case model::DType::f32:
      case model::DType::bf16:
      case model::DType::f16: return w;
      case model::DType::f8_e4m3: break;
      case model::DType::boolean:
      case model::DType::f4:
      case model::DType::f6_e2m3:
      case model::DType::f6_e3m2:
      case model::DType::u8:
      case model::DType::i8:
      case model::DType::f8_e5m2:
      case model::DType::f8_e8m0:
      case model::DType::f8_e4m3fnuz:
      case model::DType::f8_e5m2fnuz:
      case model::DType::i16:
      case model::DType::u16:
      case model::DType::i32:
      case model::DType::u32:
      case model::DType::c64:
      case model::DType::f64:
      case model::DType::i64:
      case model::DType::u64:
        fail(fname, name, "dtype " + std::string(model::dtype_name(t->dtype)) + " is not one the CPU backend reads");
    }
    const model::TensorInfo* s = file.find(name + "_scale_inv");
    if (!s) fail(fname, name, "F8_E4M3 weight without '" + name + "_scale_inv'");
    if (s->dtype != model::DType::f32) fail(fname, name + "_scale_inv", "expected F32 block scales");
    if (w.shape.size() < 2) fail(fname, name, "FP8 block scaling needs a matrix");
    w.kind = model::StorageKind::fp8_block;
    w.block_rows = fp8_block_rows;
    w.block_cols = fp8_block_cols;
    std::vector<int64_t> expect(w.shape.begin(), w.shape.end() - 2);
    expect.push_back(core::ceil_div(w.rows(), fp8_block_rows));
    expect.push_back(core::ceil_div(w.cols(), fp8_block_cols));
    if (s->shape != expect)
      fail(fname, name + "_scale_inv",
           "shape " + shape_string(s->shape) + ", expected " + shape_string(expect) + " for " +
               std::to_string(fp8_block_rows) + "x" + std::to_string(fp8_block_cols) + " blocks");
    w.scales = file.data(*s);
    return w;
  }
  if (const model::TensorInfo* p = file.find(name + "_packed")) return find_packed_int4(file, name, *p, w);
  const model::TensorInfo* b = file.find(name + "_blocks");
  const model::TensorInfo* s = file.find(name + "_scales");
  if (!b || !s) fail(fname, name, "not found (neither the tensor nor MXFP4 _blocks/_scales)");
  if (b->dtype != model::DType::u8 || s->dtype != model::DType::u8)
    fail(fname, name, "MXFP4 _blocks and _scales must be U8");
  if (b->shape.size() < 3 || b->shape.back() != kMxfp4BytesPerBlock)
    fail(fname, name + "_blocks", "shape " + shape_string(b->shape) + " is not [.., rows, cols/32, 16]");
  if (std::vector<int64_t>(b->shape.begin(), b->shape.end() - 1) != s->shape)
    fail(fname, name + "_scales",
         "shape " + shape_string(s->shape) + " does not match the blocks " + shape_string(b->shape));
  w.kind = model::StorageKind::mxfp4;
  w.dtype = model::DType::u8;
  w.shape.assign(b->shape.begin(), b->shape.end() - 2);
  w.shape.push_back(b->shape[b->shape.size() - 2] * model::kMxfp4BlockElems);
  w.data = file.data(*b);
  w.scales = file.data(*s);
  return w;
}

void dequantize_row(const StoredWeight& w, int64_t index, int64_t row, std::span<float> out) {
  dequantize_row_range(w, index, row, 0, w.cols(), out);
}

void dequantize_row_range(const StoredWeight& w, int64_t index, int64_t row, int64_t c0, int64_t c1,
                          std::span<float> out) {
  const int64_t R = w.rows(), C = w.cols();
  if (index < 0 || index >= w.matrices() || row < 0 || row >= R || c0 < 0 || c1 > C || c0 > c1 ||
      static_cast<int64_t>(out.size()) != c1 - c0)
    throw std::out_of_range("weight '" + w.name + "': row " + std::to_string(row) + " columns [" + std::to_string(c0) +
                            ", " + std::to_string(c1) + ") of matrix " + std::to_string(index) + " is outside " +
                            shape_string(w.shape));
  const int64_t first = (index * R + row) * C;  // element index of the row's first value
  switch (w.kind) {
    case model::StorageKind::plain:
      for (int64_t j = c0; j < c1; ++j) {
        float& o = out[static_cast<size_t>(j - c0)];
        if (w.dtype == model::DType::f32) o = load<float>(w.data, first + j);
        else if (w.dtype == model::DType::bf16) o = bf16_to_float(load<uint16_t>(w.data, first + j));
        else if (w.dtype == model::DType::f16) o = f16_to_float(load<uint16_t>(w.data, first + j));
        else throw std::runtime_error("weight '" + w.name + "': unsupported plain dtype");
      }
      return;
    case model::StorageKind::fp8_block: {
      const auto& fp8_table = fp8_e4m3_table();
      const int64_t sr = core::ceil_div(R, w.block_rows), sc = core::ceil_div(C, w.block_cols);
      const int64_t srow = (index * sr + row / w.block_rows) * sc;
      for (int64_t j = c0; j < c1; ++j) {
        const float code = fp8_table[static_cast<uint8_t>(w.data[first + j])];
        out[static_cast<size_t>(j - c0)] = code * load<float>(w.scales, srow + j / w.block_cols);  // fp8 * scale_inv
      }
      return;
    }
    case model::StorageKind::mxfp4: {
      const int64_t G = C / model::kMxfp4BlockElems;
      const int64_t block0 = (index * R + row) * G;
      for (int64_t g = c0 / model::kMxfp4BlockElems; g < G && g * model::kMxfp4BlockElems < c1; ++g) {
        const float scale = e8m0_to_float(static_cast<uint8_t>(w.scales[block0 + g]));
        for (int64_t b = 0; b < kMxfp4BytesPerBlock; ++b) {
          const auto byte = static_cast<uint8_t>(w.data[(block0 + g) * kMxfp4BytesPerBlock + b]);
          // Low nibble first: element 2b is bits 0-3, element 2b+1 bits 4-7.
          for (int64_t k = 0; k < 2; ++k) {
            const int64_t j = g * model::kMxfp4BlockElems + 2 * b + k;
            if (j >= c0 && j < c1) out[static_cast<size_t>(j - c0)] = e2m1_to_float(k ? byte >> 4 : byte & 0xF) * scale;
          }
        }
      }
      return;
    }
    case model::StorageKind::int4_group: {
      const int64_t words = core::ceil_div(C, int64_t{8}), groups = C / w.group;
      const int64_t word0 = (index * R + row) * words, scale0 = (index * R + row) * groups;
      for (int64_t j = c0; j < c1; ++j) {
        const auto word = static_cast<uint32_t>(load<int32_t>(w.data, word0 + j / 8));
        const int nibble = static_cast<int>((word >> (4 * (j % 8))) & 0xFu);
        out[static_cast<size_t>(j - c0)] =
            static_cast<float>(nibble - 8) * (w.scale_dtype == model::DType::f32
                                                  ? load<float>(w.scales, scale0 + j / w.group)
                                                  : bf16_to_float(load<uint16_t>(w.scales, scale0 + j / w.group)));
      }
      return;
    }
    case model::StorageKind::fp8_tensor:
    case model::StorageKind::int8_channel:
    case model::StorageKind::nvfp4: break;
  }
  throw std::runtime_error("weight '" + w.name + "': storage format not supported by the CPU backend");
}

Tensor dequantize_matrix(const StoredWeight& w, int64_t index) {
  Tensor t({w.rows(), w.cols()});
  for (int64_t r = 0; r < w.rows(); ++r)
    dequantize_row(w, index, r, std::span<float>(t.row(r), static_cast<size_t>(w.cols())));
  return t;
}

Tensor dequantize(const StoredWeight& w) {
  Tensor t(w.shape);
  const int64_t per = w.rows() * w.cols();
  for (int64_t m = 0; m < w.matrices(); ++m)
    for (int64_t r = 0; r < w.rows(); ++r)
      dequantize_row(w, m, r, std::span<float>(t.data.data() + m * per + r * w.cols(), static_cast<size_t>(w.cols())));
  return t;
}

}  // namespace dayzero::executor
