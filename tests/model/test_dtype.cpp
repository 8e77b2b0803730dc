// Bytes of a tensor in each storage format, scales included, against hand arithmetic.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/arith.h"
#include "model/dtype.h"
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
