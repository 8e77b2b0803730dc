#pragma once
// What this GPU reaches, measured as nccl-tests measures a collective: warm-up calls
// first (untimed), then timed iterations between two CUDA events on one stream, and
// the figure from the mean. These are the limits the executor's ops are set against
// (issue 19: HBM copy bandwidth, GEMM FLOP/s). Plain C++, no CUDA header.

#include <cstdint>

#include "cuda/device.h"

namespace dayzero::cuda {

// Device time between two points of the default stream, from a pair of CUDA events
// (RAII: created here, destroyed with the timer).
class EventTimer {
 public:
  EventTimer();  // throws CudaError
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start();        // records the first event
  double elapsed_s();  // records the second, waits for it, returns the time between them

 private:
  void* start_ = nullptr;  // cudaEvent_t
  void* stop_ = nullptr;
};

struct Measured {
  int64_t bytes = 0;   // per call: moved (copies: read + written)
  double flops = 0;    // per call (GEMMs)
  int iterations = 0;  // timed calls
  double mean_s = 0;   // per call
  double bytes_per_s() const { return mean_s > 0 ? static_cast<double>(bytes) / mean_s : 0; }
  double flops_per_s() const { return mean_s > 0 ? flops / mean_s : 0; }
};

// Device-to-device copies of `bytes` (cudaMemcpyAsync) between two buffers of the
// pool: HBM traffic of 2 x bytes per copy (each byte read once and written once).
Measured measure_copy(DevicePool& pool, int64_t bytes, int warmup, int iterations);

// The reference GEMM (kernels.h gemm_f32_reference) at m x n x k: 2 m n k FLOPs per
// call. What the backend's own kernel reaches, not the tensor cores' peak.
Measured measure_reference_gemm(DevicePool& pool, int64_t m, int64_t n, int64_t k, int warmup, int iterations);

// cuBLASLt's tensor-core GEMM (cuda/gemm.h) at m x n x k, BF16 or FP8 E4M3 inputs
// (zeros: the time does not depend on the values), float32 out: the peak the
// executor's GEMMs are set against.
enum class GemmInputs { bf16, fp8 };
Measured measure_blas_gemm(DevicePool& pool, GemmInputs in, int64_t m, int64_t n, int64_t k, int warmup,
                           int iterations);

}  // namespace dayzero::cuda
