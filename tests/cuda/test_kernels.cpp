// The CUDA kernels against the CPU backend's (executor/kernels.h) on the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda/kernels.h"
#include "executor/kernels.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

TEST(CudaKernels, RmsNormMatchesTheCpuKernel) {
  DAYZERO_NEED_GPU();
  const int64_t rows = 37, n = 1000;  // n not a multiple of the block: the stride loop's tail
  executor::Tensor x({rows, n});
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < x.numel(); ++i) x.data[static_cast<size_t>(i)] = std::sin(0.01f * static_cast<float>(i));
  for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(i)] = 0.5f + 0.001f * static_cast<float>(i);
  DevicePool pool;
  DeviceBuffer dx(pool, x.data.size() * sizeof(float)), dw(pool, w.size() * sizeof(float));
  dx.upload(x.data.data(), dx.bytes());
  dw.upload(w.data(), dw.bytes());
  rms_norm_f32(dx, dw, rows, n, 1e-6);
  std::vector<float> got(x.data.size());
  dx.download(got.data(), dx.bytes());
  executor::rms_norm(x, w, 1e-6);
  // Both sum squares in double; the order differs, so the float results may differ in
  // their last bit: within 2 ulp (2.4e-7 relative).
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], x.data[i], 2.4e-7 * std::abs(x.data[i]) + 1e-30) << i;
  // Run to run: the same bits.
  dx.upload(std::vector<float>(x.data.size(), 0.25f).data(), dx.bytes());
  rms_norm_f32(dx, dw, rows, n, 1e-6);
  std::vector<float> a(got.size()), b(got.size());
  dx.download(a.data(), dx.bytes());
  dx.upload(std::vector<float>(x.data.size(), 0.25f).data(), dx.bytes());
  rms_norm_f32(dx, dw, rows, n, 1e-6);
  dx.download(b.data(), dx.bytes());
  EXPECT_EQ(a, b);
  EXPECT_THROW(rms_norm_f32(dx, dw, rows + 1, n, 1e-6), CudaError);  // more groups than the buffer holds
}

}  // namespace
}  // namespace dayzero::cuda
