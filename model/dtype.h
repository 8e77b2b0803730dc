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
  // INT8 elements + one `scale`-typed scale per output channel (row): W8A8 INT8
  // (F32 scales) and W8A16 INT8 weight-only (BF16 scales), see matrix_format.
  int8_channel,
  // NVIDIA NVFP4: FP4 E2M1 elements (two per byte) + one F8_E4M3 scale per 16
  // elements along the input dim + one F32 scale per matrix (weight_scale_2).
  nvfp4,
};

struct StorageFormat {
  StorageKind kind = StorageKind::plain;
  DType dtype = DType::bf16;  // element type for `plain`
  int64_t block_rows = 0;     // fp8_block: block size along the output (row) dim
  int64_t block_cols = 0;     // fp8_block: block size along the input (column) dim
  int64_t group = 0;          // int4_group: elements per scale
  DType scale = DType::f32;   // int8_channel: the per-channel scale's element type

  static StorageFormat plain_of(DType t) { return {StorageKind::plain, t}; }
  std::string describe() const;  // e.g. "fp8 e4m3, 128x128 block scales"
};

// Precisions the weights can be costed at. `checkpoint` is as the published
// checkpoint stores them; the others convert every projection matrix (attention,
// dense MLP, experts, shared experts) and keep embeddings, head, routers, norms
// and biases at BF16 (F32 where the checkpoint keeps F32), the policy of
// DeepSeek-V3's FP8 release. What each is (storage: matrix_format in model.h;
// the GEMM compute dtype: simulate/precisions.h):
//   bf16        16-bit weights and activations
//   fp8         W8A8 FP8 E4M3, 128x128 block scales (DeepSeek-V3's format)
//   int8        W8A8 INT8: per-channel F32 weight scales, per-token dynamic
//               activation scales (SmoothQuant; vLLM / SGLang "w8a8 int8")
//   int8_w8a16  INT8 weight-only: per-channel BF16 scales, BF16 activations
//   int4        W4A16 INT4, a BF16 scale per 128 inputs (GPTQ / AWQ what-if)
//   nvfp4       W4A4 NVFP4: E2M1 weights and activations, F8_E4M3 scale per 16
//               elements + an F32 scale per tensor (Blackwell FP4 tensor cores)
// The order is the enumerators' (kAllPrecisions[i] has the value i).
enum class WeightPrecision { bf16, fp8, int8, int8_w8a16, int4, nvfp4, checkpoint };
inline constexpr WeightPrecision kAllPrecisions[] = {
    WeightPrecision::bf16, WeightPrecision::fp8,   WeightPrecision::int8,      WeightPrecision::int8_w8a16,
    WeightPrecision::int4, WeightPrecision::nvfp4, WeightPrecision::checkpoint};
static_assert(
    [] {
      size_t i = 0;
      for (WeightPrecision p : kAllPrecisions)
        if (static_cast<size_t>(p) != i++) return false;
      return true;
    }(),
    "kAllPrecisions lists every WeightPrecision in enumerator order (simulate indexes arrays by it)");
// "bf16", "fp8", "int8", "int8_w8a16", "int4", "nvfp4", "checkpoint"
std::string_view precision_name(WeightPrecision p);
std::optional<WeightPrecision> parse_precision(std::string_view s);

// Elements per MXFP4 scale (OCP Microscaling Formats spec v1.0, block size 32).
inline constexpr int64_t kMxfp4BlockElems = 32;
// DeepSeek-V3 FP8 checkpoints: 128x128 weight blocks (config.json weight_block_size).
inline constexpr int64_t kFp8DefaultBlock = 128;
// Group size of DayZero's int4 what-if format: W4A16 with one BF16 scale per 128
// input elements, the common GPTQ/AWQ setting (symmetric, no zero points).
inline constexpr int64_t kInt4DefaultGroup = 128;
// Elements per NVFP4 block scale: 16, each scale F8_E4M3, plus one F32 scale per
// tensor (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision
// Inference", developer.nvidia.com blog, 2025; TensorRT Model Optimizer's NVFP4
// export: weight [out, in/2] U8, weight_scale [out, in/16] F8_E4M3, weight_scale_2
// F32 scalar, as vLLM's ModelOptNvFp4LinearMethod loads it).
inline constexpr int64_t kNvfp4BlockElems = 16;

// Bytes of a tensor with the given logical shape stored in `fmt`, scales included.
// Quantized formats treat the last dim as the input dim and the product of all
// other dims as rows (so a fused [E, out, in] expert tensor gets per-expert blocks
// when block_rows divides out). Throws std::overflow_error on 64-bit overflow.
int64_t storage_bytes(std::span<const int64_t> shape, const StorageFormat& fmt);

}  // namespace dayzero::model
