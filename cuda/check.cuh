#pragma once
// The CUDA library's own error checks, for cuda/*.cu only (a .cuh: it includes the
// CUDA runtime's header, which no cuda/*.h may): a failed runtime call or kernel
// launch becomes a CudaError naming the call and the runtime's message.

#include <cuda_runtime.h>

#include <string>

#include "cuda/device.h"

namespace dayzero::cuda::detail {

inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw CudaError(std::string(call) + ": " + cudaGetErrorString(e));
}

// After a launch: the launch's own error (bad configuration, no device).
inline void check_launch(const char* what) { check(cudaGetLastError(), (std::string(what) + " launch").c_str()); }

// Device time of one launcher's work: CUDA events on the default stream around its
// kernels (after its inputs are on the device, before its results leave), waited for
// when it goes and added to this thread's take_kernel_seconds() (cuda/device.h).
// Every launcher declares one after checking its arguments. Inert while the thread's
// kernel clock is off (set_kernel_clock): the launcher returns without waiting.
class KernelClock {
 public:
  KernelClock();
  ~KernelClock();
  KernelClock(const KernelClock&) = delete;
  KernelClock& operator=(const KernelClock&) = delete;

 private:
  bool armed_ = false;
};

}  // namespace dayzero::cuda::detail
