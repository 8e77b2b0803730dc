#include "executor/tensor.h"

#include <stdexcept>

namespace dayzero::executor {

int64_t shape_elems(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("tensor shape " + shape_string(shape) + " has a negative dim");
    n *= d;
  }
  return n;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor::Tensor(std::vector<int64_t> s) : shape(std::move(s)), data(static_cast<size_t>(shape_elems(shape)), 0.0f) {}

Tensor::Tensor(std::vector<int64_t> s, const std::vector<float>& d) : shape(std::move(s)), data(d.begin(), d.end()) {
  if (shape_elems(shape) != numel())
    throw std::invalid_argument("tensor of shape " + executor::shape_string(shape) + " given " +
                                std::to_string(numel()) + " values");
}

namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
}  // namespace

namespace detail {
void count_tensor_bytes(int64_t delta) {
  const int64_t now = g_live.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace detail

int64_t tensor_bytes_live() { return g_live.load(std::memory_order_relaxed); }
int64_t tensor_bytes_peak() { return g_peak.load(std::memory_order_relaxed); }
void set_tensor_peak(int64_t bytes) { g_peak.store(bytes, std::memory_order_relaxed); }
void reset_tensor_peak() { g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed); }

std::string Tensor::shape_string() const { return executor::shape_string(shape); }

}  // namespace dayzero::executor
