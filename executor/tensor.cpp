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

Tensor::Tensor(std::vector<int64_t> s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {
  if (shape_elems(shape) != numel())
    throw std::invalid_argument("tensor of shape " + executor::shape_string(shape) + " given " +
                                std::to_string(numel()) + " values");
}

std::string Tensor::shape_string() const { return executor::shape_string(shape); }

}  // namespace dayzero::executor
