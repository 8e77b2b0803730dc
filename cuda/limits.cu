#include "cuda/limits.h"

#include <cuda_runtime.h>

#include <string>

#include "cuda/check.cuh"
#include "cuda/gemm.h"
#include "cuda/kernels.h"

namespace dayzero::cuda {

using detail::check;

namespace {
cudaEvent_t event(void* e) { return static_cast<cudaEvent_t>(e); }

void check_counts(int warmup, int iterations, const char* what) {
  if (warmup < 0 || iterations < 1)
    throw CudaError(std::string(what) + ": " + std::to_string(warmup) + " warm-up and " + std::to_string(iterations) +
                    " timed calls (need >= 0 and >= 1)");
}

// Runs `call` warmup times, then `iterations` times between the timer's events.
template <class Call>
double mean_time_s(int warmup, int iterations, Call call) {
  for (int i = 0; i < warmup; ++i) call();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after the warm-up)");
  EventTimer t;
  t.start();
  for (int i = 0; i < iterations; ++i) call();
  return t.elapsed_s() / iterations;
}
}  // namespace

EventTimer::EventTimer() {
  cudaEvent_t a = nullptr, b = nullptr;
  check(cudaEventCreate(&a), "cudaEventCreate");
  if (const cudaError_t e = cudaEventCreate(&b); e != cudaSuccess) {
    cudaEventDestroy(a);
    check(e, "cudaEventCreate");
  }
  start_ = a;
  stop_ = b;
}

EventTimer::~EventTimer() {
  cudaEventDestroy(event(start_));
  cudaEventDestroy(event(stop_));
}

void EventTimer::start() { check(cudaEventRecord(event(start_)), "cudaEventRecord"); }

double EventTimer::elapsed_s() {
  check(cudaEventRecord(event(stop_)), "cudaEventRecord");
  check(cudaEventSynchronize(event(stop_)), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, event(start_), event(stop_)), "cudaEventElapsedTime");
  return 1e-3 * static_cast<double>(ms);
}

Measured measure_copy(DevicePool& pool, int64_t bytes, int warmup, int iterations) {
  check_counts(warmup, iterations, "measure_copy");
  if (bytes <= 0) throw CudaError("measure_copy: " + std::to_string(bytes) + " bytes");
  DeviceBuffer src(pool, static_cast<size_t>(bytes)), dst(pool, static_cast<size_t>(bytes));
  check(cudaMemset(src.data(), 1, static_cast<size_t>(bytes)), "cudaMemset");
  Measured m;
  m.bytes = 2 * bytes;
  m.iterations = iterations;
  m.mean_s = mean_time_s(warmup, iterations, [&] {
    check(cudaMemcpyAsync(dst.data(), src.data(), static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice),
          "cudaMemcpyAsync (device to device)");
  });
  return m;
}

Measured measure_reference_gemm(DevicePool& pool, int64_t m, int64_t n, int64_t k, int warmup, int iterations) {
  check_counts(warmup, iterations, "measure_reference_gemm");
  if (m <= 0 || n <= 0 || k <= 0)
    throw CudaError("measure_reference_gemm: " + std::to_string(m) + " x " + std::to_string(n) + " x " +
                    std::to_string(k));
  const auto f = sizeof(float);
  DeviceBuffer x(pool, static_cast<size_t>(m * k) * f), w(pool, static_cast<size_t>(n * k) * f),
      y(pool, static_cast<size_t>(m * n) * f);
  check(cudaMemset(x.data(), 0, x.bytes()), "cudaMemset");
  check(cudaMemset(w.data(), 0, w.bytes()), "cudaMemset");
  Measured r;
  r.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  r.bytes = static_cast<int64_t>(x.bytes() + w.bytes() + y.bytes());
  r.iterations = iterations;
  r.mean_s = mean_time_s(warmup, iterations, [&] { gemm_f32_reference(x, w, y, m, n, k); });
  return r;
}

Measured measure_blas_gemm(DevicePool& pool, GemmInputs in, int64_t m, int64_t n, int64_t k, int warmup,
                           int iterations) {
  check_counts(warmup, iterations, "measure_blas_gemm");
  if (m <= 0 || n <= 0 || k <= 0)
    throw CudaError("measure_blas_gemm: " + std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
  const size_t e = in == GemmInputs::bf16 ? 2 : 1;
  DeviceBuffer x(pool, static_cast<size_t>(m * k) * e), w(pool, static_cast<size_t>(n * k) * e),
      y(pool, static_cast<size_t>(m * n) * sizeof(float)), scale(pool, sizeof(float));
  check(cudaMemset(x.data(), 0, x.bytes()), "cudaMemset");
  check(cudaMemset(w.data(), 0, w.bytes()), "cudaMemset");
  const float one = 1;
  scale.upload(&one, sizeof one);
  Blas blas(pool);
  Measured r;
  r.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  r.bytes = static_cast<int64_t>(x.bytes() + w.bytes() + y.bytes());
  r.iterations = iterations;
  r.mean_s = mean_time_s(warmup, iterations, [&] {
    if (in == GemmInputs::bf16) blas.gemm_bf16(x, w, y, m, n, k);
    else blas.gemm_fp8(x, scale, w, scale, y, m, n, k);
  });
  return r;
}

}  // namespace dayzero::cuda
