#include "executor/kv_store.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "executor/quantize.h"
#include "executor/weights.h"

namespace dayzero::executor {

void HostKvStore::resize(int64_t rows) {
  const auto n = static_cast<size_t>(rows * width_);
  switch (dtype_) {
    case plan::KvDtype::fp32: f32_.resize(n); return;
    case plan::KvDtype::bf16: bf16_.resize(n); return;
    case plan::KvDtype::fp8: fp8_.resize(n); return;
  }
}

void HostKvStore::store_row(int64_t slot, const float* x) {
  const auto at = static_cast<size_t>(slot * width_);
  switch (dtype_) {
    case plan::KvDtype::fp32: std::copy_n(x, width_, f32_.data() + at); return;
    case plan::KvDtype::bf16:
      for (int64_t i = 0; i < width_; ++i) bf16_[at + static_cast<size_t>(i)] = float_to_bf16(x[i]);
      return;
    case plan::KvDtype::fp8:
      for (int64_t i = 0; i < width_; ++i) fp8_[at + static_cast<size_t>(i)] = float_to_fp8_e4m3(x[i]);
      return;
  }
}

void HostKvStore::store(std::span<const int64_t> slots, const Tensor& src, int64_t first) {
  if (src.cols() != width_ || first < 0 || first + static_cast<int64_t>(slots.size()) > src.rows())
    throw std::invalid_argument("KvStore::store: rows [" + std::to_string(first) + ", " +
                                std::to_string(first + static_cast<int64_t>(slots.size())) + ") of " +
                                src.shape_string() + " into rows of " + std::to_string(width_));
  for (size_t i = 0; i < slots.size(); ++i) store_row(slots[i], src.row(first + static_cast<int64_t>(i)));
}

void HostKvStore::load(std::span<const int64_t> slots, float* out) const {
  const auto& table = fp8_e4m3_table();
  for (size_t r = 0; r < slots.size(); ++r) {
    const auto at = static_cast<size_t>(slots[r] * width_);
    float* o = out + static_cast<int64_t>(r) * width_;
    switch (dtype_) {
      case plan::KvDtype::fp32: std::copy_n(f32_.data() + at, width_, o); break;
      case plan::KvDtype::bf16:
        for (int64_t i = 0; i < width_; ++i) o[i] = bf16_to_float(bf16_[at + static_cast<size_t>(i)]);
        break;
      case plan::KvDtype::fp8:
        for (int64_t i = 0; i < width_; ++i) o[i] = table[fp8_[at + static_cast<size_t>(i)]];
        break;
    }
  }
}

}  // namespace dayzero::executor
