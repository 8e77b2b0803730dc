#pragma once
// Element types and storage formats of weights, and the bytes a tensor takes in
// each, scales included. A storage format is how a checkpoint (or a plan) keeps
// a logical tensor: plain elements, or quantized blocks plus their scales.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dayzero::model {

// Element types: every dtype the safetensors reference reader accepts (v0.8).
enum class DType {
  boolean,
  f4,
  f6_e2m3,
  f6_e3m2,
  u8,
  i8,
  f8_e5m2,
  f8_e4m3,
  f8_e8m0,
  f8_e4m3fnuz,
  f8_e5m2fnuz,
  i16,
  u16,
  f16,
  bf16,
  i32,
  u32,
  f32,
  c64,
  f64,
  i64,
  u64,
};

int dtype_bits(DType t);
std::string_view dtype_name(DType t);                       // safetensors spelling
std::optional<DType> dtype_from_name(std::string_view s);   // "BF16" -> bf16
std::optional<DType> dtype_from_torch(std::string_view s);  // "bfloat16" -> bf16

// How a logical tensor is stored.
enum class StorageKind {
  plain,       // every element at `dtype`
  fp8_block,   // F8_E4M3 elements + one F32 `weight_scale_inv` per block_rows x block_cols
  fp8_tensor,  // F8_E4M3 elements + one F32 scale for the whole tensor
  mxfp4,       // OCP MX FP4 (E2M1, two per byte) + one E8M0 byte scale per 32 elements
  int4_group,  // 4-bit integers, one BF16 scale per `group` elements along the input dim
};

struct StorageFormat {
  StorageKind kind = StorageKind::plain;
  DType dtype = DType::bf16;  // element type for `plain`
  int64_t block_rows = 0;     // fp8_block: block size along the output (row) dim
  int64_t block_cols = 0;     // fp8_block: block size along the input (column) dim
  int64_t group = 0;          // int4_group: elements per scale

  static StorageFormat plain_of(DType t) { return {StorageKind::plain, t}; }
  std::string describe() const;  // e.g. "fp8 e4m3, 128x128 block scales"
};

// Precisions the weights can be costed at. `checkpoint` is as the published
// checkpoint stores them; the others convert every projection matrix (attention,
// dense MLP, experts, shared experts) and keep embeddings, head, routers, norms
// and biases at BF16 (F32 where the checkpoint keeps F32), the policy of
// DeepSeek-V3's FP8 release.
enum class WeightPrecision { bf16, fp8, int4, checkpoint };
inline constexpr WeightPrecision kAllPrecisions[] = {WeightPrecision::bf16, WeightPrecision::fp8, WeightPrecision::int4,
                                                     WeightPrecision::checkpoint};
std::string_view precision_name(WeightPrecision p);  // "bf16", "fp8", "int4", "checkpoint"
std::optional<WeightPrecision> parse_precision(std::string_view s);

// Elements per MXFP4 scale (OCP Microscaling Formats spec v1.0, block size 32).
inline constexpr int64_t kMxfp4BlockElems = 32;
// DeepSeek-V3 FP8 checkpoints: 128x128 weight blocks (config.json weight_block_size).
inline constexpr int64_t kFp8DefaultBlock = 128;
// Group size of DayZero's int4 what-if format: W4A16 with one BF16 scale per 128
// input elements, the common GPTQ/AWQ setting (symmetric, no zero points).
inline constexpr int64_t kInt4DefaultGroup = 128;

// Bytes of a tensor with the given logical shape stored in `fmt`, scales included.
// Quantized formats treat the last dim as the input dim and the product of all
// other dims as rows (so a fused [E, out, in] expert tensor gets per-expert blocks
// when block_rows divides out). Throws std::overflow_error on 64-bit overflow.
int64_t storage_bytes(std::span<const int64_t> shape, const StorageFormat& fmt);

}  // namespace dayzero::model
