// cuBLASLt GEMMs (cuda/gemm.h) against the product of the same BF16 / FP8 values
// taken in double on the host: the layout (row-major y = x W^T) and the scales are
// right when every element agrees within float32 accumulation's rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/gemm.h"
#include "executor/quantize.h"
#include "executor/weights.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

template <class T>
DeviceBuffer upload(DevicePool& pool, const std::vector<T>& v) {
  DeviceBuffer b(pool, v.size() * sizeof(T));
  b.upload(v.data(), b.bytes());
  return b;
}

float value(size_t i, float scale) { return scale * std::sin(0.37f * static_cast<float>(i) + 0.1f); }

// want[r][c] = scale * sum_j x[r][j] w[c][j] in double, within `rel` of the sum of
// |terms|: float32 accumulation's k ulps for BF16; 2^-11 for FP8, whose Hopper tensor
// cores keep about 14 bits of the sum before cuBLASLt promotes it to float32
// (DeepSeek-V3 technical report, 3.3.2): a few roundings of 2^-13 each (the H200
// measured 2.5e-4 of the sum of |terms| at k = 64, two of them).
void expect_product(const std::vector<float>& got, const std::vector<double>& xs, const std::vector<double>& ws,
                    int64_t m, int64_t n, int64_t k, double scale, double rel) {
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double want = 0, magnitude = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double t = xs[static_cast<size_t>(r * k + j)] * ws[static_cast<size_t>(c * k + j)];
        want += t;
        magnitude += std::abs(t);
      }
      const double tol = rel * magnitude * scale + 1e-30;
      EXPECT_NEAR(got[static_cast<size_t>(r * n + c)], scale * want, tol) << "row " << r << " col " << c;
    }
}

// `count` E4M3 codes of value(i + offset, scale), and the values they stand for.
void fp8_operand(int64_t count, size_t offset, float scale, std::vector<uint8_t>& codes, std::vector<double>& values) {
  codes.resize(static_cast<size_t>(count));
  values.resize(codes.size());
  for (size_t i = 0; i < codes.size(); ++i)
    values[i] = executor::fp8_e4m3_to_float(codes[i] = executor::float_to_fp8_e4m3(value(i + offset, scale)));
}

TEST(CudaGemm, Bf16MatchesTheProductOfItsInputs) {
  DAYZERO_NEED_GPU();
  const int64_t m = 33, n = 64, k = 96;
  std::vector<uint16_t> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k));
  std::vector<double> xs(x.size()), ws(w.size());
  for (size_t i = 0; i < x.size(); ++i) xs[i] = executor::bf16_to_float(x[i] = executor::float_to_bf16(value(i, 1.5f)));
  for (size_t i = 0; i < w.size(); ++i)
    ws[i] = executor::bf16_to_float(w[i] = executor::float_to_bf16(value(i + 7, 0.8f)));
  DevicePool pool;
  Blas blas(pool);
  DeviceBuffer dx = upload(pool, x), dw = upload(pool, w), dy(pool, static_cast<size_t>(m * n) * sizeof(float));
  blas.gemm_bf16(dx, dw, dy, m, n, k);
  std::vector<float> y(static_cast<size_t>(m * n));
  dy.download(y.data(), dy.bytes());
  expect_product(y, xs, ws, m, n, k, 1.0, static_cast<double>(k) * 1.2e-7);
}

// Per-tensor scales multiply the product: x's 0.5 and W's 0.25 give 1/8 of it.
TEST(CudaGemm, Fp8AppliesBothScales) {
  DAYZERO_NEED_GPU();
  const int64_t m = 20, n = 48, k = 64;
  std::vector<uint8_t> x, w;
  std::vector<double> xs, ws;
  fp8_operand(m * k, 0, 300, x, xs);
  fp8_operand(n * k, 3, 2, w, ws);
  DevicePool pool;
  Blas blas(pool);
  DeviceBuffer dx = upload(pool, x), dw = upload(pool, w), dy(pool, static_cast<size_t>(m * n) * sizeof(float));
  DeviceBuffer sx = upload(pool, std::vector<float>{0.5f}), sw = upload(pool, std::vector<float>{0.25f});
  blas.gemm_fp8(dx, sx, dw, sw, dy, m, n, k);
  std::vector<float> y(static_cast<size_t>(m * n));
  dy.download(y.data(), dy.bytes());
  expect_product(y, xs, ws, m, n, k, 0.125, 1.0 / 2048);
}

// DeepSeek-V3's W8A8 (Blas::gemm_fp8_blocks): x's scales per row and 128 columns,
// W's per 128 x 128 block (the last block of rows partial, 320 = 2.5 x 128), each
// group's product scaled by both; the layouts are cuBLASLt's (x's scales m-major, W's
// padded to 4 column blocks), as the cuBLAS documentation's scaling-factor layouts are
// read here: this test is what confirms the reading on a GPU.
TEST(CudaGemm, Fp8BlocksScaleEachGroupByItsRowsAndBlocksScales) {
  DAYZERO_NEED_GPU();
  const int64_t m = 8, n = 320, k = 256, groups = k / 128, w_blocks = (n + 127) / 128, padded = 4;
  std::vector<uint8_t> x, w;
  std::vector<double> xs, ws;
  fp8_operand(m * k, 0, 300, x, xs);
  fp8_operand(n * k, 3, 2, w, ws);
  std::vector<float> x_scales(static_cast<size_t>(groups * m)), w_scales(static_cast<size_t>(w_blocks * padded), 1.0f);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t r = 0; r < m; ++r) x_scales[static_cast<size_t>(g * m + r)] = 0.5f + 0.25f * static_cast<float>(r + g);
  for (int64_t b = 0; b < w_blocks; ++b)
    for (int64_t g = 0; g < groups; ++g)
      w_scales[static_cast<size_t>(b * padded + g)] = 0.125f * static_cast<float>(b + 2 * g + 1);
  DevicePool pool;
  Blas blas(pool);
  DeviceBuffer dx = upload(pool, x), dw = upload(pool, w), dy(pool, static_cast<size_t>(m * n) * sizeof(float));
  DeviceBuffer sx = upload(pool, x_scales), sw = upload(pool, w_scales);
  try {
    blas.gemm_fp8_blocks(dx, sx, dw, sw, dy, m, n, k);
  } catch (const CudaError& e) {
    FAIL() << "cuBLASLt refused block scaling (Hopper and cuBLAS 12.9 or later have it): " << e.what();
  }
  std::vector<float> y(static_cast<size_t>(m * n));
  dy.download(y.data(), dy.bytes());
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double want = 0, magnitude = 0;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t g = j / 128;
        const double t = xs[static_cast<size_t>(r * k + j)] * ws[static_cast<size_t>(c * k + j)] *
                         x_scales[static_cast<size_t>(g * m + r)] *
                         w_scales[static_cast<size_t>((c / 128) * padded + g)];
        want += t;
        magnitude += std::abs(t);
      }
      EXPECT_NEAR(y[static_cast<size_t>(r * n + c)], want, magnitude / 2048 + 1e-30) << "row " << r << " col " << c;
    }
  EXPECT_THROW(blas.gemm_fp8_blocks(dx, sx, dw, sw, dy, 6, n, k), CudaError);  // m not a multiple of 4
}

TEST(CudaGemm, ShapesTheBuffersCannotHoldAreErrors) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  Blas blas(pool);
  DeviceBuffer a(pool, 64), b(pool, 64), y(pool, 64), s(pool, 4);
  EXPECT_THROW(blas.gemm_bf16(a, b, y, 8, 8, 8), CudaError);       // 128 bytes of x needed
  EXPECT_THROW(blas.gemm_fp8(a, s, b, s, y, 1, 4, 8), CudaError);  // k not a multiple of 16
}

}  // namespace
}  // namespace dayzero::cuda
