// Stage 2 on the GPU (executor/tensor_values.h, cuda/staging.h, cuda/kv_store.h): kernels
// chained on the CUDA backend leave their results on the device and bring nothing back
// until the host reads, an in-place kernel on a tensor whose device copy is shared writes
// a copy of its own, the device memory of a tensor's values goes with the tensor, and the
// KV cache on the device holds the host's bits.
#include <gtest/gtest.h>

#include <vector>

#include "backend_util.h"
#include "cuda/kv_store.h"
#include "cuda/staging.h"
#include "executor/kernels.h"
#include "executor/registry.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

using executor::Tensor;
using executor::TensorValues;
using model::OpKind;

executor::StoredWeight f32_weight(const std::vector<float>& w, int64_t rows, int64_t cols) {
  executor::StoredWeight sw;
  sw.name = "w";
  sw.shape = {rows, cols};
  sw.dtype = model::DType::f32;
  sw.data = std::as_bytes(std::span<const float>(w));
  return sw;
}

Tensor chain(const executor::Backend& b, const Tensor& x, const executor::StoredWeight& w) {
  const std::vector<float> gamma(static_cast<size_t>(x.cols()), 1.25f);
  Tensor h = x;
  b.fn<executor::NormFn>(OpKind::norm, "rms")(h, gamma, 1e-6);
  const Tensor g = b.fn<executor::GemmFn>(OpKind::gemm, "f32")(h, w, 0, {});
  const Tensor u = b.fn<executor::GemmFn>(OpKind::gemm, "f32")(g, w, 0, {});
  Tensor y = b.fn<executor::ActivationFn>(OpKind::activation, "swiglu")(g, u, {});
  b.add(y, g);  // a residual add, in place
  return y;
}

TEST(CudaDeviceValues, KernelsChainedOnTheDeviceBringNothingBack) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = testing::fresh_cuda_backend();
  const executor::Backend& cpu = executor::find_backend("cpu");
  constexpr int64_t kRows = 3, kCols = 64;
  Tensor x({kRows, kCols});
  for (int64_t i = 0; i < x.numel(); ++i) x.data[static_cast<size_t>(i)] = 0.01f * static_cast<float>(i % 17) - 0.08f;
  std::vector<float> w(static_cast<size_t>(kCols * kCols));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.002f * static_cast<float>(i % 29) - 0.03f;
  const executor::StoredWeight sw = f32_weight(w, kCols, kCols);
  const int64_t live = staging::pool().live_bytes(DeviceUse::workspace);
  {
    const int64_t downloads = TensorValues::downloads();
    const Tensor on_device = chain(be, x, sw);
    EXPECT_EQ(TensorValues::downloads(), downloads) << "an intermediate came back to the host";
    EXPECT_FALSE(on_device.data.host_valid());
    EXPECT_GT(staging::pool().live_bytes(DeviceUse::workspace), live);   // held by the tensors
    testing::expect_close(on_device, chain(cpu, x, sw), 1e-4, "chain");  // read: brought back once
    EXPECT_EQ(TensorValues::downloads(), downloads + 1);
    // An in-place kernel on a tensor whose device copy another shares writes its own.
    const Tensor a = on_device;
    Tensor b = a;
    be.add(b, a);
    for (int64_t i = 0; i < a.numel(); ++i)
      EXPECT_FLOAT_EQ(b.data[static_cast<size_t>(i)], 2 * a.data[static_cast<size_t>(i)]) << i;
  }
  // The tensors are gone, and with them their device values (back in the pool's cache).
  EXPECT_EQ(staging::pool().live_bytes(DeviceUse::workspace), live);
}

// A batch's rows apart and back together on the device: the CPU's values exactly, and
// nothing brought back until read.
TEST(CudaDeviceValues, RowsAndStackRowsStayOnTheDevice) {
  DAYZERO_NEED_GPU();
  const executor::Backend& be = testing::fresh_cuda_backend();
  Tensor x({5, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data[static_cast<size_t>(i)] = static_cast<float>(i) - 2.5f;
  Tensor on_device = x;
  be.add(on_device, Tensor({5, 3}));  // + 0 on the device: its values live there now
  const int64_t downloads = TensorValues::downloads();
  const std::vector<Tensor> parts{be.rows(on_device, 3, 2), be.rows(on_device, 0, 1), be.rows(on_device, 5, 0)};
  const Tensor stacked = be.stack_rows(parts);
  EXPECT_EQ(TensorValues::downloads(), downloads) << "a slice came back to the host";
  const std::vector<Tensor> host_parts{executor::rows(x, 3, 2), executor::rows(x, 0, 1), executor::rows(x, 5, 0)};
  EXPECT_EQ(stacked.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(stacked.data, executor::stack_rows(host_parts).data);
  EXPECT_THROW(be.rows(on_device, 4, 2), std::invalid_argument);
  const std::vector<int64_t> order{4, 0, 0, 2};  // a MoE layer's pairs by expert: rows repeat
  const Tensor gathered = be.gather_rows(on_device, order);
  EXPECT_EQ(TensorValues::downloads(), downloads + 1) << "the gather came back to the host";
  EXPECT_EQ(gathered.data, executor::gather_rows(x, order).data);
  EXPECT_THROW(be.gather_rows(on_device, std::vector<int64_t>{5}), std::invalid_argument);
  const int64_t before_sums = TensorValues::downloads();
  EXPECT_EQ(be.row_sum_squares(on_device), executor::row_sum_squares(x));  // small integers and halves: exact
  EXPECT_EQ(TensorValues::downloads(), before_sums) << "x came back for its sums of squares";
}

// The KV cache on the device holds the host's bits in every dtype: rows written at
// slots (before and after the pool grows), read back, unwritten rows zero.
TEST(CudaDeviceValues, KvStoreOnTheDeviceHoldsTheHostsBits) {
  DAYZERO_NEED_GPU();
  testing::fresh_cuda_backend();
  constexpr int64_t kWidth = 5;
  Tensor rows({4, kWidth});
  for (int64_t i = 0; i < rows.numel(); ++i) rows.data[static_cast<size_t>(i)] = 0.37f * static_cast<float>(i) - 3.1f;
  for (const plan::KvDtype dtype : {plan::KvDtype::fp32, plan::KvDtype::bf16, plan::KvDtype::fp8}) {
    CudaKvStore dev(dtype, kWidth);
    executor::HostKvStore host(dtype, kWidth);
    for (executor::KvStore* s : {static_cast<executor::KvStore*>(&dev), static_cast<executor::KvStore*>(&host)}) {
      s->resize(7);
      const std::vector<int64_t> first{3, 0, 6};
      s->store(first, rows, 1);  // rows 1..3
      s->resize(12);             // grown: the rows written stay
      const std::vector<int64_t> second{11};
      s->store(second, rows, 0);
    }
    const std::vector<int64_t> slots{0, 3, 6, 11, 5};
    std::vector<float> got(slots.size() * kWidth), want(got.size());
    dev.load(slots, got.data());
    host.load(slots, want.data());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << plan::kv_dtype_name(dtype) << " " << i;
    EXPECT_EQ(got[4 * kWidth], 0.0f);  // slot 5: never written
  }
}

}  // namespace
}  // namespace dayzero::cuda
