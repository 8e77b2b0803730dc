#pragma once
// The CUDA backend's KV cache (executor/kv_store.h): each layer's key and value rows in
// the cache's dtype in device memory (DeviceUse::kv_cache), written from tensors where
// they lie (a decode step's new keys come from the device, not the host), read by the
// attention kernels through the sequence's slots without leaving the device.
// Backend::make_kv_store for "cuda". No CUDA header.

#include <memory>
#include <span>

#include "cuda/device.h"
#include "executor/kv_store.h"

namespace dayzero::cuda {

class CudaKvStore final : public executor::KvStore {
 public:
  CudaKvStore(plan::KvDtype dtype, int64_t width);
  // Grows by half again at least (a copy on the device each time): a run that extends
  // its sequences a block at a time reallocates a few dozen times, not per block.
  void resize(int64_t rows) override;
  void store(std::span<const int64_t> slots, const executor::Tensor& src, int64_t first) override;
  void load(std::span<const int64_t> slots, float* out) const override;
  // The rows at `slots` (n int64 on the device) as float32 into `out` at
  // out[i * stride + offset + e].
  void gather(const DeviceBuffer& slots, int64_t n, DeviceBuffer& out, int64_t stride, int64_t offset) const;
  int64_t width() const { return width_; }

 private:
  plan::KvDtype dtype_;
  int64_t width_, rows_ = 0, capacity_ = 0;
  DeviceBuffer pool_;
};

// Backend::make_kv_store of the CUDA backend.
std::unique_ptr<executor::KvStore> make_kv_store(plan::KvDtype dtype, int64_t width);

}  // namespace dayzero::cuda
