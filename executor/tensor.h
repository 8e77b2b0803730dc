#pragma once
// Tensors of the CPU backend: float32, row-major, with a shape. The last dim is
// the contiguous one ("cols"); all others together are "rows".

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

namespace dayzero::executor {

// Tensor storage counts what it holds, so that a run measures its activation memory
// (the CPU analogue of a device pool's high-water mark): the bytes every Tensor of the
// process holds now, and the most since reset_tensor_peak().
int64_t tensor_bytes_live();
int64_t tensor_bytes_peak();
void reset_tensor_peak();  // the peak restarts from what is live now
void set_tensor_peak(int64_t bytes);

// The most tensor bytes a scope adds above what was live when it began, kept in
// `*most` when larger (a run's activations: one scope per forward step).
class TensorPeakScope {
 public:
  explicit TensorPeakScope(int64_t* most) : most_(most), base_(tensor_bytes_live()) { reset_tensor_peak(); }
  ~TensorPeakScope() { *most_ = std::max(*most_, tensor_bytes_peak() - base_); }
  TensorPeakScope(const TensorPeakScope&) = delete;
  TensorPeakScope& operator=(const TensorPeakScope&) = delete;

 private:
  int64_t* most_;
  int64_t base_;
};
// Leaves what a scope allocates out of the peak (a timer's repeats of an op and the
// copies they work on: measuring, not running).
class TensorPeakExcluded {
 public:
  TensorPeakExcluded() : saved_(tensor_bytes_peak()) {}
  ~TensorPeakExcluded() { set_tensor_peak(std::max(saved_, tensor_bytes_live())); }
  TensorPeakExcluded(const TensorPeakExcluded&) = delete;
  TensorPeakExcluded& operator=(const TensorPeakExcluded&) = delete;

 private:
  int64_t saved_;
};

namespace detail {
void count_tensor_bytes(int64_t delta);
}
template <class T>
struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <class U>
  CountingAllocator(const CountingAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    T* p = std::allocator<T>().allocate(n);
    detail::count_tensor_bytes(static_cast<int64_t>(n * sizeof(T)));
    return p;
  }
  void deallocate(T* p, size_t n) noexcept {
    detail::count_tensor_bytes(-static_cast<int64_t>(n * sizeof(T)));
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const CountingAllocator<U>&) const noexcept {
    return true;
  }
};
using TensorStorage = std::vector<float, CountingAllocator<float>>;

}  // namespace dayzero::executor

#include "executor/tensor_values.h"

namespace dayzero::executor {

struct Tensor {
  std::vector<int64_t> shape;
  // The values: on the host, or held by a device backend between its kernels
  // (tensor_values.h); reading them here brings them back.
  TensorValues data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> s);                      // zeros
  Tensor(std::vector<int64_t> s, const std::vector<float>& d);  // throws if sizes disagree

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const { return cols() == 0 ? 0 : numel() / cols(); }
  float* row(int64_t r) { return data.data() + r * cols(); }
  const float* row(int64_t r) const { return data.data() + r * cols(); }
  std::string shape_string() const;  // "[12, 64]"
};

int64_t shape_elems(std::span<const int64_t> shape);  // throws on a negative dim
std::string shape_string(std::span<const int64_t> shape);

}  // namespace dayzero::executor
