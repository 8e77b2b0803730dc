#pragma once
// A tensor's values, where they live (included by executor/tensor.h, after TensorStorage).
//
// On the CPU backend they are host floats, nothing more. A device backend keeps a
// kernel's result on the device (DeviceValues, owned by the backend: RAII over its
// allocation) and leaves the host copy stale, so the next kernel reads it where it
// lies and nothing between two kernels touches host memory. Reading the values on
// the host brings them back once (the forward's host glue, a test's comparison);
// writing them on the host (any non-const access) drops the device copy, which is
// stale from then on. The rules that keep this correct:
//   - const access (data() const, operator[] const, begin() const, a span of const
//     float from a const tensor) downloads when the host copy is stale and keeps both;
//   - non-const access downloads when stale and drops the device copy;
//   - a device backend that writes a tensor's values on the device calls
//     set_device(): the host storage is freed (a pointer taken before is dangling,
//     which ASan reports: hold no host pointer across a kernel call);
//   - copies share the device copy (immutable once shared: a backend writing in place
//     checks device_shared() and writes a copy of its own when another holds it).
// Not thread-safe for a first const access of a stale tensor from two threads at once
// (the host copy is made then): a tensor belongs to the thread of its rank.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

namespace dayzero::executor {

// A device backend's copy of a tensor's values (its allocation, freed with it).
class DeviceValues {
 public:
  virtual ~DeviceValues() = default;
  // Copies the first `count` values into `host`.
  virtual void download(float* host, size_t count) const = 0;
};

class TensorValues {
 public:
  using value_type = float;
  using iterator = float*;
  using const_iterator = const float*;
  using size_type = size_t;

  TensorValues() = default;
  TensorValues(size_t n, float v) : host_(n, v), size_(n) {}
  explicit TensorValues(size_t n) : TensorValues(n, 0.0f) {}
  TensorValues(std::initializer_list<float> v) : host_(v.begin(), v.end()), size_(v.size()) {}
  template <class It>
  TensorValues(It first, It last) : host_(first, last), size_(host_.size()) {}
  TensorValues(const TensorValues& o);
  TensorValues& operator=(const TensorValues& o);
  TensorValues(TensorValues&& o) noexcept;
  TensorValues& operator=(TensorValues&& o) noexcept;
  ~TensorValues() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const float* data() const {
    sync();
    return host_.data();
  }
  float* data() {
    sync();
    device_.reset();
    return host_.data();
  }
  const float& operator[](size_t i) const { return data()[i]; }
  float& operator[](size_t i) { return data()[i]; }
  const float* begin() const { return data(); }
  const float* end() const { return data() + size_; }
  float* begin() { return data(); }
  float* end() { return data() + size_; }
  template <class It>
  void assign(It first, It last) {
    device_.reset();
    host_.assign(first, last);
    size_ = host_.size();
    host_valid_ = true;
  }
  void assign(size_t n, float v) {
    device_.reset();
    host_.assign(n, v);
    size_ = n;
    host_valid_ = true;
  }
  // Appends [first, last) (host values, not this tensor's own).
  void append(const float* first, const float* last);

  // The device's side (device backends).
  const DeviceValues* device() const { return device_.get(); }
  const std::shared_ptr<DeviceValues>& device_ptr() const { return device_; }
  bool host_valid() const { return host_valid_; }
  // Another tensor shares the device copy: a backend must not write it in place.
  bool device_shared() const { return device_ && device_.use_count() > 1; }
  // The device holds the values now (a kernel wrote them there): the host copy goes.
  // `d` holds size() values (or `n`, which becomes the size).
  void set_device(std::shared_ptr<DeviceValues> d);
  void set_device(std::shared_ptr<DeviceValues> d, size_t n);
  // The device holds a copy of the host's values (an input uploaded): both stay valid.
  // Const: where a tensor lives is not its value.
  void share_device(std::shared_ptr<DeviceValues> d) const;

  // Values brought to the host since the process began (a device backend's downloads
  // through this class): the host traffic the glue between kernels causes.
  static int64_t downloads();

 private:
  void sync() const {
    if (!host_valid_) download();
  }
  void download() const;
  mutable TensorStorage host_;
  mutable std::shared_ptr<DeviceValues> device_;
  size_t size_ = 0;
  mutable bool host_valid_ = true;
};

bool operator==(const TensorValues& a, const TensorValues& b);
bool operator==(const TensorValues& a, const std::vector<float>& b);
// Tensor storage against plain values (tests, comparisons with a reference).
inline bool operator==(const TensorStorage& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace dayzero::executor
