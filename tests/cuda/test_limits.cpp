// The GPU's measured limits (cuda/limits.h): event timing and the copy and GEMM
// figures are sane, and bad arguments are errors, not launches.
#include <gtest/gtest.h>

#include "cuda/limits.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

// A copy of 64 MiB moves 128 MiB of HBM traffic in a positive time, below 20 TB/s
// (no HBM of 2026 reaches it: H200 4.8 TB/s, B300 8 TB/s by the datasheets).
TEST(CudaLimits, CopyBandwidthIsMeasuredWithEvents) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  const Measured m = measure_copy(pool, int64_t{64} << 20, 1, 3);
  EXPECT_EQ(m.bytes, int64_t{128} << 20);
  EXPECT_EQ(m.iterations, 3);
  EXPECT_GT(m.mean_s, 0);
  EXPECT_GT(m.bytes_per_s(), 1e9);
  EXPECT_LT(m.bytes_per_s(), 20e12);
  EXPECT_EQ(pool.live_bytes(), 0);  // the buffers are gone
}

TEST(CudaLimits, ReferenceGemmCountsTwoFlopsPerMultiplyAdd) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  const Measured m = measure_reference_gemm(pool, 256, 128, 64, 1, 2);
  EXPECT_DOUBLE_EQ(m.flops, 2.0 * 256 * 128 * 64);
  EXPECT_GT(m.flops_per_s(), 0);
}

TEST(CudaLimits, BlasGemmsAreTimed) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  for (const GemmInputs in : {GemmInputs::bf16, GemmInputs::fp8}) {
    const Measured m = measure_blas_gemm(pool, in, 256, 256, 256, 1, 2);
    EXPECT_DOUBLE_EQ(m.flops, 2.0 * 256 * 256 * 256);
    EXPECT_GT(m.flops_per_s(), 0);
  }
}

TEST(CudaLimits, BadArgumentsAreErrors) {
  DAYZERO_NEED_GPU();
  DevicePool pool;
  EXPECT_THROW(measure_copy(pool, 0, 1, 1), CudaError);
  EXPECT_THROW(measure_copy(pool, 1024, 1, 0), CudaError);
  EXPECT_THROW(measure_reference_gemm(pool, 0, 1, 1, 0, 1), CudaError);
}

}  // namespace
}  // namespace dayzero::cuda
