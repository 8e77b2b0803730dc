#include "cuda/kernels.h"

#include <cuda_runtime.h>

#include <string>

namespace dayzero::cuda {

namespace {
constexpr int kThreads = 256;  // one block per group; a power of two for the tree reduction

__global__ void rms_norm_kernel(float* x, const float* w, int64_t n, double eps) {
  __shared__ double partial[kThreads];
  float* row = x + static_cast<int64_t>(blockIdx.x) * n;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) sum += static_cast<double>(row[i]) * row[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = static_cast<float>(1.0 / sqrt(partial[0] / static_cast<double>(n) + eps));
  for (int64_t i = threadIdx.x; i < n; i += kThreads) row[i] = w[i] * (row[i] * inv);
}
}  // namespace

void rms_norm_f32(DeviceBuffer& x, const DeviceBuffer& w, int64_t groups, int64_t n, double eps) {
  const auto need = static_cast<size_t>(groups * n) * sizeof(float);
  if (groups < 0 || n <= 0 || x.bytes() < need || w.bytes() < static_cast<size_t>(n) * sizeof(float))
    throw CudaError("rms_norm_f32: " + std::to_string(groups) + " groups of " + std::to_string(n) +
                    " floats do not fit buffers of " + std::to_string(x.bytes()) + " and " + std::to_string(w.bytes()) +
                    " bytes");
  if (groups == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(groups), kThreads>>>(static_cast<float*>(x.data()),
                                                               static_cast<const float*>(w.data()), n, eps);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw CudaError(std::string("rms_norm_f32 launch: ") + cudaGetErrorString(e));
}

}  // namespace dayzero::cuda
