// Scalar decoders and dequantization of every weight storage the CPU backend reads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "executor/weights.h"
#include "helpers.h"

namespace dayzero::executor {
namespace {
using model::DType;
using testing::raw;
using testing::write_file;

TEST(Decode, Bf16AndF16) {
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);                  // the top 16 bits of float 1.0 (0x3F800000)
  EXPECT_EQ(bf16_to_float(0xC000), -2.0f);                 // 0xC0000000
  EXPECT_EQ(bf16_to_float(0x3FC0), 1.5f);                  // 0x3FC00000
  EXPECT_EQ(f16_to_float(0x3C00), 1.0f);                   // exp 15 (bias 15), mantissa 0
  EXPECT_EQ(f16_to_float(0xC000), -2.0f);                  // sign, exp 16
  EXPECT_EQ(f16_to_float(0x7BFF), 65504.0f);               // largest normal: (2 - 2^-10) * 2^15
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal: 2^-14 * 2^-10
  EXPECT_TRUE(std::isinf(f16_to_float(0x7C00)));
}

TEST(Decode, Fp8E4M3) {
  EXPECT_EQ(fp8_e4m3_to_float(0x38), 1.0f);                  // 0 0111 000: 2^(7-7)
  EXPECT_EQ(fp8_e4m3_to_float(0x3C), 1.5f);                  // 0 0111 100: (1 + 4/8)
  EXPECT_EQ(fp8_e4m3_to_float(0xC0), -2.0f);                 // 1 1000 000: -2^(8-7)
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);                // 0 1111 110: (1 + 6/8) * 2^8, the E4M3 maximum
  EXPECT_EQ(fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // subnormal: 1/8 * 2^-6
  EXPECT_EQ(fp8_e4m3_to_float(0x00), 0.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7F)));  // S 1111 111 is NaN (no infinities in "fn")
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xFF)));
}

TEST(Decode, E2M1AndE8M0) {
  // E2M1: sign bit 3, exponent bits 2-1 (bias 1), mantissa bit 0.
  EXPECT_EQ(e2m1_to_float(0x0), 0.0f);
  EXPECT_EQ(e2m1_to_float(0x1), 0.5f);  // subnormal: 0.1b * 2^0
  EXPECT_EQ(e2m1_to_float(0x2), 1.0f);  // 01 0: 2^(1-1)
  EXPECT_EQ(e2m1_to_float(0x3), 1.5f);  // 01 1
  EXPECT_EQ(e2m1_to_float(0x5), 3.0f);  // 10 1: 1.5 * 2^1
  EXPECT_EQ(e2m1_to_float(0x7), 6.0f);  // 11 1: 1.5 * 2^2
  EXPECT_EQ(e2m1_to_float(0x9), -0.5f);
  EXPECT_EQ(e2m1_to_float(0xF), -6.0f);
  EXPECT_EQ(e8m0_to_float(127), 1.0f);  // 2^(127-127)
  EXPECT_EQ(e8m0_to_float(128), 2.0f);
  EXPECT_EQ(e8m0_to_float(120), 1.0f / 128.0f);
  EXPECT_EQ(e8m0_to_float(0), std::ldexp(1.0f, -127));
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
}

TEST(Dequantize, Fp8BlockScales) {
  // A [3, 4] weight in 2x2 blocks: scale_inv is [ceil(3/2), ceil(4/2)] = [2, 2].
  std::vector<uint8_t> codes(12, 0x38);  // all 1.0
  codes[0] = 0x40;                       // (0,0) = 2.0
  codes[11] = 0xC0;                      // (2,3) = -2.0
  const std::vector<float> scales = {0.5f, 2.0f, 4.0f, 0.25f};
  const auto path =
      write_file("fp8", {raw("w", DType::f8_e4m3, {3, 4}, codes), raw("w_scale_inv", DType::f32, {2, 2}, scales)});
  model::SafetensorsFile f(path);
  const StoredWeight w = find_weight(f, "w", 2, 2);
  EXPECT_EQ(w.kind, model::StorageKind::fp8_block);
  const Tensor t = dequantize(w);
  // value = fp8 * scale_inv of its block: rows 0-1 use scale row 0, row 2 scale row 1.
  const std::vector<float> expect = {2.0f * 0.5f, 0.5f, 2.0f,  2.0f,  //
                                     0.5f,        0.5f, 2.0f,  2.0f,  //
                                     4.0f,        4.0f, 0.25f, -2.0f * 0.25f};
  EXPECT_EQ(t.data, expect);
  // 128x128 blocks do not fit a [2, 2] scale tensor: a clear error.
  EXPECT_THROW(find_weight(f, "w"), std::runtime_error);
  std::filesystem::remove(path);
}

TEST(Dequantize, Mxfp4BlocksLowNibbleFirst) {
  // One expert, 2 rows of 32 columns: blocks [1, 2, 1, 16], scales [1, 2, 1].
  std::vector<uint8_t> blocks(32, 0x00);
  blocks[0] = 0x21;   // row 0: element 0 = low nibble 0x1 (0.5), element 1 = high nibble 0x2 (1.0)
  blocks[15] = 0x70;  // row 0: element 30 = 0x0 (0), element 31 = 0x7 (6.0)
  blocks[16] = 0xF7;  // row 1: element 0 = 0x7 (6.0), element 1 = 0xF (-6.0)
  const std::vector<uint8_t> scales = {128, 126};  // row 0: 2^1, row 1: 2^-1
  const auto path = write_file("mxfp4", {raw("e.gate_up_proj_blocks", DType::u8, {1, 2, 1, 16}, blocks),
                                         raw("e.gate_up_proj_scales", DType::u8, {1, 2, 1}, scales)});
  model::SafetensorsFile f(path);
  const StoredWeight w = find_weight(f, "e.gate_up_proj");
  EXPECT_EQ(w.kind, model::StorageKind::mxfp4);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{1, 2, 32}));
  const Tensor t = dequantize_matrix(w, 0);
  EXPECT_EQ(t.row(0)[0], 1.0f);  // 0.5 * 2
  EXPECT_EQ(t.row(0)[1], 2.0f);  // 1.0 * 2
  EXPECT_EQ(t.row(0)[2], 0.0f);
  EXPECT_EQ(t.row(0)[30], 0.0f);
  EXPECT_EQ(t.row(0)[31], 12.0f);  // 6.0 * 2
  EXPECT_EQ(t.row(1)[0], 3.0f);    // 6.0 * 0.5
  EXPECT_EQ(t.row(1)[1], -3.0f);   // -6.0 * 0.5
  EXPECT_THROW(find_weight(f, "absent"), std::runtime_error);
  std::filesystem::remove(path);
}

TEST(Dequantize, PackQuantizedInt4OffsetNibblesLowestFirst) {
  // compressed-tensors pack-quantized INT4: 2 rows of 16 inputs, group 8 -> packed I32 [2, 2],
  // scales BF16 [2, 2], shape I64 [2]. Each value is stored + 8, nibble j % 8 of word j / 8.
  // Row 0 word 0 = 0x000000F8: element 0 = 8 - 8 = 0, element 1 = 15 - 8 = 7, the rest 0 - 8 = -8.
  const std::vector<int32_t> packed = {0x000000F8, static_cast<int32_t>(0x88888888u), static_cast<int32_t>(0x88888889u),
                                       static_cast<int32_t>(0x8888888Fu)};
  const std::vector<uint16_t> scales = {0x3F00, 0x4000, 0x3F80, 0xBF80};  // 0.5, 2; 1, -1
  const std::vector<int64_t> shape = {2, 16};
  const auto path = write_file(
      "int4", {raw("x.weight_packed", DType::i32, {2, 2}, packed), raw("x.weight_scale", DType::bf16, {2, 2}, scales),
               raw("x.weight_shape", DType::i64, {2}, shape)});
  model::SafetensorsFile f(path);
  const StoredWeight w = find_weight(f, "x.weight");
  EXPECT_EQ(w.kind, model::StorageKind::int4_group);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(w.group, 8);
  const Tensor t = dequantize_matrix(w, 0);
  EXPECT_EQ(t.row(0)[0], 0.0f);
  EXPECT_EQ(t.row(0)[1], 3.5f);   // 7 * 0.5
  EXPECT_EQ(t.row(0)[2], -4.0f);  // -8 * 0.5
  EXPECT_EQ(t.row(0)[8], 0.0f);   // word 1: every nibble 8 -> 0
  EXPECT_EQ(t.row(1)[0], 1.0f);   // 9 - 8, scale 1
  EXPECT_EQ(t.row(1)[1], 0.0f);
  EXPECT_EQ(t.row(1)[8], -7.0f);  // 15 - 8 = 7, scale -1
  std::filesystem::remove(path);
  // A scale whose groups do not divide the inputs is refused, naming the tensor.
  const auto bad = write_file("int4_bad", {raw("x.weight_packed", DType::i32, {2, 2}, packed),
                                           raw("x.weight_scale", DType::bf16, {2, 3}, std::vector<uint16_t>(6, 0))});
  model::SafetensorsFile g(bad);
  EXPECT_THROW(find_weight(g, "x.weight"), std::runtime_error);
  std::filesystem::remove(bad);
  // A weight_shape that the packed words cannot hold (here the largest int64) is refused, not overflowed.
  const auto huge = write_file(
      "int4_huge",
      {raw("x.weight_packed", DType::i32, {2, 2}, packed), raw("x.weight_scale", DType::bf16, {2, 2}, scales),
       raw("x.weight_shape", DType::i64, {2}, std::vector<int64_t>{2, std::numeric_limits<int64_t>::max()})});
  model::SafetensorsFile h(huge);
  EXPECT_THROW(find_weight(h, "x.weight"), std::runtime_error);
  std::filesystem::remove(huge);
}

TEST(Dequantize, PlainBf16) {
  const std::vector<uint16_t> v = {0x3F80, 0xC000, 0x3FC0, 0x0000};
  const auto path = write_file("bf16", {raw("b", DType::bf16, {2, 2}, v)});
  model::SafetensorsFile f(path);
  EXPECT_EQ(dequantize(find_weight(f, "b")).data, (std::vector<float>{1.0f, -2.0f, 1.5f, 0.0f}));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dayzero::executor
