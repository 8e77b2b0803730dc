// CPU kernels: embedding, RMSNorm, linear, gated activations, MoE combine.
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/arith.h"
#include "executor/kernel_checks.h"
#include "executor/kernels.h"
#include "executor/threads.h"

namespace dayzero::executor {

namespace {
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;
using StridedMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

// Output features are computed in blocks of kOutBlock: each block's slice of
// y = x W^T is one single-threaded Eigen product, and threads take contiguous
// runs of whole blocks, so every output element comes from the same product
// whatever the thread count (bit-identical results for 1, 2, 3 ... threads).
// 64 is a multiple of 16: with this build's flags (SSE2, no -march) Eigen's
// product of a 16-aligned column slice equals the full product's slice bit for
// bit (a standalone check with Eigen 3.4 / GCC 12 over T 1..200, in 7..7168, out
// 10..4100; splits at multiples of 4 or at arbitrary columns differ by up to a few
// ulps), so the blocked result also equals the unblocked one. With -mavx2 -mfma
// it does not (the tails of Eigen's 24-row panels round differently), but blocks
// still agree across thread counts. Blocking costs nothing measurable (T 1..64,
// in 7168, out 2048: within 3%, blocks of 32..512).
constexpr int64_t kOutBlock = 64;
// Work units (~ one multiply-add) to dequantize one weight element (table lookup,
// scale multiply, store), for parallel_for's inline threshold.
constexpr double kDequantWork = 2.0;

// Rows [r0, r0 + n) of matrix `index` of w to float32 into out (n x cols), the
// same values as dequantize_row; FP8 and BF16 inline, other storages through it.
void dequantize_rows(const StoredWeight& w, int64_t index, int64_t r0, int64_t n, float* out) {
  const int64_t R = w.rows(), C = w.cols();
  if (w.kind == model::StorageKind::fp8_block) {
    const auto& table = fp8_e4m3_table();
    const int64_t sc = core::ceil_div(C, w.block_cols), sr = core::ceil_div(R, w.block_rows);
    const auto* codes = reinterpret_cast<const uint8_t*>(w.data.data());
    for (int64_t r = r0; r < r0 + n; ++r) {
      const uint8_t* src = codes + (index * R + r) * C;
      const std::byte* srow = w.scales.data() + (index * sr + r / w.block_rows) * sc * 4;
      float* dst = out + (r - r0) * C;
      for (int64_t b = 0; b < sc; ++b) {
        float scale;
        std::memcpy(&scale, srow + b * 4, sizeof scale);
        const int64_t end = std::min(C, (b + 1) * w.block_cols);
        for (int64_t j = b * w.block_cols; j < end; ++j) dst[j] = table[src[j]] * scale;  // fp8 * scale_inv
      }
    }
    return;
  }
  if (w.kind == model::StorageKind::plain && w.dtype == model::DType::bf16) {
    const std::byte* src = w.data.data() + (index * R + r0) * C * 2;
    for (int64_t i = 0; i < n * C; ++i) {
      uint16_t bits;
      std::memcpy(&bits, src + i * 2, sizeof bits);
      const uint32_t u = static_cast<uint32_t>(bits) << 16;  // bf16 is the top half of a float32
      std::memcpy(out + i, &u, sizeof u);
    }
    return;
  }
  for (int64_t r = r0; r < r0 + n; ++r)
    dequantize_row(w, index, r, std::span<float>(out + (r - r0) * C, static_cast<size_t>(C)));
}

// y = x W^T + b for matrix `index` of w. `wdata`: the matrix as float32 ([out, in],
// or [in, out] when input_major), or nullptr to dequantize it block by block
// ([out, in]) or whole, in parallel (input_major).
Tensor product(const Tensor& x, const float* wdata, const StoredWeight& w, int64_t index, std::span<const float> bias) {
  const std::pair<int64_t, int64_t> dims = checks::linear(x, w, index, bias);  // lambdas capture them: no binding
  const int64_t in = dims.first, out = dims.second;
  std::vector<int64_t> shape = x.shape;
  shape.back() = out;
  Tensor y(shape);
  const int64_t T = x.rows();
  Tensor whole;  // input-major quantized: dequantized first, rows split across threads
  if (!wdata && w.input_major) {
    whole = Tensor({in, out});
    parallel_for(in, kDequantWork * static_cast<double>(out),
                 [&](int64_t r0, int64_t r1) { dequantize_rows(w, index, r0, r1 - r0, whole.row(r0)); });
    wdata = whole.data.data();
  }
  const int64_t blocks = (out + kOutBlock - 1) / kOutBlock;
  const double block_work = static_cast<double>(in * kOutBlock) * (static_cast<double>(T) + (wdata ? 0 : kDequantWork));
  parallel_for(blocks, block_work, [&](int64_t b0, int64_t b1) {
    ConstMap X(x.data.data(), T, in);
    Eigen::Map<RowMatrix> Y(y.data.data(), T, out);
    thread_local std::vector<float> tile;  // a dequantized block of W, kept per thread across calls
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t lo = b * kOutBlock, n = std::min(kOutBlock, out - lo);
      auto Yb = Y.middleCols(lo, n);
      if (w.input_major) {
        Yb.noalias() = X * StridedMap(wdata + lo, in, n, Eigen::OuterStride<>(out));
      } else if (wdata) {
        Yb.noalias() = X * ConstMap(wdata + lo * in, n, in).transpose();
      } else {
        tile.resize(static_cast<size_t>(n * in));
        dequantize_rows(w, index, lo, n, tile.data());
        Yb.noalias() = X * ConstMap(tile.data(), n, in).transpose();
      }
      if (!bias.empty()) Yb.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias.data() + lo, n);
    }
  });
  return y;
}
}  // namespace

Tensor embedding(const StoredWeight& table, std::span<const int64_t> tokens) {
  const int64_t hidden = table.cols();
  Tensor out({static_cast<int64_t>(tokens.size()), hidden});
  checks::embedding(table, tokens);
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0) continue;  // another rank's token: zeros
    dequantize_row(table, 0, tokens[t],
                   std::span<float>(out.row(static_cast<int64_t>(t)), static_cast<size_t>(hidden)));
  }
  return out;
}

void rms_norm(Tensor& x, std::span<const float> weight, double eps) {
  checks::rms_norm(x, weight);
  const auto n = static_cast<int64_t>(weight.size());
  for (int64_t g = 0; g < x.numel() / n; ++g) {
    float* p = x.data.data() + g * n;
    double sum_sq = 0.0;
    for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(p[i]) * p[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) p[i] = weight[i] * (p[i] * inv);
  }
}

void rms_norm_given_mean(Tensor& x, std::span<const float> weight, double eps, std::span<const float> mean_sq) {
  checks::rms_norm_given_mean(x, weight, mean_sq);
  for (int64_t t = 0; t < x.rows(); ++t) {
    const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mean_sq[t]) + eps));
    float* r = x.row(t);
    for (int64_t i = 0; i < x.cols(); ++i) r[i] = weight[i] * (r[i] * inv);
  }
}

void rms_norm_zero_centered(Tensor& x, std::span<const float> weight, double eps) {
  std::vector<float> one_plus(weight.begin(), weight.end());
  for (float& w : one_plus) w += 1.0f;
  rms_norm(x, one_plus, eps);
}

Tensor sigmoid_gate(const Tensor& gate, const Tensor& x, const ActivationParams&) {
  const bool per_row = checks::gate_per_row(gate, x, "sigmoid_gate");
  Tensor y(x.shape);
  const float *xs = x.data.data(), *gs = gate.data.data();
  float* ys = y.data.data();
  const int64_t cols = per_row ? x.cols() : 1;  // gate index: i / cols
  for (int64_t i = 0; i < x.numel(); ++i) ys[i] = xs[i] / (1.0f + std::exp(-gs[i / cols]));
  return y;
}

void add_in_place(Tensor& x, const Tensor& y) {
  checks::same_shape(x, y, "add", "x", "y");
  const float* ys = y.data.data();
  float* xs = x.data.data();
  for (int64_t i = 0; i < x.numel(); ++i) xs[i] += ys[i];
}

Tensor columns(const Tensor& x, int64_t first, int64_t count) {
  checks::columns(x, first, count);
  Tensor out({x.rows(), count});
  for (int64_t r = 0; r < x.rows(); ++r) std::copy_n(x.row(r) + first, count, out.row(r));
  return out;
}

Tensor rows(const Tensor& x, int64_t first, int64_t count) {
  checks::rows(x, first, count);
  return Tensor({count, x.cols()}, std::vector<float>(x.row(first), x.row(first) + count * x.cols()));
}

Tensor stack_rows(std::span<const Tensor> parts) {
  Tensor out({checks::stack_rows(parts), parts.front().cols()});
  float* at = out.data.data();
  for (const Tensor& p : parts) at = std::copy(p.data.begin(), p.data.end(), at);
  return out;
}

Tensor zeros(std::vector<int64_t> shape) { return Tensor(std::move(shape)); }

std::vector<float> row_sum_squares(const Tensor& x) {
  std::vector<float> out(static_cast<size_t>(x.rows()));
  for (int64_t t = 0; t < x.rows(); ++t) {
    const float* row = x.row(t);
    double ss = 0.0;
    for (int64_t i = 0; i < x.cols(); ++i) ss += static_cast<double>(row[i]) * row[i];
    out[static_cast<size_t>(t)] = static_cast<float>(ss);
  }
  return out;
}

Tensor gather_rows(const Tensor& x, std::span<const int64_t> indices) {
  checks::gather_rows(x, indices);
  Tensor out({static_cast<int64_t>(indices.size()), x.cols()});
  for (size_t i = 0; i < indices.size(); ++i)
    std::copy_n(x.row(indices[i]), x.cols(), out.row(static_cast<int64_t>(i)));
  return out;
}

Tensor linear_f32(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias) {
  if (w.kind != model::StorageKind::plain || w.dtype != model::DType::f32)
    throw std::invalid_argument("linear_f32 '" + w.name + "': weight is not plain F32");
  checks::linear(x, w, index, bias);
  const std::byte* base = w.data.data() + index * w.rows() * w.cols() * static_cast<int64_t>(sizeof(float));
  if (reinterpret_cast<uintptr_t>(base) % alignof(float) != 0) return linear_dequant(x, w, index, bias);
  return product(x, reinterpret_cast<const float*>(base), w, index, bias);  // zero copy from the mapping
}

Tensor linear_dequant(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias) {
  return product(x, nullptr, w, index, bias);
}

Tensor swiglu(const Tensor& gate, const Tensor& up, const ActivationParams&) {
  checks::same_shape(gate, up, "swiglu", "gate", "up");
  Tensor out(gate.shape);
  const float *gs = gate.data.data(), *us = up.data.data();
  float* os = out.data.data();
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const float g = gs[i];
    os[i] = g / (1.0f + std::exp(-g)) * us[i];  // silu(g) = g * sigmoid(g)
  }
  return out;
}

Tensor swiglu_clamped(const Tensor& gate, const Tensor& up, const ActivationParams& p) {
  checks::same_shape(gate, up, "swiglu_clamped", "gate", "up");
  const auto limit = static_cast<float>(p.limit), alpha = static_cast<float>(p.alpha);
  Tensor out(gate.shape);
  const float *gs = gate.data.data(), *us = up.data.data();
  float* os = out.data.data();
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const float g = std::min(gs[i], limit);
    const float u = std::clamp(us[i], -limit, limit);
    os[i] = (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));  // (up + 1) * gate * sigmoid(alpha * gate)
  }
  return out;
}

void deinterleave_gate_up(const Tensor& gate_up, Tensor& gate, Tensor& up,
                          Tensor (*columns_of)(const Tensor&, int64_t, int64_t)) {
  if (gate_up.cols() % 2 != 0)
    throw std::invalid_argument("gate_up " + gate_up.shape_string() + " has an odd number of features");
  std::vector<int64_t> shape = gate_up.shape;
  shape.back() /= 2;
  Tensor pairs = gate_up;  // a copy shares a device's values
  pairs.shape = {gate_up.rows() * shape.back(), 2};
  gate = columns_of(pairs, 0, 1);
  up = columns_of(pairs, 1, 1);
  gate.shape = shape;
  up.shape = shape;
}

void moe_combine(Tensor& out, const Tensor& expert_out, std::span<const int64_t> rows, std::span<const float> weights) {
  checks::moe_combine(out, expert_out, rows, weights);
  for (size_t i = 0; i < rows.size(); ++i) {
    float* dst = out.row(rows[i]);
    const float* src = expert_out.row(static_cast<int64_t>(i));
    for (int64_t j = 0; j < out.cols(); ++j) dst[j] += weights[i] * src[j];
  }
}

}  // namespace dayzero::executor
