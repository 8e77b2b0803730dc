#include "cuda/device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "cuda/check.cuh"

namespace dayzero::cuda {

using detail::check;

CudaDevices probe_cuda() {
  CudaDevices d;
  cudaRuntimeGetVersion(&d.runtime_version);
  cudaDriverGetVersion(&d.driver_version);
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    d.why_none = e != cudaSuccess ? cudaGetErrorString(e) : "the CUDA runtime sees no device";
    (void)cudaGetLastError();  // clear the sticky error for later calls
    return d;
  }
  d.count = n;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess) {
    d.name = p.name;
    d.compute_major = p.major;
    d.compute_minor = p.minor;
  }
  size_t free_b = 0, total_b = 0;
  int current = 0;
  const bool had = cudaGetDevice(&current) == cudaSuccess;
  if (cudaSetDevice(0) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    d.free_bytes = static_cast<int64_t>(free_b);
    d.total_bytes = static_cast<int64_t>(total_b);
  }
  if (had) cudaSetDevice(current);  // the caller's device stays its own (a rank on device k)
  return d;
}

int64_t device_used_bytes(int device) {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) return 0;
  size_t free_b = 0, total_b = 0;
  const bool ok = cudaSetDevice(device) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess;
  cudaSetDevice(current);
  return ok ? static_cast<int64_t>(total_b - free_b) : 0;
}

namespace detail {
namespace {
thread_local double t_kernel_seconds = 0;
struct ClockEvents {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~ClockEvents() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};
thread_local ClockEvents t_events;
thread_local bool t_clock_on = true;  // set_kernel_clock
}  // namespace

KernelClock::KernelClock() {
  if (!t_clock_on) return;  // not timing: the launch runs asynchronously
  if (!t_events.start &&
      (cudaEventCreate(&t_events.start) != cudaSuccess || cudaEventCreate(&t_events.stop) != cudaSuccess))
    return;  // no clock: the launch itself reports the error
  armed_ = cudaEventRecord(t_events.start, nullptr) == cudaSuccess;
}

KernelClock::~KernelClock() {
  float ms = 0;
  if (armed_ && cudaEventRecord(t_events.stop, nullptr) == cudaSuccess &&
      cudaEventSynchronize(t_events.stop) == cudaSuccess &&
      cudaEventElapsedTime(&ms, t_events.start, t_events.stop) == cudaSuccess)
    t_kernel_seconds += static_cast<double>(ms) * 1e-3;
}
}  // namespace detail

void set_kernel_clock(bool on) { detail::t_clock_on = on; }

namespace {
thread_local cudaEvent_t t_span_start = nullptr, t_span_stop = nullptr;
}  // namespace

void begin_kernel_span() {
  if (!t_span_start) {
    detail::check(cudaEventCreate(&t_span_start), "cudaEventCreate");
    detail::check(cudaEventCreate(&t_span_stop), "cudaEventCreate");
  }
  detail::check(cudaEventRecord(t_span_start, nullptr), "cudaEventRecord");
}

double end_kernel_span() {
  if (!t_span_start) throw CudaError("end_kernel_span: no span begun on this thread");
  float ms = 0;
  detail::check(cudaEventRecord(t_span_stop, nullptr), "cudaEventRecord");
  detail::check(cudaEventSynchronize(t_span_stop), "cudaEventSynchronize");
  detail::check(cudaEventElapsedTime(&ms, t_span_start, t_span_stop), "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e-3;
}

double take_kernel_seconds() {
  const double s = detail::t_kernel_seconds;
  detail::t_kernel_seconds = 0;
  return s;
}

namespace {
// A workspace block's size class: 512-byte steps up to 1 MiB, 2 MiB steps above (a
// block serves any request of its class, wasting less than a step).
size_t size_class(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20, kSmallLimit = size_t{1} << 20;
  const size_t step = bytes <= kSmallLimit ? kSmall : kLarge;
  return (bytes + step - 1) / step * step;
}
}  // namespace

DevicePool::DevicePool(int device) : device_(device) { check(cudaSetDevice(device), "cudaSetDevice"); }

DevicePool::~DevicePool() { trim(); }

void DevicePool::trim() noexcept {
  if (cache_.empty()) return;
  int current = 0;
  const bool had = cudaGetDevice(&current) == cudaSuccess;
  cudaSetDevice(device_);
  for (const auto& [size, p] : cache_) cudaFree(p);
  cache_.clear();
  cached_ = 0;
  if (had) cudaSetDevice(current);
}

void* DevicePool::allocate(size_t bytes, DeviceUse use) {
  void* p = nullptr;
  const bool cached = use != DeviceUse::weights;
  const size_t block = cached ? size_class(bytes) : bytes;
  const auto it = cached && bytes > 0 ? cache_.find(block) : cache_.end();
  if (it != cache_.end()) {  // a freed block of the same class
    p = it->second;
    cache_.erase(it);
    cached_ -= static_cast<int64_t>(block);
  } else if (bytes > 0) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    if (cudaMalloc(&p, block) != cudaSuccess) {  // out of memory: the cache back to the device, once more
      (void)cudaGetLastError();
      trim();
      check(cudaMalloc(&p, block), "cudaMalloc");
    }
  }
  const auto n = static_cast<int64_t>(bytes);
  const auto u = static_cast<size_t>(use);
  live_ += n;
  peak_ = std::max(peak_, live_);
  use_live_[u] += n;
  use_peak_[u] = std::max(use_peak_[u], use_live_[u]);
  return p;
}

void DevicePool::release(void* p, size_t bytes, DeviceUse use) noexcept {
  if (p && use != DeviceUse::weights) {
    try {
      const size_t block = size_class(bytes);
      cache_.emplace(block, p);
      cached_ += static_cast<int64_t>(block);
    } catch (...) {  // no room on the host for the entry: the block goes back
      cudaFree(p);
    }
  } else if (p) {
    cudaFree(p);
  }
  live_ -= static_cast<int64_t>(bytes);
  use_live_[static_cast<size_t>(use)] -= static_cast<int64_t>(bytes);
}

DeviceBuffer::DeviceBuffer(DevicePool& pool, size_t bytes, DeviceUse use)
    : pool_(&pool), ptr_(pool.allocate(bytes, use)), bytes_(bytes), use_(use) {}

DeviceBuffer::~DeviceBuffer() {
  if (pool_) pool_->release(ptr_, bytes_, use_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : pool_(std::exchange(o.pool_, nullptr)),
      ptr_(std::exchange(o.ptr_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      use_(o.use_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (pool_) pool_->release(ptr_, bytes_, use_);
    pool_ = std::exchange(o.pool_, nullptr);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    use_ = o.use_;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_)
    throw CudaError("DeviceBuffer::upload: " + std::to_string(bytes) + " bytes into " + std::to_string(bytes_));
  check(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)");
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_)
    throw CudaError("DeviceBuffer::download: " + std::to_string(bytes) + " bytes from " + std::to_string(bytes_));
  check(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
}

void DeviceBuffer::copy_from(const DeviceBuffer& src, size_t bytes) {
  if (bytes > bytes_ || bytes > src.bytes_)
    throw CudaError("DeviceBuffer::copy_from: " + std::to_string(bytes) + " bytes from " + std::to_string(src.bytes_) +
                    " into " + std::to_string(bytes_));
  // The legacy default stream, as every kernel: in order with the kernels before and after.
  check(cudaMemcpyAsync(ptr_, src.ptr_, bytes, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync (device to device)");
}

void DeviceBuffer::copy_range(const DeviceBuffer& src, size_t src_at, size_t at, size_t bytes) {
  if (src_at > src.bytes_ || bytes > src.bytes_ - src_at || at > bytes_ || bytes > bytes_ - at)
    throw CudaError("DeviceBuffer::copy_range: bytes [" + std::to_string(src_at) + ", +" + std::to_string(bytes) +
                    ") of " + std::to_string(src.bytes_) + " into [" + std::to_string(at) + ", +" +
                    std::to_string(bytes) + ") of " + std::to_string(bytes_));
  if (bytes == 0) return;
  check(cudaMemcpyAsync(static_cast<char*>(ptr_) + at, static_cast<const char*>(src.ptr_) + src_at, bytes,
                        cudaMemcpyDeviceToDevice, 0),
        "cudaMemcpyAsync (device to device)");
}

PinnedRing::PinnedRing(size_t bytes) : size_(bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), "cudaHostAlloc (the upload ring)");
  base_ = static_cast<char*>(p);
}

PinnedRing::~PinnedRing() {
  (void)cudaStreamSynchronize(nullptr);  // no copy still reads the ring (errors: the context is going anyway)
  (void)cudaFreeHost(base_);
}

bool PinnedRing::copy(DeviceBuffer& dst, const void* host, size_t bytes) {
  if (bytes > size_) return false;
  if (bytes > dst.bytes())
    throw CudaError("PinnedRing::copy: " + std::to_string(bytes) + " bytes into " + std::to_string(dst.bytes()));
  if (bytes == 0) return true;
  if (at_ + bytes > size_) {  // every copy queued from the ring has run: it is free again
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize (the upload ring is full)");
    at_ = 0;
  }
  std::memcpy(base_ + at_, host, bytes);
  check(cudaMemcpyAsync(dst.data(), base_ + at_, bytes, cudaMemcpyHostToDevice, nullptr),
        "cudaMemcpyAsync (host to device, through the upload ring)");
  constexpr size_t kAlign = 256;  // each copy starts on its own 256-byte line
  at_ += (bytes + kAlign - 1) / kAlign * kAlign;
  return true;
}

void DeviceBuffer::zero(size_t from, size_t bytes) {
  if (from + bytes > bytes_)
    throw CudaError("DeviceBuffer::zero: bytes [" + std::to_string(from) + ", " + std::to_string(from + bytes) +
                    ") of " + std::to_string(bytes_));
  if (bytes > 0) check(cudaMemsetAsync(static_cast<char*>(ptr_) + from, 0, bytes, 0), "cudaMemsetAsync");
}

}  // namespace dayzero::cuda
