#pragma once
// The CUDA backend's view of this machine's GPUs, and device memory owned by RAII
// with a high-water mark (the device half of executor/tensor.h's counted storage).
// Plain C++: no CUDA header reaches a user of this file. The library links the CUDA
// runtime statically and never the driver library, so a binary that uses it starts
// on a machine with no GPU or driver; probe_cuda() then says why there is no device.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

namespace dayzero::cuda {

struct CudaDevices {
  int count = 0;            // devices the runtime sees; 0 when none
  std::string why_none;     // the runtime's reason when count is 0 ("no CUDA-capable device", ...)
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;   // 0 without a driver
  std::string name;         // device 0's
  int compute_major = 0, compute_minor = 0;
  int64_t total_bytes = 0, free_bytes = 0;  // device 0's memory
};
// Never throws: a machine without a GPU or driver is an answer, not an error.
CudaDevices probe_cuda();

// Bytes in use on `device` (cudaMemGetInfo: total less free, every process's and
// context's); 0 when it cannot be read. Leaves the caller's current device as it was.
int64_t device_used_bytes(int device);

// Seconds the device spent in this thread's kernel launchers (cuda/kernels.h, the
// GEMMs) since the last call, timed with CUDA events around each launcher's kernels:
// its inputs' uploads and its results' downloads are outside. The CUDA backend's
// op clock (executor Backend::device_seconds).
double take_kernel_seconds();
// Whether this thread's launchers time their kernels (on by default). Timing waits for
// each launcher's kernels; off, they run asynchronously in stream order and the host
// queues the next while the device works. A run turns it on only for the op timer's
// timed repeats (executor Backend::device_clock).
void set_kernel_clock(bool on);
// Back-to-back timing on this thread's legacy stream: a mark (an event), then the
// seconds from it to the end of what is queued after it (the event waited for).
void begin_kernel_span();
double end_kernel_span();

// A CUDA runtime call that failed: the call and the runtime's message.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a device allocation holds, for the memory the run measures by the simulator's
// categories: the run's weights (kept on the device for the run), its KV cache
// (cuda/kv_store.h), or a kernel's inputs, outputs and workspace and the tensors' values
// between kernels (executor/tensor_values.h).
enum class DeviceUse { workspace, weights, kv_cache };
inline constexpr size_t kDeviceUses = 3;

// Device allocations of one device, counted: what is live and the most ever live, in
// all and by use. A freed workspace or KV-cache block is kept for the next of its size
// class (512 B steps to 1 MiB, 2 MiB steps above) instead of going back to the device:
// cudaMalloc and cudaFree (which waits for the whole device) around every kernel's
// inputs and outputs took most of a decode step on the H200 (first GPU run: 12 ms a
// step, 1.6 ms of it kernels), and a sequence's gated delta-net state freed when the
// sequence leaves the batch waited so too. Weights are allocated and freed as they are. All
// kernels and copies run on the legacy default stream, in order, so a reused block
// is never written while an earlier kernel still reads it (NCCL's own stream is
// waited for before its buffers go).
class DevicePool {
 public:
  explicit DevicePool(int device = 0);  // throws CudaError when the device cannot be selected
  ~DevicePool();                        // the cached blocks go back to the device
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  int device() const { return device_; }
  // Freed workspace blocks kept for reuse: device memory held beyond live_bytes().
  int64_t cached_bytes() const { return cached_; }
  // Returns every cached block to the device (a run's start; cudaMalloc out of memory).
  void trim() noexcept;
  int64_t live_bytes() const { return live_; }
  int64_t peak_bytes() const { return peak_; }
  int64_t live_bytes(DeviceUse u) const { return use_live_[static_cast<size_t>(u)]; }
  int64_t peak_bytes(DeviceUse u) const { return use_peak_[static_cast<size_t>(u)]; }
  void reset_peak() {
    peak_ = live_;
    use_peak_ = use_live_;
  }

 private:
  friend class DeviceBuffer;
  void* allocate(size_t bytes, DeviceUse use);
  void release(void* p, size_t bytes, DeviceUse use) noexcept;
  int device_;
  int64_t live_ = 0, peak_ = 0, cached_ = 0;
  std::multimap<size_t, void*> cache_;  // free workspace blocks by their size class
  std::array<int64_t, kDeviceUses> use_live_{}, use_peak_{};
};

// One device allocation, freed when the buffer goes; moves, never copies.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DevicePool& pool, size_t bytes, DeviceUse use = DeviceUse::workspace);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  DevicePool* pool() const { return pool_; }  // null for an empty buffer
  DeviceUse use() const { return use_; }
  void upload(const void* host, size_t bytes);            // host -> device, synchronous; bytes <= bytes()
  void download(void* host, size_t bytes) const;          // device -> host, synchronous
  void copy_from(const DeviceBuffer& src, size_t bytes);  // device -> device, in stream order
  // Bytes [src_at, src_at + bytes) of src into [at, at + bytes) of this: device to device, in stream order.
  void copy_range(const DeviceBuffer& src, size_t src_at, size_t at, size_t bytes);
  void zero(size_t from, size_t bytes);  // bytes [from, from + bytes) to 0, in stream order

 private:
  DevicePool* pool_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  DeviceUse use_ = DeviceUse::workspace;
};

// Pinned host memory that a kernel's small inputs (a norm's weights, RoPE's positions,
// the KV cache's slots) pass through on their way up, so that their copies queue on the
// stream behind the kernels before them instead of waiting for them: a synchronous
// cudaMemcpy from pageable memory first waits for all the work queued before it (CUDA
// runtime API, "API synchronization behavior"), once an op, which kept the host from
// running ahead of the GPU. The values are copied into the ring when queued (the caller's
// memory may go at once); the ring starts over from its beginning once the stream has
// finished with what is in it.
class PinnedRing {
 public:
  static constexpr size_t kDefaultBytes = size_t{16} << 20;
  explicit PinnedRing(size_t bytes = kDefaultBytes);  // throws CudaError
  ~PinnedRing();                                      // waits for the stream first
  PinnedRing(const PinnedRing&) = delete;
  PinnedRing& operator=(const PinnedRing&) = delete;
  // Queues host -> [0, bytes) of dst on the legacy default stream; false (nothing done)
  // when bytes are more than the ring holds: the caller copies synchronously.
  bool copy(DeviceBuffer& dst, const void* host, size_t bytes);
  size_t bytes() const { return size_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0, at_ = 0;
};

}  // namespace dayzero::cuda
