// FP8 with 128 x 128 block scales into BF16 on the device (cuda/dequant.h): bit for
// bit what the CPU computes (code x scale in float32, rounded to nearest even).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/dequant.h"
#include "executor/quantize.h"
#include "executor/weights.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

// 200 x 300 codes (every finite E4M3 code, repeated) in blocks of 128: 2 x 3 scales,
// the last row and column of blocks partial, as real checkpoints' edges are.
TEST(CudaDequant, Fp8BlocksToBf16MatchTheCpuBitForBit) {
  DAYZERO_NEED_GPU();
  const int64_t rows = 200, cols = 300, block = 128;
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
      ASSERT_EQ(got[i], executor::float_to_bf16(executor::fp8_e4m3_to_float(codes[i]) * scale)) << r << ", " << c;
    }
}

TEST(CudaDequant, BuffersTooSmallAreErrors) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  DeviceBuffer codes(pool, 256), scales(pool, 4), out(pool, 512);
  EXPECT_THROW(fp8_block_to_bf16(codes, scales, 16, 32, 128, 128, out), CudaError);  // 512 codes needed
  EXPECT_THROW(fp8_block_to_bf16(codes, scales, 16, 16, 0, 128, out), CudaError);
}

}  // namespace
}  // namespace dayzero::cuda
