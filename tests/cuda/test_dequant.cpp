// FP8 with 128 x 128 block scales on the device (cuda/dequant.h): into BF16 bit for
// bit what the CPU computes (code x scale in float32, rounded to nearest even), and the
// decode GEMV over the codes as stored against the CPU's product. The decoders the
// kernels share (cuda/fp8.cuh) are checked on the host, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cuda/dequant.h"
#include "cuda/fp8.cuh"
#include "executor/kernels.h"
#include "executor/quantize.h"
#include "executor/weights.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

// 200 x 300 codes (every finite E4M3 code, repeated) in blocks of 128: 2 x 3 scales,
// the last row and column of blocks partial, as real checkpoints' edges are; 300
// columns take the kernel's element-by-element path, 296 its eight-at-a-time one.
TEST(CudaDequant, Fp8BlocksToBf16MatchTheCpuBitForBit) {
  DAYZERO_NEED_GPU();
  for (const int64_t cols : {300, 296}) {
    const int64_t rows = 200, block = 128;
    std::vector<uint8_t> codes(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < codes.size(); ++i) {
      auto c = static_cast<uint8_t>((i * 7) % 256);
      if ((c & 0x7F) == 0x7F) c = 0x3C;  // not the NaN codes
      codes[i] = c;
    }
    const std::vector<float> scales{1.0f, 0.013f, 3.5e-4f, 2.25f, 7.0f / 448, 1e-6f};
    DevicePool pool;
    DeviceBuffer dc(pool, codes.size()), ds(pool, scales.size() * sizeof(float)), out(pool, codes.size() * 2);
    dc.upload(codes.data(), dc.bytes());
    ds.upload(scales.data(), ds.bytes());
    fp8_block_to_bf16(dc, ds, rows, cols, block, block, out);
    std::vector<uint16_t> got(codes.size());
    out.download(got.data(), out.bytes());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = static_cast<size_t>(r * cols + c);
        const float scale = scales[static_cast<size_t>((r / block) * 3 + c / block)];
        ASSERT_EQ(got[i], executor::float_to_bf16(executor::fp8_e4m3_to_float(codes[i]) * scale))
            << cols << " columns: " << r << ", " << c;
      }
  }
}

// Every E4M3 code decodes as the CPU decodes it (NaN to NaN), and BF16 rounds as the
// CPU rounds: the device kernels' own functions, run here on the host.
TEST(CudaDequant, DeviceDecodersAreTheCpusOnTheHost) {
  for (int c = 0; c < 256; ++c) {
    const float want = executor::fp8_e4m3_to_float(static_cast<uint8_t>(c));
    const float got = fp8::e4m3_value(static_cast<uint8_t>(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(fp8::to_bits(got), fp8::to_bits(want)) << c;  // -0 too
    }
  }
  for (const float v : {0.0f, -0.0f, 1.0f, 1.00390625f, 1.005859375f, -3.14159f, 1e-40f, 3.0e38f, 65504.0f,
                        std::numeric_limits<float>::infinity(), std::nanf("")}) {
    EXPECT_EQ(fp8::bf16_bits(v), executor::float_to_bf16(v)) << v;
    EXPECT_EQ(fp8::to_bits(fp8::bf16_value(fp8::bf16_bits(v))) >> 16, fp8::bf16_bits(v)) << v;
  }
}

// The device's FP8 E4M3 rounding (a KV cache written on the device: cuda/kv.cu) gives the
// CPU's codes: every code's value and the midpoints between neighbours (ties to the even
// code), values past 448 (saturated), subnormals, signs, NaN; run here on the host.
TEST(CudaDequant, DeviceFp8RoundingIsTheCpus) {
  std::vector<float> values = {0.0f,         -0.0f, 448.0f, 449.0f,  464.0f,
                               1e6f,         -1e6f, 1e-12f, -1e-12f, std::numeric_limits<float>::infinity(),
                               std::nanf("")};
  for (int c = 0; c < 0x7F; ++c) {
    const float v = executor::fp8_e4m3_to_float(static_cast<uint8_t>(c));
    const float next = executor::fp8_e4m3_to_float(static_cast<uint8_t>(c + 1));
    values.insert(values.end(), {v, -v, (v + next) / 2, -(v + next) / 2, v * 1.01f, v * 0.99f});
  }
  for (const float v : values) EXPECT_EQ(fp8::e4m3_code(v), executor::float_to_fp8_e4m3(v)) << v;
}

// The decode GEMV reads the codes where they lie: 1 to 8 rows of BF16-rounded
// activations against the CPU's linear of the same rounded values (dequantized weights,
// float32 sums in another order: within their rounding bound), with and without a bias; 300 x 384
// codes in blocks of 128, the last row of blocks partial.
TEST(CudaDequant, Fp8GemvMatchesTheCpusProduct) {
  DAYZERO_NEED_GPU();
  const int64_t n = 300, k = 384, block = 128;
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  for (size_t i = 0; i < codes.size(); ++i) {
    auto c = static_cast<uint8_t>((i * 13 + i / 7) % 256);
    codes[i] = (c & 0x7F) == 0x7F ? 0x42 : c;  // not the NaN codes
  }
  const std::vector<float> scales{0.01f, 0.002f, 0.5f, 1e-3f, 0.03f, 0.25f, 0.007f, 0.04f, 0.0009f};  // 3 x 3
  executor::StoredWeight w;
  w.name = "fp8";
  w.kind = model::StorageKind::fp8_block;
  w.shape = {n, k};
  w.data = std::as_bytes(std::span<const uint8_t>(codes));
  w.scales = std::as_bytes(std::span<const float>(scales));
  std::vector<uint8_t> codes_abs(codes.size());  // |W|: the sign bit cleared
  for (size_t i = 0; i < codes.size(); ++i) codes_abs[i] = codes[i] & 0x7F;
  executor::StoredWeight w_abs = w;
  w_abs.data = std::as_bytes(std::span<const uint8_t>(codes_abs));
  std::vector<float> bias(static_cast<size_t>(n));
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * std::cos(static_cast<float>(i));
  DevicePool pool;
  DeviceBuffer dc(pool, codes.size()), ds(pool, scales.size() * sizeof(float)), db(pool, bias.size() * 4);
  dc.upload(codes.data(), dc.bytes());
  ds.upload(scales.data(), ds.bytes());
  db.upload(bias.data(), db.bytes());
  for (const int64_t m : {1, 3, 8}) {
    executor::Tensor x({m, k});
    std::vector<uint16_t> xb(static_cast<size_t>(m * k));
    for (size_t i = 0; i < xb.size(); ++i) {
      xb[i] = executor::float_to_bf16(2.0f * std::sin(0.11f * static_cast<float>(i)));
      x.data[i] = executor::bf16_to_float(xb[i]);
    }
    DeviceBuffer dx(pool, xb.size() * 2), dy(pool, static_cast<size_t>(m * n) * 4);
    dx.upload(xb.data(), dx.bytes());
    for (const bool with_bias : {false, true}) {
      fp8_block_gemv(dx, m, dc, ds, n, k, block, block, with_bias ? &db : nullptr, dy);
      std::vector<float> got(static_cast<size_t>(m * n));
      dy.download(got.data(), dy.bytes());
      const executor::Tensor want =
          executor::linear_dequant(x, w, 0, with_bias ? std::span<const float>(bias) : std::span<const float>());
      // Two float32 sums of k products in different orders: within 2 k u of the sum of
      // their magnitudes (u = 2^-24; Higham 3.1), |x| times |W| with biases of |b|.
      executor::Tensor x_abs = x;
      for (float& v : x_abs.data) v = std::abs(v);
      std::vector<float> bias_abs(bias.size());
      for (size_t i = 0; i < bias.size(); ++i) bias_abs[i] = std::abs(bias[i]);
      const executor::Tensor magnitude = executor::linear_dequant(
          x_abs, w_abs, 0, with_bias ? std::span<const float>(bias_abs) : std::span<const float>());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want.data[i],
                    2.0 * static_cast<double>(k + 1) * std::ldexp(1.0, -24) * magnitude.data[i] + 1e-6)
            << m << " rows, " << i;
    }
  }
  DeviceBuffer dx(pool, 9 * k * 2), dy(pool, 9 * n * 4);
  EXPECT_THROW(fp8_block_gemv(dx, 9, dc, ds, n, k, block, block, nullptr, dy), CudaError);    // 9 rows
  EXPECT_THROW(fp8_block_gemv(dx, 1, dc, ds, n, 376, block, block, nullptr, dy), CudaError);  // k % 16
  EXPECT_FALSE(fp8_gemv_fits(1, 384, 100));
  EXPECT_TRUE(fp8_gemv_fits(8, 7168, 128));
}

TEST(CudaDequant, BuffersTooSmallAreErrors) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  DeviceBuffer codes(pool, 256), scales(pool, 4), out(pool, 512);
  EXPECT_THROW(fp8_block_to_bf16(codes, scales, 16, 32, 128, 128, out), CudaError);  // 512 codes needed
  EXPECT_THROW(fp8_block_to_bf16(codes, scales, 16, 16, 0, 128, out), CudaError);
}

// W8A8's activations (fp8_quantize_rows): per row and 128 columns, scale = largest |x|
// / 448 and codes e4m3(x / scale), the host's rule value for value; scales m_pad-major;
// the padding rows zero with scale 1. And the weights' block scales padded to 4 columns.
TEST(CudaDequant, Fp8RowsQuantizeAsTheHostRuleAndScalesPad) {
  DAYZERO_NEED_GPU();
  const int64_t m = 5, k = 256, m_pad = 8, groups = k / kFp8ScaleBlock;
  std::vector<float> x(static_cast<size_t>(m * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.61f * static_cast<float>(i)) * static_cast<float>(1 + i % 7);
  for (int64_t j = 128; j < 256; ++j) x[static_cast<size_t>(2 * k + j)] = 0;  // an all-zero group: scale 1
  DevicePool pool;
  DeviceBuffer dx(pool, x.size() * sizeof(float)), codes(pool, static_cast<size_t>(m_pad * k)),
      scales(pool, static_cast<size_t>(groups * m_pad) * sizeof(float));
  dx.upload(x.data(), dx.bytes());
  fp8_quantize_rows(dx, m, k, m_pad, codes, scales);
  std::vector<uint8_t> got_codes(static_cast<size_t>(m_pad * k));
  std::vector<float> got_scales(static_cast<size_t>(groups * m_pad));
  codes.download(got_codes.data(), codes.bytes());
  scales.download(got_scales.data(), scales.bytes());
  for (int64_t r = 0; r < m_pad; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      float amax = 0;
      for (int64_t j = 0; j < 128; ++j)
        if (r < m) amax = std::max(amax, std::abs(x[static_cast<size_t>(r * k + g * 128 + j)]));
      const float scale = amax > 0 ? amax / 448.0f : 1.0f;
      ASSERT_EQ(got_scales[static_cast<size_t>(g * m_pad + r)], scale) << "row " << r << " group " << g;
      for (int64_t j = 0; j < 128; ++j) {
        const int64_t c = g * 128 + j;
        const float v = r < m ? x[static_cast<size_t>(r * k + c)] : 0.0f;
        ASSERT_EQ(got_codes[static_cast<size_t>(r * k + c)], fp8::e4m3_code(v / scale)) << "row " << r << " col " << c;
      }
    }
  const std::vector<float> block_scales{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // 2 x 5 blocks
  DeviceBuffer bs(pool, block_scales.size() * sizeof(float)), padded(pool, 2 * 8 * sizeof(float));
  bs.upload(block_scales.data(), bs.bytes());
  EXPECT_EQ(fp8_padded_scale_cols(5), 8);
  fp8_pad_block_scales(bs, 2, 5, padded);
  std::vector<float> p(16);
  padded.download(p.data(), padded.bytes());
  EXPECT_EQ(p, (std::vector<float>{1, 2, 3, 4, 5, 1, 1, 1, 6, 7, 8, 9, 10, 1, 1, 1}));
  EXPECT_THROW(fp8_quantize_rows(dx, m, 200, m_pad, codes, scales), CudaError);  // k not a multiple of 128
}

}  // namespace
}  // namespace dayzero::cuda
