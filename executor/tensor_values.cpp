#include <atomic>
#include <stdexcept>
#include <string>

#include "executor/tensor.h"

namespace dayzero::executor {

namespace {
std::atomic<int64_t> g_downloads{0};
}  // namespace

// A copy brings the values to the host only where they are there already; the device
// copy is shared (immutable once shared: tensor_values.h).
TensorValues::TensorValues(const TensorValues& o)
    : host_(o.host_valid_ ? o.host_ : TensorStorage{}),
      device_(o.device_),
      size_(o.size_),
      host_valid_(o.host_valid_) {}

TensorValues& TensorValues::operator=(const TensorValues& o) {
  if (this != &o) {
    host_ = o.host_valid_ ? o.host_ : TensorStorage{};
    device_ = o.device_;
    size_ = o.size_;
    host_valid_ = o.host_valid_;
  }
  return *this;
}

TensorValues::TensorValues(TensorValues&& o) noexcept
    : host_(std::move(o.host_)), device_(std::move(o.device_)), size_(o.size_), host_valid_(o.host_valid_) {
  o.size_ = 0;
  o.host_.clear();
  o.host_valid_ = true;
}

TensorValues& TensorValues::operator=(TensorValues&& o) noexcept {
  if (this != &o) {
    host_ = std::move(o.host_);
    device_ = std::move(o.device_);
    size_ = o.size_;
    host_valid_ = o.host_valid_;
    o.size_ = 0;
    o.host_.clear();
    o.host_valid_ = true;
  }
  return *this;
}

void TensorValues::append(const float* first, const float* last) {
  sync();
  device_.reset();
  host_.insert(host_.end(), first, last);
  size_ = host_.size();
}

void TensorValues::set_device(std::shared_ptr<DeviceValues> d) { set_device(std::move(d), size_); }

void TensorValues::set_device(std::shared_ptr<DeviceValues> d, size_t n) {
  if (!d) throw std::logic_error("TensorValues::set_device: no device values");
  device_ = std::move(d);
  size_ = n;
  TensorStorage().swap(host_);  // freed: the device's values are the tensor's now
  host_valid_ = false;
}

void TensorValues::share_device(std::shared_ptr<DeviceValues> d) const {
  if (!d) throw std::logic_error("TensorValues::share_device: no device values");
  if (!host_valid_) throw std::logic_error("TensorValues::share_device: the host's values are stale");
  device_ = std::move(d);
}

void TensorValues::download() const {
  if (!device_) throw std::logic_error("TensorValues: stale host values without a device copy");
  host_.resize(size_);
  if (size_ > 0) device_->download(host_.data(), size_);
  host_valid_ = true;
  g_downloads.fetch_add(1, std::memory_order_relaxed);
}

int64_t TensorValues::downloads() { return g_downloads.load(std::memory_order_relaxed); }

bool operator==(const TensorValues& a, const TensorValues& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

bool operator==(const TensorValues& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace dayzero::executor
