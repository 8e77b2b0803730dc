// Bytes of a tensor in each storage format, scales included, against hand arithmetic.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/arith.h"
#include "model/dtype.h"
#include "model/model.h"
#include "model/weights.h"

using namespace dayzero::model;
namespace core = dayzero::core;

namespace {
int64_t bytes(std::vector<int64_t> shape, const StorageFormat& f) { return storage_bytes(shape, f); }
const StorageFormat kFp8Block{StorageKind::fp8_block, DType::f8_e4m3, 128, 128};
const StorageFormat kMxfp4{StorageKind::mxfp4, DType::u8};
const StorageFormat kInt4{StorageKind::int4_group, DType::u8, 0, 0, 128};
}  // namespace

TEST(StorageBytes, Plain) {
  EXPECT_EQ(bytes({4096, 4096}, StorageFormat::plain_of(DType::bf16)), 4096 * 4096 * 2);  // 33,554,432
  EXPECT_EQ(bytes({256}, StorageFormat::plain_of(DType::f32)), 1024);
  EXPECT_EQ(bytes({}, StorageFormat::plain_of(DType::bf16)), 2);  // a scalar is one element
}

TEST(StorageBytes, Fp8BlockScales) {
  // DeepSeek-V3 expert gate_proj [2048, 7168]: 2048*7168 = 14,680,064 FP8 bytes,
  // scale_inv [16, 56] F32 = 896 * 4 = 3,584 bytes.
  EXPECT_EQ(bytes({2048, 7168}, kFp8Block), 14'680'064 + 3'584);
  // Partial blocks round up: [129, 130] -> 2x2 blocks -> 16 bytes of scales.
  EXPECT_EQ(bytes({129, 130}, kFp8Block), 129 * 130 + 16);
  // kv_a_proj_with_mqa [576, 7168]: ceil(576/128)=5 x 56 = 280 scales.
  EXPECT_EQ(bytes({576, 7168}, kFp8Block), 576 * 7168 + 280 * 4);
}

TEST(StorageBytes, Mxfp4BlocksAndScales) {
  // gpt-oss-20b down_proj [32 experts, 2880, 2880]: per row 2880/32 = 90 blocks of
  // 16 bytes + 90 E8M0 scale bytes = 1,530 bytes; 32 * 2880 rows = 92,160 rows.
  EXPECT_EQ(bytes({32, 2880, 2880}, kMxfp4), 92'160LL * 1'530);
  // gate_up [32, 5760, 2880]: 184,320 rows x 1,530.
  EXPECT_EQ(bytes({32, 5760, 2880}, kMxfp4), 184'320LL * 1'530);
}

TEST(StorageBytes, Int4Groups) {
  // [4096, 4096] int4: 4096*4096/2 = 8,388,608 packed bytes + 4096 rows x 32 groups x 2-byte BF16 scales.
  EXPECT_EQ(bytes({4096, 4096}, kInt4), 8'388'608 + 4096 * 32 * 2);
  // Odd input width: [1, 3] -> 2 packed bytes + 1 group scale (2 bytes).
  EXPECT_EQ(bytes({1, 3}, kInt4), 2 + 2);
}

// W8A8 INT8: one byte per element + one F32 scale per output channel (row).
TEST(StorageBytes, Int8PerChannelF32Scales) {
  const StorageFormat w8a8{StorageKind::int8_channel, DType::i8, 0, 0, 0, DType::f32};
  // [4096, 4096]: 4096 x 4096 = 16,777,216 bytes + 4096 rows x 4 B = 16,384 -> 16,793,600.
  EXPECT_EQ(bytes({4096, 4096}, w8a8), 16'777'216 + 16'384);
  // A fused expert tensor [8, 14336, 4096]: 8 x 14336 x 4096 = 469,762,048 bytes
  // + 8 x 14336 = 114,688 rows x 4 B = 458,752 -> 470,220,800.
  EXPECT_EQ(bytes({8, 14336, 4096}, w8a8), 469'762'048 + 458'752);
  EXPECT_EQ(matrix_format(WeightPrecision::int8).scale, DType::f32);
  EXPECT_EQ(bytes({4096, 4096}, matrix_format(WeightPrecision::int8)), 16'793'600);
}

// W8A16 INT8 weight-only: one byte per element + one BF16 scale per output channel.
TEST(StorageBytes, Int8WeightOnlyBf16Scales) {
  // [4096, 4096]: 16,777,216 + 4096 x 2 = 8,192 -> 16,785,408, i.e. 1.0005 B per weight
  // against BF16's 2: half the bytes, + 1/4096 for the scales.
  EXPECT_EQ(bytes({4096, 4096}, matrix_format(WeightPrecision::int8_w8a16)), 16'777'216 + 8'192);
  // [14336, 4096] (a Llama-3 gate_proj): 58,720,256 + 14,336 x 2 = 58,748,928.
  EXPECT_EQ(bytes({14336, 4096}, matrix_format(WeightPrecision::int8_w8a16)), 58'748'928);
}

// NVFP4: per row ceil(in/16) blocks of 16 E2M1 values (8 bytes) + one F8_E4M3 scale
// byte, and one F32 per-tensor scale per matrix:
//   bytes = rows x ceil(in/16) x (8 + 1) + 4 x matrices = elements x (0.5 + 1/16) + 4.
TEST(StorageBytes, Nvfp4BlockAndTensorScales) {
  const StorageFormat nvfp4 = matrix_format(WeightPrecision::nvfp4);
  // [4096, 4096]: 4096 x 4096 x 0.5 = 8,388,608 + 4096 x 4096 / 16 = 1,048,576 + 4 = 9,437,188.
  EXPECT_EQ(bytes({4096, 4096}, nvfp4), 8'388'608 + 1'048'576 + 4);
  // A partial block rounds up: [2, 20] -> 2 blocks per row: 2 x 2 x 9 + 4 = 40.
  EXPECT_EQ(bytes({2, 20}, nvfp4), 40);
  // Fused experts [8, 4096, 14336]: one tensor scale per expert: 8 x 4096 x 896 blocks
  // x 9 = 264,241,152 + 8 x 4 = 32.
  EXPECT_EQ(bytes({8, 4096, 14336}, nvfp4), 264'241'152 + 32);
}

TEST(WeightPrecisions, NamesRoundTrip) {
  for (WeightPrecision p : kAllPrecisions) EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_EQ(parse_precision("int8"), WeightPrecision::int8);
  EXPECT_EQ(parse_precision("int8_w8a16"), WeightPrecision::int8_w8a16);
  EXPECT_EQ(parse_precision("nvfp4"), WeightPrecision::nvfp4);
  EXPECT_FALSE(parse_precision("w8a8"));
  EXPECT_FALSE(parse_precision("NVFP4"));
}

TEST(StorageBytes, Fp8PerTensorScale) {
  EXPECT_EQ(bytes({1024, 1024}, {StorageKind::fp8_tensor, DType::f8_e4m3}), 1024 * 1024 + 4);
}

TEST(StorageBytes, OverflowThrows) {
  EXPECT_THROW(bytes({1LL << 40, 1LL << 40}, StorageFormat::plain_of(DType::bf16)), std::overflow_error);
  EXPECT_THROW(core::checked_add(INT64_MAX, 1), std::overflow_error);
}

TEST(ModulePatterns, MatchAtDotBoundaries) {
  EXPECT_TRUE(matches_module_pattern("model.layers.3.self_attn.q_proj.weight", "model.layers.*.self_attn"));
  EXPECT_TRUE(matches_module_pattern("lm_head.weight", "lm_head"));
  EXPECT_TRUE(matches_module_pattern("model.layers.2.mlp.gate.weight", "model.layers.2.mlp.gate"));
  // "mlp.gate" must not cover "mlp.gate_proj".
  EXPECT_FALSE(matches_module_pattern("model.layers.2.mlp.gate_proj.weight", "model.layers.2.mlp.gate"));
  EXPECT_FALSE(matches_module_pattern("model.layers.12.mlp.gate.weight", "model.layers.1.mlp.gate"));
  EXPECT_FALSE(matches_module_pattern("model.embed_tokens.weight", "lm_head"));
}
