#include "model/dtype.h"

#include <stdexcept>

#include "core/arith.h"
#include "core/enum_names.h"

namespace dayzero::model {

namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  int bits;
};
// Names and sizes as in the safetensors reference implementation (tensor.rs, enum Dtype).
constexpr DTypeInfo kDTypes[] = {
    {DType::boolean, "BOOL", 8},
    {DType::f4, "F4", 4},
    {DType::f6_e2m3, "F6_E2M3", 6},
    {DType::f6_e3m2, "F6_E3M2", 6},
    {DType::u8, "U8", 8},
    {DType::i8, "I8", 8},
    {DType::f8_e5m2, "F8_E5M2", 8},
    {DType::f8_e4m3, "F8_E4M3", 8},
    {DType::f8_e8m0, "F8_E8M0", 8},
    {DType::f8_e4m3fnuz, "F8_E4M3FNUZ", 8},
    {DType::f8_e5m2fnuz, "F8_E5M2FNUZ", 8},
    {DType::i16, "I16", 16},
    {DType::u16, "U16", 16},
    {DType::f16, "F16", 16},
    {DType::bf16, "BF16", 16},
    {DType::i32, "I32", 32},
    {DType::u32, "U32", 32},
    {DType::f32, "F32", 32},
    {DType::c64, "C64", 64},
    {DType::f64, "F64", 64},
    {DType::i64, "I64", 64},
    {DType::u64, "U64", 64},
};
}  // namespace

int dtype_bits(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.bits;
  return 0;
}

std::string_view dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.name;
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view s) {
  for (const auto& d : kDTypes)
    if (s == d.name) return d.type;
  return std::nullopt;
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
      return "F8_E4M3 + F32 scale per " + std::to_string(block_rows) + "x" + std::to_string(block_cols) + " block";
    case StorageKind::fp8_tensor: return "F8_E4M3 + one F32 scale per tensor";
    case StorageKind::mxfp4: return "MXFP4 (E2M1 + E8M0 scale per 32)";
    case StorageKind::int4_group: return "INT4 + BF16 scale per " + std::to_string(group) + " inputs";
    case StorageKind::int8_channel: return "INT8 + " + std::string(dtype_name(scale)) + " scale per output channel";
    case StorageKind::nvfp4: return "NVFP4 (E2M1 + F8_E4M3 scale per 16 + F32 scale per tensor)";
  }
  return "?";
}

std::string_view precision_name(WeightPrecision p) {
  switch (p) {
    case WeightPrecision::bf16: return "bf16";
    case WeightPrecision::fp8: return "fp8";
    case WeightPrecision::int8: return "int8";
    case WeightPrecision::int8_w8a16: return "int8_w8a16";
    case WeightPrecision::int4: return "int4";
    case WeightPrecision::nvfp4: return "nvfp4";
    case WeightPrecision::checkpoint: return "checkpoint";
  }
  return "?";
}

std::optional<WeightPrecision> parse_precision(std::string_view s) {
  return core::parse_enum(s, kAllPrecisions, precision_name);
}

int64_t storage_bytes(std::span<const int64_t> shape, const StorageFormat& fmt) {
  int64_t elems = 1;
  for (int64_t d : shape) elems = core::checked_mul(elems, d);
  if (fmt.kind == StorageKind::plain) return (core::checked_mul(elems, dtype_bits(fmt.dtype)) + 7) / 8;

  // Quantized formats: a stack of matrices [.., rows, cols]; a 1-D tensor is one row.
  const int64_t cols = shape.empty() ? 1 : shape.back();
  const int64_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  int64_t matrices = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) matrices = core::checked_mul(matrices, shape[i]);

  switch (fmt.kind) {
    case StorageKind::fp8_block: {
      const int64_t blocks =
          core::checked_mul(core::ceil_div(rows, fmt.block_rows), core::ceil_div(cols, fmt.block_cols));
      return core::checked_add(elems, core::checked_mul(core::checked_mul(matrices, blocks), 4));
    }
    case StorageKind::fp8_tensor: return core::checked_add(elems, 4);
    case StorageKind::mxfp4: {
      // Per row: ceil(cols/32) blocks of 16 bytes (32 E2M1 values) + 1 E8M0 byte each.
      const int64_t row_blocks =
          core::checked_mul(core::checked_mul(matrices, rows), core::ceil_div(cols, kMxfp4BlockElems));
      return core::checked_mul(row_blocks, kMxfp4BlockElems / 2 + 1);
    }
    case StorageKind::int4_group: {
      const int64_t row_groups = core::checked_mul(core::checked_mul(matrices, rows), core::ceil_div(cols, fmt.group));
      const int64_t packed = core::checked_mul(core::checked_mul(matrices, rows), core::ceil_div(cols, 2));
      return core::checked_add(packed, core::checked_mul(row_groups, 2));
    }
    case StorageKind::int8_channel: {
      // One byte per element + one scale per row (output channel) of every matrix.
      const int64_t scale_bytes = dtype_bits(fmt.scale) / 8;
      return core::checked_add(elems, core::checked_mul(core::checked_mul(matrices, rows), scale_bytes));
    }
    case StorageKind::nvfp4: {
      // Per row: ceil(cols/16) blocks of 8 bytes (16 E2M1 values) + 1 F8_E4M3 byte
      // each; per matrix one F32 tensor scale.
      const int64_t row_blocks =
          core::checked_mul(core::checked_mul(matrices, rows), core::ceil_div(cols, kNvfp4BlockElems));
      return core::checked_add(core::checked_mul(row_blocks, kNvfp4BlockElems / 2 + 1),
                               core::checked_mul(matrices, dtype_bits(DType::f32) / 8));
    }
    case StorageKind::plain: break;
  }
  throw std::logic_error("unknown storage kind");
}

}  // namespace dayzero::model
