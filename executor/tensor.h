#pragma once
// Tensors of the CPU backend: float32, row-major, with a shape. The last dim is
// the contiguous one ("cols"); all others together are "rows".

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dayzero::executor {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> s);               // zeros
  Tensor(std::vector<int64_t> s, std::vector<float> d);  // throws if sizes disagree

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
