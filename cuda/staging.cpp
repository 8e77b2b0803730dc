#include "cuda/staging.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/dequant.h"

namespace dayzero::cuda::staging {

namespace {
// The process's local rank under the launchers DayZero's runs use; 0 without one.
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(name)) return std::max(0, std::atoi(v));
  return 0;
}

// One thread's device, cuBLASLt handle and the run's weights on the device.
struct Context {
  DevicePool pool;
  Blas blas;
  PinnedRing ring;  // small uploads queue on the stream (cuda/device.h)
  // float32 (or BF16) [out, in] copies, by (stored bytes, size, matrix index, layout, rows, BF16).
  std::map<std::tuple<const void*, size_t, int64_t, bool, int64_t, bool>, DeviceBuffer> weights;
  std::map<std::tuple<const void*, size_t, int64_t>, DeviceFp8Weight> fp8_weights;  // by (codes, size, matrix)
  double placement_s = 0;  // host seconds spent making the entries above since begin_run
  explicit Context(int device) : pool(device), blas(pool) {}
};
// Shared: a tensor's device values keep it (and its pool) until they go, even past
// the thread's end.
thread_local std::shared_ptr<Context> t_context;

Context& context() {
  if (!t_context) {
    const CudaDevices d = probe_cuda();
    if (d.count == 0) throw CudaError("backend 'cuda': no CUDA device (" + d.why_none + ")");
    t_context = std::make_shared<Context>(local_rank() % d.count);
  }
  return *t_context;
}
// Host seconds from construction to destruction into the context's placement_s:
// one weight made on the device (its uploads are synchronous cudaMemcpy calls).
class PlacementClock {
 public:
  PlacementClock() : start_(std::chrono::steady_clock::now()) {}
  ~PlacementClock() {
    context().placement_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PlacementClock(const PlacementClock&) = delete;
  PlacementClock& operator=(const PlacementClock&) = delete;

 private:
  std::chrono::steady_clock::time_point start_;
};
}  // namespace

DevicePool& pool() { return context().pool; }
double weight_placement_seconds() { return context().placement_s; }
Blas& blas() { return context().blas; }
void begin_run() {
  context().weights.clear();
  context().fp8_weights.clear();
  context().pool.trim();  // the last run's cached blocks: this run's memory starts from its own
  context().placement_s = 0;
  context().pool.reset_peak();
}

executor::Backend::DeviceMemory device_memory() {
  executor::Backend::DeviceMemory m;
  m.pool_peak_bytes = context().pool.peak_bytes();
  m.weights_bytes = context().pool.live_bytes(DeviceUse::weights);
  m.workspace_peak_bytes = context().pool.peak_bytes(DeviceUse::workspace);
  m.kv_cache_peak_bytes = context().pool.peak_bytes(DeviceUse::kv_cache);
  m.used_bytes = device_used_bytes(context().pool.device());
  m.cached_bytes = context().pool.cached_bytes();
  m.runtime_bytes = std::max<int64_t>(0, m.used_bytes - context().pool.live_bytes() - m.cached_bytes);
  return m;
}

// A kernel's inputs queue through the pinned ring; the run's weights (made once, and
// large) and anything larger than the ring are copied synchronously.
DeviceBuffer upload(const void* host, size_t bytes, DeviceUse use) {
  DeviceBuffer b = scratch(bytes, use);
  if (bytes == 0) return b;
  if (use != DeviceUse::workspace || !context().ring.copy(b, host, bytes)) b.upload(host, bytes);
  return b;
}

DeviceBuffer scratch(size_t bytes, DeviceUse use) { return DeviceBuffer(pool(), std::max<size_t>(bytes, 4), use); }

void download(const DeviceBuffer& b, executor::Tensor& t) {
  if (t.numel() > 0) b.download(t.data.data(), static_cast<size_t>(t.numel()) * sizeof(float));
}

void CudaValues::download(float* host, size_t count) const {
  if (count > 0) buffer.download(host, count * sizeof(float));
}

namespace {
// `t`'s device values when they are this thread's.
CudaValues* own_values(const executor::Tensor& t) {
  auto* v = dynamic_cast<CudaValues*>(t.data.device_ptr().get());
  return v && v->buffer.pool() == &pool() ? v : nullptr;
}
std::shared_ptr<CudaValues> values(DeviceBuffer b) { return std::make_shared<CudaValues>(std::move(b), t_context); }
}  // namespace

const DeviceBuffer& on_device(const executor::Tensor& t) {
  if (CudaValues* v = own_values(t)) return v->buffer;
  const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(float);
  auto v = values(upload(t.data.data(), bytes));  // const: the host's copy stays valid
  t.data.share_device(v);
  return v->buffer;
}

const DeviceBuffer& on_device_bf16(const executor::Tensor& t) {
  on_device(t);
  CudaValues* v = own_values(t);
  if (!v) throw std::logic_error("staging::on_device_bf16: the tensor's values are not this thread's device's");
  if (v->bf16.bytes() == 0) {
    DeviceBuffer b = scratch(static_cast<size_t>(t.numel()) * 2);
    f32_to_bf16(v->buffer, b, t.numel());
    v->bf16 = std::move(b);
  }
  return v->bf16;
}

DeviceBuffer& writable(executor::Tensor& t) {
  const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(float);
  CudaValues* v = own_values(t);
  if (v && !t.data.device_shared()) {
    t.data.set_device(t.data.device_ptr());  // the device's values are the tensor's now
    v->bf16 = DeviceBuffer();                // about to change: its BF16 copy goes
    return v->buffer;
  }
  std::shared_ptr<CudaValues> mine;
  if (v) {
    mine = values(scratch(bytes));
    mine->buffer.copy_from(v->buffer, bytes);
  } else {
    mine = values(upload(std::as_const(t).data.data(), bytes));
  }
  t.data.set_device(mine);
  return mine->buffer;
}

executor::Tensor result(std::vector<int64_t> shape, DeviceBuffer b) {
  executor::Tensor t;
  t.shape = std::move(shape);
  const auto n = static_cast<size_t>(executor::shape_elems(t.shape));
  if (b.bytes() < n * sizeof(float))
    throw std::logic_error("staging::result: " + std::to_string(b.bytes()) + " bytes for " + std::to_string(n) +
                           " floats");
  t.data.set_device(values(std::move(b)), n);
  return t;
}

const DeviceBuffer& device_weight(const executor::StoredWeight& w, int64_t index) {
  if (index < 0 || index >= w.matrices())
    throw std::out_of_range("linear '" + w.name + "': matrix " + std::to_string(index) + " of " +
                            std::to_string(w.matrices()));
  auto& cache = context().weights;
  const auto key =
      std::make_tuple(static_cast<const void*>(w.data.data()), w.data.size(), index, w.input_major, w.rows(), false);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const PlacementClock clock;
  executor::Tensor m = executor::dequantize_matrix(w, index);  // as stored: [in, out] when input-major
  if (w.input_major) {
    executor::Tensor t({m.cols(), m.rows()});
    for (int64_t r = 0; r < m.rows(); ++r)
      for (int64_t c = 0; c < m.cols(); ++c) t.row(c)[r] = m.row(r)[c];
    m = std::move(t);
  }
  return cache.emplace(key, upload(m, DeviceUse::weights)).first->second;
}

const DeviceBuffer* device_weight_bf16(const executor::StoredWeight& w, int64_t index) {
  if (w.kind != model::StorageKind::plain || w.dtype != model::DType::bf16) return nullptr;
  if (index < 0 || index >= w.matrices())
    throw std::out_of_range("linear '" + w.name + "': matrix " + std::to_string(index) + " of " +
                            std::to_string(w.matrices()));
  auto& cache = context().weights;
  const auto key =
      std::make_tuple(static_cast<const void*>(w.data.data()), w.data.size(), index, w.input_major, w.rows(), true);
  if (auto it = cache.find(key); it != cache.end()) return &it->second;
  const PlacementClock clock;
  const int64_t rows = w.rows(), cols = w.cols(), n = rows * cols;
  DeviceBuffer out = scratch(static_cast<size_t>(n) * 2, DeviceUse::weights);
  const auto* src = reinterpret_cast<const uint16_t*>(w.data.data()) + index * n;
  std::vector<uint16_t> m(src, src + n);
  if (w.input_major)  // stored [in, out]: transposed to [out, in]
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) m[static_cast<size_t>(c * rows + r)] = src[r * cols + c];
  out.upload(m.data(), m.size() * 2);
  return &cache.emplace(key, std::move(out)).first->second;
}

const DeviceFp8Weight* device_weight_fp8(const executor::StoredWeight& w, int64_t index) {
  if (w.kind != model::StorageKind::fp8_block || w.input_major) return nullptr;
  if (index < 0 || index >= w.matrices())
    throw std::out_of_range("linear '" + w.name + "': matrix " + std::to_string(index) + " of " +
                            std::to_string(w.matrices()));
  auto& cache = context().fp8_weights;
  const auto key = std::make_tuple(static_cast<const void*>(w.data.data()), w.data.size(), index);
  if (auto it = cache.find(key); it != cache.end()) return &it->second;
  const PlacementClock clock;
  DeviceFp8Weight d;
  d.rows = w.rows();
  d.cols = w.cols();
  d.block_rows = w.block_rows;
  d.block_cols = w.block_cols;
  const int64_t n = d.rows * d.cols;
  const int64_t scale_count = (d.rows + w.block_rows - 1) / w.block_rows * ((d.cols + w.block_cols - 1) / w.block_cols);
  const size_t scale_bytes = static_cast<size_t>(scale_count) * sizeof(float);
  d.codes = upload(w.data.data() + index * n, static_cast<size_t>(n), DeviceUse::weights);
  d.scales = upload(w.scales.data() + static_cast<size_t>(index) * scale_bytes, scale_bytes, DeviceUse::weights);
  return &cache.emplace(key, std::move(d)).first->second;
}

}  // namespace dayzero::cuda::staging
