#include "cuda/kv_store.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/staging.h"

namespace dayzero::cuda {

namespace {
int dtype_code(plan::KvDtype d) {
  switch (d) {
    case plan::KvDtype::fp32: return 0;
    case plan::KvDtype::bf16: return 1;
    case plan::KvDtype::fp8: return 2;
  }
  return 0;
}
size_t elem_bytes(plan::KvDtype d) { return static_cast<size_t>(plan::kv_elem_bytes(d)); }
}  // namespace

CudaKvStore::CudaKvStore(plan::KvDtype dtype, int64_t width) : dtype_(dtype), width_(width) {
  if (width <= 0) throw std::invalid_argument("CudaKvStore: rows of " + std::to_string(width) + " values");
}

void CudaKvStore::resize(int64_t rows) {
  if (rows <= capacity_) {
    rows_ = std::max(rows_, rows);
    return;
  }
  const int64_t capacity = std::max(rows, capacity_ + capacity_ / 2);
  const size_t row_bytes = static_cast<size_t>(width_) * elem_bytes(dtype_);
  DeviceBuffer grown = staging::scratch(static_cast<size_t>(capacity) * row_bytes, DeviceUse::kv_cache);
  const size_t kept = static_cast<size_t>(rows_) * row_bytes;
  if (kept > 0) grown.copy_from(pool_, kept);
  grown.zero(kept, static_cast<size_t>(capacity) * row_bytes - kept);
  pool_ = std::move(grown);
  capacity_ = capacity;
  rows_ = rows;
}

void CudaKvStore::store(std::span<const int64_t> slots, const executor::Tensor& src, int64_t first) {
  const auto n = static_cast<int64_t>(slots.size());
  if (src.cols() != width_ || first < 0 || first + n > src.rows())
    throw std::invalid_argument("KvStore::store: rows [" + std::to_string(first) + ", " + std::to_string(first + n) +
                                ") of " + src.shape_string() + " into rows of " + std::to_string(width_));
  for (const int64_t s : slots)
    if (s < 0 || s >= rows_)
      throw std::out_of_range("KvStore::store: slot " + std::to_string(s) + " of " + std::to_string(rows_));
  if (n == 0) return;
  kv_scatter(staging::on_device(src), first, width_, staging::upload(slots), n, dtype_code(dtype_), pool_, rows_);
}

void CudaKvStore::gather(const DeviceBuffer& slots, int64_t n, DeviceBuffer& out, int64_t stride,
                         int64_t offset) const {
  kv_gather(pool_, rows_, width_, dtype_code(dtype_), slots, n, out, stride, offset);
}

void CudaKvStore::load(std::span<const int64_t> slots, float* out) const {
  const auto n = static_cast<int64_t>(slots.size());
  if (n == 0) return;
  DeviceBuffer rows = staging::scratch(static_cast<size_t>(n * width_) * sizeof(float));
  gather(staging::upload(slots), n, rows, width_, 0);
  rows.download(out, static_cast<size_t>(n * width_) * sizeof(float));
}

std::unique_ptr<executor::KvStore> make_kv_store(plan::KvDtype dtype, int64_t width) {
  return std::make_unique<CudaKvStore>(dtype, width);
}

}  // namespace dayzero::cuda
