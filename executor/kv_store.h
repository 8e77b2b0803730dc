#pragma once
// Where a KV cache's rows live (executor/kv_cache.h): one layer's pool of key or value
// rows in the cache's dtype (plan::KvDtype), on the host (HostKvStore, the CPU
// backend's) or on a device (Backend::make_kv_store: the CUDA backend keeps the cache
// where its attention kernels read it, and writes new rows from tensors that are
// already there, so a decode step moves no context through the host).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "executor/tensor.h"
#include "plan/plan.h"

namespace dayzero::executor {

class KvStore {
 public:
  virtual ~KvStore() = default;
  // Room for `rows` rows (kept values stay; new rows are zero).
  virtual void resize(int64_t rows) = 0;
  // Rows [first, first + slots.size()) of `src` ([.., width] floats) into `slots`,
  // converted to the store's dtype (rounded to nearest even).
  virtual void store(std::span<const int64_t> slots, const Tensor& src, int64_t first) = 0;
  // The rows at `slots` as floats into `out` ([slots.size(), width], host memory).
  virtual void load(std::span<const int64_t> slots, float* out) const = 0;
  // The float32 rows themselves in host memory (a host float32 store), else null.
  virtual const float* host_f32() const { return nullptr; }
};

// The CPU's: a vector of the dtype's elements.
class HostKvStore final : public KvStore {
 public:
  HostKvStore(plan::KvDtype dtype, int64_t width) : dtype_(dtype), width_(width) {}
  void resize(int64_t rows) override;
  void store(std::span<const int64_t> slots, const Tensor& src, int64_t first) override;
  void load(std::span<const int64_t> slots, float* out) const override;
  const float* host_f32() const override { return dtype_ == plan::KvDtype::fp32 ? f32_.data() : nullptr; }

 private:
  void store_row(int64_t slot, const float* x);
  plan::KvDtype dtype_;
  int64_t width_;
  std::vector<float> f32_;
  std::vector<uint16_t> bf16_;
  std::vector<uint8_t> fp8_;
};

// A backend's store maker: null (the CPU) for host stores.
using KvStoreMaker = std::unique_ptr<KvStore> (*)(plan::KvDtype dtype, int64_t width);

}  // namespace dayzero::executor
