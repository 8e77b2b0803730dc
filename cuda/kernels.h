#pragma once
// The CUDA backend's kernels, on buffers of a DevicePool (cuda/device.h). Each
// follows the CPU kernel of the same op (executor/kernels.h) in what it computes;
// results agree within the summation order's rounding (tests/cuda).

#include <cstdint>

#include "cuda/device.h"

namespace dayzero::cuda {

// RMSNorm of `groups` groups of `n` floats each (one per row, or per head):
// x * rsqrt(mean(x^2) + eps) * w, in place. The sum of squares is taken in double
// in a fixed tree order per group (one block per group), so the result is the same
// run to run. Throws CudaError when the launch fails.
void rms_norm_f32(DeviceBuffer& x, const DeviceBuffer& w, int64_t groups, int64_t n, double eps);

}  // namespace dayzero::cuda
