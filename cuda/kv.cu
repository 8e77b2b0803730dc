// The KV cache's rows on the device (cuda/kv_store.h): scattered into their slots in
// the cache's dtype, gathered back as float32 (cuda/kernels.h).
#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/fp8.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
using detail::check_launch;
constexpr int kThreads = 256;
unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// Element e of row r: src row first + r into pool slot slots[r], converted.
__global__ void kv_scatter_kernel(const float* src, int64_t width, const int64_t* slots, int64_t n, int dtype,
                                  void* pool) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * width) return;
  const int64_t r = i / width, e = i % width, at = slots[r] * width + e;
  const float x = src[i];
  if (dtype == 0) static_cast<float*>(pool)[at] = x;
  else if (dtype == 1) static_cast<uint16_t*>(pool)[at] = fp8::bf16_bits(x);
  else static_cast<uint8_t*>(pool)[at] = fp8::e4m3_code(x);
}

__global__ void kv_gather_kernel(const void* pool, int64_t width, const int64_t* slots, int64_t n, int dtype,
                                 float* out, int64_t stride, int64_t offset) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * width) return;
  const int64_t r = i / width, e = i % width, at = slots[r] * width + e;
  float x;
  if (dtype == 0) x = static_cast<const float*>(pool)[at];
  else if (dtype == 1) x = fp8::bf16_value(static_cast<const uint16_t*>(pool)[at]);
  else x = fp8::e4m3_value(static_cast<const uint8_t*>(pool)[at]);
  out[r * stride + offset + e] = x;
}

void need_rows(const DeviceBuffer& b, int64_t elems, size_t elem_bytes, const char* what, const char* which) {
  if (elems < 0 || b.bytes() < static_cast<size_t>(elems) * elem_bytes)
    throw CudaError(std::string(what) + ": " + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                    std::to_string(elems) + " elements of " + std::to_string(elem_bytes));
}
size_t kv_elem_bytes(int dtype) { return dtype == 0 ? 4 : dtype == 1 ? 2 : 1; }
}  // namespace

void kv_scatter(const DeviceBuffer& src, int64_t first, int64_t width, const DeviceBuffer& slots, int64_t n, int dtype,
                DeviceBuffer& pool, int64_t pool_rows) {
  need_rows(src, (first + n) * width, 4, "kv_scatter", "src");
  need_rows(slots, n, 8, "kv_scatter", "slots");
  need_rows(pool, pool_rows * width, kv_elem_bytes(dtype), "kv_scatter", "pool");
  if (n == 0 || width == 0) return;
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  kv_scatter_kernel<<<blocks_for(n * width), kThreads>>>(static_cast<const float*>(src.data()) + first * width, width,
                                                         static_cast<const int64_t*>(slots.data()), n, dtype,
                                                         pool.data());
  check_launch("kv_scatter");
}

void kv_gather(const DeviceBuffer& pool, int64_t pool_rows, int64_t width, int dtype, const DeviceBuffer& slots,
               int64_t n, DeviceBuffer& out, int64_t stride, int64_t offset) {
  need_rows(pool, pool_rows * width, kv_elem_bytes(dtype), "kv_gather", "pool");
  need_rows(slots, n, 8, "kv_gather", "slots");
  if (n == 0 || width == 0) return;
  need_rows(out, (n - 1) * stride + offset + width, 4, "kv_gather", "out");
  const detail::KernelClock clock;
  kv_gather_kernel<<<blocks_for(n * width), kThreads>>>(pool.data(), width, static_cast<const int64_t*>(slots.data()),
                                                        n, dtype, static_cast<float*>(out.data()), stride, offset);
  check_launch("kv_gather");
}

}  // namespace dayzero::cuda
