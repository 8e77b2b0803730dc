// The CUDA kernels against the CPU backend's (executor/kernels.h) on the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "cuda/kernels.h"
#include "executor/kernels.h"
#include "executor/quantize.h"
#include "executor/rope.h"
#include "executor/weights.h"
#include "gpu.h"

namespace dayzero::cuda {
namespace {

DeviceBuffer to_device(DevicePool& pool, const std::vector<float>& v) {
  DeviceBuffer b(pool, v.size() * sizeof(float));
  b.upload(v.data(), b.bytes());
  return b;
}
template <class Storage>
DeviceBuffer to_device(DevicePool& pool, const Storage& v) {
  return to_device(pool, std::vector<float>(v.begin(), v.end()));
}
std::vector<float> to_host(const DeviceBuffer& b, size_t n) {
  std::vector<float> v(n);
  b.download(v.data(), n * sizeof(float));
  return v;
}
std::vector<float> wave(size_t n, float scale, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}
// CUDA's expf and the host's std::exp may differ by 2 ulp; a few more through the division.
void expect_close(const std::vector<float>& got, const executor::Tensor& want, const char* what) {
  ASSERT_EQ(got.size(), want.data.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want.data[i], 1e-6 * std::abs(want.data[i]) + 1e-7) << what << " " << i;
}

TEST(CudaKernels, GatedActivationsAndResidualAddMatchTheCpu) {
  DAYZERO_NEED_GPU();
  const size_t n = 3000;
  const executor::Tensor gate({3, 1000}, wave(n, 9.0f, 0.1f)), up({3, 1000}, wave(n, 9.0f, 0.7f));
  DevicePool pool;
  const DeviceBuffer dg = to_device(pool, gate.data), du = to_device(pool, up.data);
  DeviceBuffer out(pool, n * sizeof(float));
  swiglu_f32(dg, du, out, static_cast<int64_t>(n));
  expect_close(to_host(out, n), executor::swiglu(gate, up, {}), "swiglu");
  const executor::ActivationParams p{1.702, 7.0};  // gpt-oss: |values| up to 9 reach both clamps
  swiglu_clamped_f32(dg, du, out, static_cast<int64_t>(n), p.alpha, p.limit);
  expect_close(to_host(out, n), executor::swiglu_clamped(gate, up, p), "swiglu_clamped");
  DeviceBuffer x = to_device(pool, gate.data);
  add_f32(x, du, static_cast<int64_t>(n));
  const std::vector<float> sum = to_host(x, n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(sum[i], gate.data[i] + up.data[i]) << i;  // one rounding: exact
  EXPECT_THROW(add_f32(x, du, static_cast<int64_t>(n) + 1), CudaError);
}

TEST(CudaKernels, EmbeddingGathersTheTokensRows) {
  DAYZERO_NEED_GPU();
  const int64_t vocab = 50, hidden = 300;
  const executor::Tensor table({vocab, hidden}, wave(static_cast<size_t>(vocab * hidden), 1.0f, 0.0f));
  const std::vector<int64_t> tokens{3, 49, 0, -1, 3, 17};  // -1: another TP rank's token, zeros
  DevicePool pool;
  const DeviceBuffer dt = to_device(pool, table.data);
  DeviceBuffer ids(pool, tokens.size() * sizeof(int64_t)), out(pool, tokens.size() * hidden * sizeof(float));
  ids.upload(tokens.data(), ids.bytes());
  embedding_f32(dt, vocab, hidden, ids, static_cast<int64_t>(tokens.size()), out);
  executor::StoredWeight w;
  w.name = "table";
  w.shape = table.shape;
  w.data = std::as_bytes(std::span<const float>(table.data.data(), table.data.size()));
  const executor::Tensor want = executor::embedding(w, tokens);
  EXPECT_EQ(to_host(out, want.data.size()), std::vector<float>(want.data.begin(), want.data.end()));  // a copy: exact
  // From a BF16 table (as checkpoints store it): each value made float32 exactly.
  std::vector<uint16_t> bits(table.data.size());
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = executor::float_to_bf16(table.data[i]);
  DeviceBuffer db(pool, bits.size() * 2);
  db.upload(bits.data(), db.bytes());
  embedding_bf16(db, vocab, hidden, ids, static_cast<int64_t>(tokens.size()), out);
  w.dtype = model::DType::bf16;
  w.data = std::as_bytes(std::span<const uint16_t>(bits));
  const executor::Tensor want_bf16 = executor::embedding(w, tokens);
  EXPECT_EQ(to_host(out, want_bf16.data.size()), std::vector<float>(want_bf16.data.begin(), want_bf16.data.end()));
  EXPECT_THROW(embedding_bf16(db, vocab + 1, hidden, ids, 1, out), CudaError);  // the table is one row short
}

// RoPE in both layouts and with YaRN's attention factor, against the CPU kernel.
TEST(CudaKernels, RopeMatchesTheCpuKernel) {
  DAYZERO_NEED_GPU();
  const int64_t rows = 9, heads = 4, stride = 48, offset = 16, rot = 32;
  const std::vector<int64_t> positions{0, 1, 2, 7, 100, 1000, 4095, 32767, 131071};
  model::RopeConfig rc;
  rc.theta = 10000.0;
  executor::RopeTable table = executor::rope_default(rc, rot);
  table.attention_factor = 1.2;  // as YaRN's mscale scales cos and sin
  DevicePool pool;
  const DeviceRopeTable dt = rope_table_on_device(pool, table.inv_freq.data(),
                                                  static_cast<int64_t>(table.inv_freq.size()), table.attention_factor);
  DeviceBuffer pos(pool, positions.size() * sizeof(int64_t));
  pos.upload(positions.data(), pos.bytes());
  for (const auto layout : {executor::RopeLayout::half, executor::RopeLayout::interleaved}) {
    executor::Tensor x({rows, heads * stride}, wave(static_cast<size_t>(rows * heads * stride), 1.0f, 0.2f));
    DeviceBuffer dx = to_device(pool, x.data);
    rope_f32(dx, rows, heads, stride, offset, pos, dt, layout == executor::RopeLayout::interleaved);
    executor::apply_rope(x, heads, stride, offset, positions, table, layout);
    // cos and sin in double on either side may differ in their last bit: within 2 float ulp.
    const std::vector<float> got = to_host(dx, x.data.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], x.data[i], 2.4e-7 * std::max(1.0, std::abs(static_cast<double>(x.data[i])))) << i;
  }
}

TEST(CudaKernels, ReferenceGemmMatchesTheCpuLinear) {
  DAYZERO_NEED_GPU();
  const int64_t m = 7, n = 300, k = 257;
  const executor::Tensor x({m, k}, wave(static_cast<size_t>(m * k), 1.0f, 0.3f));
  const executor::Tensor wt({n, k}, wave(static_cast<size_t>(n * k), 0.05f, 1.1f));
  DevicePool pool;
  const DeviceBuffer dx = to_device(pool, x.data), dw = to_device(pool, wt.data);
  DeviceBuffer dy(pool, static_cast<size_t>(m * n) * sizeof(float));
  gemm_f32_reference(dx, dw, dy, m, n, k);
  executor::StoredWeight w;
  w.name = "w";
  w.shape = wt.shape;
  w.data = std::as_bytes(std::span<const float>(wt.data.data(), wt.data.size()));
  const executor::Tensor want = executor::linear_f32(x, w, 0, {});
  const std::vector<float> got = to_host(dy, static_cast<size_t>(m * n));
  // Summation orders differ: within 2 k eps of the sum of |products| (float32, eps 2^-24 x 2).
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double mag = 0;
      for (int64_t i = 0; i < k; ++i) mag += std::abs(static_cast<double>(x.row(r)[i]) * wt.row(c)[i]);
      EXPECT_NEAR(got[static_cast<size_t>(r * n + c)], want.row(r)[c], 2.0 * static_cast<double>(k) * 1.2e-7 * mag)
          << r << "," << c;
    }
}

TEST(CudaKernels, RmsNormMatchesTheCpuKernel) {
  DAYZERO_NEED_GPU();
  const int64_t rows = 37, n = 1000;  // n not a multiple of the block: the stride loop's tail
  executor::Tensor x({rows, n});
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < x.numel(); ++i) x.data[static_cast<size_t>(i)] = std::sin(0.01f * static_cast<float>(i));
  for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(i)] = 0.5f + 0.001f * static_cast<float>(i);
  DevicePool pool;
  DeviceBuffer dx(pool, x.data.size() * sizeof(float)), dw(pool, w.size() * sizeof(float));
  dx.upload(x.data.data(), dx.bytes());
  dw.upload(w.data(), dw.bytes());
  rms_norm_f32(dx, dw, rows, n, 1e-6);
  std::vector<float> got(x.data.size());
  dx.download(got.data(), dx.bytes());
  executor::rms_norm(x, w, 1e-6);
  // Both sum squares in double; the order differs, so the float results may differ in
  // their last bit: within 2 ulp (2.4e-7 relative).
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], x.data[i], 2.4e-7 * std::abs(x.data[i]) + 1e-30) << i;
  // Run to run: the same bits.
  dx.upload(std::vector<float>(x.data.size(), 0.25f).data(), dx.bytes());
  rms_norm_f32(dx, dw, rows, n, 1e-6);
  std::vector<float> a(got.size()), b(got.size());
  dx.download(a.data(), dx.bytes());
  dx.upload(std::vector<float>(x.data.size(), 0.25f).data(), dx.bytes());
  rms_norm_f32(dx, dw, rows, n, 1e-6);
  dx.download(b.data(), dx.bytes());
  EXPECT_EQ(a, b);
  EXPECT_THROW(rms_norm_f32(dx, dw, rows + 1, n, 1e-6), CudaError);  // more groups than the buffer holds
}

}  // namespace
}  // namespace dayzero::cuda
