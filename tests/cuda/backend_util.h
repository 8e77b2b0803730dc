#pragma once
// What the CUDA backend's tests share (test_backend.cpp, test_backend_weights.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda/backend.h"
#include "executor/registry.h"
#include "executor/tensor.h"

namespace dayzero::cuda::testing {

using executor::Tensor;

inline std::vector<float> wave(size_t n, float scale, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}
inline const executor::Backend& cuda_backend() {
  register_cuda_backend();
  return executor::find_backend("cuda");
}
// The backend with no device weights left from an earlier test (their host bytes may
// sit where this test's are): what a run's start does.
inline const executor::Backend& fresh_cuda_backend() {
  const executor::Backend& be = cuda_backend();
  be.begin_run();
  return be;
}
// |got - want| <= rel |want| + floor, element by element.
inline void expect_close(const Tensor& got, const Tensor& want, double rel, const char* what, double floor = 1e-6) {
  ASSERT_EQ(got.shape, want.shape) << what;
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.data[i], want.data[i], rel * std::abs(want.data[i]) + floor) << what << " " << i;
}

// Two float32 sums of the same k products in different orders (the device's and the
// CPU's) differ by at most 2 k u times the sum of the products' magnitudes (u = 2^-24;
// Higham, Accuracy and Stability of Numerical Algorithms, 3.1: |error| <= k u sum|t|
// each). `magnitude` holds that sum per element: the product of |x| and |W|.
// `weight_rounding` is the relative error of each weight as the device multiplies it
// (0: the CPU's own values; 2^-8: dequantized to BF16 first), which adds at most that
// fraction of the same sum.
inline void expect_within_sum_bound(const Tensor& got, const Tensor& want, const Tensor& magnitude, int64_t k,
                                    const char* what, double weight_rounding = 0.0) {
  ASSERT_EQ(got.shape, want.shape) << what;
  ASSERT_EQ(magnitude.shape, want.shape) << what;
  const double u = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.data[i], want.data[i],
                (2.0 * static_cast<double>(k) * u + weight_rounding) * magnitude.data[i] + 1e-6)
        << what << " " << i;
}

}  // namespace dayzero::cuda::testing
