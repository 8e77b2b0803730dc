#include "model/dtype.h"

#include <stdexcept>

namespace dayzero::model {

int dtype_bits(DType t) {
  switch (t) {
    case DType::f32: return 32;
    case DType::f16: return 16;
    case DType::bf16: return 16;
    case DType::f8_e4m3: return 8;
    case DType::f8_e5m2: return 8;
    case DType::i8: return 8;
    case DType::u8: return 8;
    case DType::i32: return 32;
    case DType::i64: return 64;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f8_e4m3: return "F8_E4M3";
    case DType::f8_e5m2: return "F8_E5M2";
    case DType::i8: return "I8";
    case DType::u8: return "U8";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
  }
  return "?";
}

std::optional<DType> dtype_from_torch(std::string_view s) {
  if (s == "bfloat16") return DType::bf16;
  if (s == "float16" || s == "half") return DType::f16;
  if (s == "float32" || s == "float") return DType::f32;
  return std::nullopt;
}

std::string StorageFormat::describe() const {
  switch (kind) {
    case StorageKind::plain: return std::string(dtype_name(dtype));
    case StorageKind::fp8_block:
      return "F8_E4M3 + F32 scale per " + std::to_string(block_rows) + "x" +
             std::to_string(block_cols) + " block";
    case StorageKind::fp8_tensor: return "F8_E4M3 + one F32 scale per tensor";
    case StorageKind::mxfp4: return "MXFP4 (E2M1 + E8M0 scale per 32)";
    case StorageKind::int4_group:
      return "INT4 + BF16 scale per " + std::to_string(group) + " inputs";
  }
  return "?";
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error("size product overflows 64 bits");
  return r;
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error("size sum overflows 64 bits");
  return r;
}

int64_t storage_bytes(std::span<const int64_t> shape, const StorageFormat& fmt) {
  int64_t elems = 1;
  for (int64_t d : shape) elems = checked_mul(elems, d);
  if (fmt.kind == StorageKind::plain) return checked_mul(elems, dtype_bits(fmt.dtype)) / 8;

  // Quantized formats: a stack of matrices [.., rows, cols]; a 1-D tensor is one row.
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const int64_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  int64_t matrices = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) matrices = checked_mul(matrices, shape[i]);

  switch (fmt.kind) {
    case StorageKind::fp8_block: {
      const int64_t blocks = checked_mul(ceil_div(rows, fmt.block_rows), ceil_div(cols, fmt.block_cols));
      return checked_add(elems, checked_mul(checked_mul(matrices, blocks), 4));
    }
    case StorageKind::fp8_tensor: return checked_add(elems, 4);
    case StorageKind::mxfp4: {
      // Per row: ceil(cols/32) blocks of 16 bytes (32 E2M1 values) + 1 E8M0 byte each.
      const int64_t row_blocks = checked_mul(checked_mul(matrices, rows), ceil_div(cols, kMxfp4BlockElems));
      return checked_mul(row_blocks, kMxfp4BlockElems / 2 + 1);
    }
    case StorageKind::int4_group: {
      const int64_t row_groups = checked_mul(checked_mul(matrices, rows), ceil_div(cols, fmt.group));
      const int64_t packed = checked_mul(checked_mul(matrices, rows), ceil_div(cols, 2));
      return checked_add(packed, checked_mul(row_groups, 2));
    }
    case StorageKind::plain: break;
  }
  throw std::logic_error("unknown storage kind");
}

}  // namespace dayzero::model
