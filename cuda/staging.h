#pragma once
// The CUDA backend's staging (cuda/backend.h), shared by its kernel files: the calling
// thread's device context, tensors' values on the device (stage 2), host-to-device
// copies of the other inputs, and the run's weights kept on the device. Not an
// interface beyond cuda/backend* and cuda/kv_store.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cuda/device.h"
#include "cuda/gemm.h"
#include "executor/kernels.h"
#include "executor/registry.h"
#include "executor/tensor.h"
#include "executor/weights.h"

namespace dayzero::cuda::staging {

// This thread's device pool and cuBLASLt handle, made on first use on the rank's
// device; throws CudaError naming the runtime's reason where there is no GPU.
DevicePool& pool();
Blas& blas();
// A run begins: drops the last run's device weights (a new mapping may reuse an
// address); fails early without a device.
void begin_run();
// This thread's pool's high-water mark since begin_run (in all, and the kernels' buffers
// alone), the run's weights on the device, and the device's memory in use.
executor::Backend::DeviceMemory device_memory();
// Host seconds this thread spent placing the run's weights on the device (the
// device_weight* calls below that made one) since begin_run.
double weight_placement_seconds();

// Never a zero-byte allocation; `use` counts it as a kernel's (freed with the buffer) or
// as the run's weights (cuda/device.h).
DeviceBuffer upload(const void* host, size_t bytes, DeviceUse use = DeviceUse::workspace);
inline DeviceBuffer upload(const executor::Tensor& t, DeviceUse use = DeviceUse::workspace) {
  return upload(t.data.data(), static_cast<size_t>(t.numel()) * sizeof(float), use);
}
template <class T>
DeviceBuffer upload(std::span<const T> v) {
  return upload(v.data(), v.size() * sizeof(T));
}
DeviceBuffer scratch(size_t bytes, DeviceUse use = DeviceUse::workspace);  // uninitialized, at least 4 bytes
void download(const DeviceBuffer& b, executor::Tensor& t);                 // t.numel() floats

// Stage 2: a tensor's values on this thread's device, held by the tensor
// (executor/tensor_values.h), so that the next kernel reads them where they lie.
class CudaValues final : public executor::DeviceValues {
 public:
  CudaValues(DeviceBuffer b, std::shared_ptr<void> keep_alive) : buffer(std::move(b)), owner_(std::move(keep_alive)) {}
  void download(float* host, size_t count) const override;
  DeviceBuffer buffer;
  // The values rounded to BF16 (what the BF16 and FP8 GEMMs read), made by the first
  // GEMM that reads them and kept while they stand (writable drops it): q, k and v
  // read one input, gate and up another (on_device_bf16).
  DeviceBuffer bf16;

 private:
  std::shared_ptr<void> owner_;  // the thread's device context, kept while its buffers are
};
// The device copy of `t`'s values in this thread's pool: its own where it holds one;
// else uploaded now and kept with `t` (both copies valid), so the next kernel that reads
// `t` finds it there.
const DeviceBuffer& on_device(const executor::Tensor& t);
// `t`'s values rounded to BF16 on the device (round to nearest even, as f32_to_bf16),
// made once while they stand and kept with them.
const DeviceBuffer& on_device_bf16(const executor::Tensor& t);
// `t`'s values to write in place on the device: its own device copy where no other
// tensor shares it, else a copy of its values made its own. Its host copy goes.
DeviceBuffer& writable(executor::Tensor& t);
// A kernel's result of `shape`: `b` (at least as many floats) becomes the tensor's
// values, on the device only.
executor::Tensor result(std::vector<int64_t> shape, DeviceBuffer b);

// Matrix `index` of `w` as float32 [out, in] on the device, made once per run: a
// quantized checkpoint's dequantized on the host (as the CPU backend multiplies it),
// an input-major one transposed. Throws std::out_of_range for a bad index.
const DeviceBuffer& device_weight(const executor::StoredWeight& w, int64_t index);
// Matrix `index` of a BF16 weight as BF16 [out, in] on the device, made once per run
// (as stored, transposed when input-major), for Blas::gemm_bf16; null for any other
// storage.
const DeviceBuffer* device_weight_bf16(const executor::StoredWeight& w, int64_t index);
// Matrix `index` of a block-scaled FP8 weight ([out, in], not input-major) as stored:
// its codes (1 byte an element) and float32 block scales, on the device once per run;
// null for any other storage. The GEMMs read it where it lies (cuda/dequant.h).
struct DeviceFp8Weight {
  DeviceBuffer codes, scales;
  int64_t rows = 0, cols = 0, block_rows = 0, block_cols = 0;
};
const DeviceFp8Weight* device_weight_fp8(const executor::StoredWeight& w, int64_t index);

}  // namespace dayzero::cuda::staging

// The kernels of backend_attention.cpp (GQA, MLA) and backend_moe.cpp (routing, the
// combine), staged alike; the table in backend.cpp lists them.
namespace dayzero::cuda::staged {
executor::Tensor attention(const executor::Tensor& q, std::span<const int64_t> q_positions, const executor::KvPages& kv,
                           const executor::AttentionParams& p);
executor::Tensor mla_attention(const executor::Tensor& q, std::span<const int64_t> q_positions,
                               const executor::KvPages& cache, const executor::StoredWeight& kv_b,
                               const executor::MlaParams& p);
executor::Tensor dsa_topk(const executor::Tensor& q, const executor::Tensor& w, std::span<const int64_t> q_positions,
                          const executor::KvPages& keys, const executor::IndexerParams& p);
executor::Tensor gated_delta_net(const executor::Tensor& qkv, const executor::Tensor& z, const executor::Tensor& b,
                                 const executor::Tensor& a, const executor::LinearAttentionWeights& w,
                                 executor::LinearState& state, const executor::LinearAttentionParams& p);
executor::Routing route_softmax_topk(const executor::Tensor& logits, const executor::RouterParams& p);
executor::Routing route_topk_softmax(const executor::Tensor& logits, const executor::RouterParams& p);
executor::Routing route_sigmoid_group_topk(const executor::Tensor& logits, const executor::RouterParams& p);
void moe_combine(executor::Tensor& out, const executor::Tensor& expert_out, std::span<const int64_t> rows,
                 std::span<const float> weights);
}  // namespace dayzero::cuda::staged
