// CPU kernels: embedding, RMSNorm, linear, gated activations, MoE combine.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "executor/kernels.h"

namespace dayzero::executor {

namespace {
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix>;

void check_same(const Tensor& a, const Tensor& b, const char* what) {
  if (a.shape != b.shape)
    throw std::invalid_argument(std::string(what) + ": gate " + a.shape_string() + " and up " + b.shape_string() +
                                " differ");
}

// y = x W^T + b with W given as a row-major [out, in] (or [in, out]) float matrix.
Tensor product(const Tensor& x, const float* wdata, const StoredWeight& w, std::span<const float> bias) {
  const int64_t in = w.input_major ? w.rows() : w.cols(), out = w.input_major ? w.cols() : w.rows();
  if (x.cols() != in)
    throw std::invalid_argument("linear '" + w.name + "': input " + x.shape_string() + " has " +
                                std::to_string(x.cols()) + " features, the weight " + shape_string(w.shape) +
                                " takes " + std::to_string(in));
  if (!bias.empty() && static_cast<int64_t>(bias.size()) != out)
    throw std::invalid_argument("linear '" + w.name + "': bias of " + std::to_string(bias.size()) + " for " +
                                std::to_string(out) + " outputs");
  std::vector<int64_t> shape = x.shape;
  shape.back() = out;
  Tensor y(shape);
  ConstMap X(x.data.data(), x.rows(), in);
  Eigen::Map<RowMatrix> Y(y.data.data(), x.rows(), out);
  if (w.input_major) Y.noalias() = X * ConstMap(wdata, in, out);
  else Y.noalias() = X * ConstMap(wdata, out, in).transpose();
  if (!bias.empty()) Y.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias.data(), out);
  return y;
}
}  // namespace

Tensor embedding(const StoredWeight& table, std::span<const int64_t> tokens) {
  const int64_t vocab = table.rows(), hidden = table.cols();
  Tensor out({static_cast<int64_t>(tokens.size()), hidden});
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= vocab)
      throw std::out_of_range("embedding '" + table.name + "': token " + std::to_string(tokens[t]) +
                              " outside the vocabulary of " + std::to_string(vocab));
    dequantize_row(table, 0, tokens[t], std::span<float>(out.row(static_cast<int64_t>(t)), static_cast<size_t>(hidden)));
  }
  return out;
}

void rms_norm(Tensor& x, std::span<const float> weight, double eps) {
  const auto n = static_cast<int64_t>(weight.size());
  if (n == 0 || x.numel() % n != 0 || x.cols() % n != 0)
    throw std::invalid_argument("rms_norm: " + std::to_string(n) + " weights do not divide rows of " +
                                x.shape_string());
  for (int64_t g = 0; g < x.numel() / n; ++g) {
    float* p = x.data.data() + g * n;
    double sum_sq = 0.0;
    for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(p[i]) * p[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
    for (int64_t i = 0; i < n; ++i) p[i] = weight[i] * (p[i] * inv);
  }
}

Tensor linear_f32(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias) {
  if (w.kind != model::StorageKind::plain || w.dtype != model::DType::f32)
    throw std::invalid_argument("linear_f32 '" + w.name + "': weight is not plain F32");
  if (index < 0 || index >= w.matrices())
    throw std::out_of_range("linear '" + w.name + "': matrix " + std::to_string(index) + " of " +
                            std::to_string(w.matrices()));
  const std::byte* base = w.data.data() + index * w.rows() * w.cols() * static_cast<int64_t>(sizeof(float));
  if (reinterpret_cast<uintptr_t>(base) % alignof(float) != 0) return linear_dequant(x, w, index, bias);
  return product(x, reinterpret_cast<const float*>(base), w, bias);  // zero copy from the mapping
}

Tensor linear_dequant(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias) {
  const Tensor m = dequantize_matrix(w, index);
  return product(x, m.data.data(), w, bias);
}

Tensor swiglu(const Tensor& gate, const Tensor& up, const ActivationParams&) {
  check_same(gate, up, "swiglu");
  Tensor out(gate.shape);
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const float g = gate.data[i];
    out.data[i] = g / (1.0f + std::exp(-g)) * up.data[i];  // silu(g) = g * sigmoid(g)
  }
  return out;
}

Tensor swiglu_clamped(const Tensor& gate, const Tensor& up, const ActivationParams& p) {
  check_same(gate, up, "swiglu_clamped");
  const auto limit = static_cast<float>(p.limit), alpha = static_cast<float>(p.alpha);
  Tensor out(gate.shape);
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const float g = std::min(gate.data[i], limit);
    const float u = std::clamp(up.data[i], -limit, limit);
    out.data[i] = (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));  // (up + 1) * gate * sigmoid(alpha * gate)
  }
  return out;
}

void deinterleave_gate_up(const Tensor& gate_up, Tensor& gate, Tensor& up) {
  if (gate_up.cols() % 2 != 0)
    throw std::invalid_argument("gate_up " + gate_up.shape_string() + " has an odd number of features");
  std::vector<int64_t> shape = gate_up.shape;
  shape.back() /= 2;
  gate = Tensor(shape);
  up = Tensor(shape);
  for (int64_t r = 0; r < gate_up.rows(); ++r)
    for (int64_t j = 0; j < shape.back(); ++j) {
      gate.row(r)[j] = gate_up.row(r)[2 * j];
      up.row(r)[j] = gate_up.row(r)[2 * j + 1];
    }
}

void moe_combine(Tensor& out, const Tensor& expert_out, std::span<const int64_t> rows, std::span<const float> weights) {
  if (expert_out.cols() != out.cols() || static_cast<int64_t>(rows.size()) != expert_out.rows() ||
      rows.size() != weights.size())
    throw std::invalid_argument("moe_combine: expert output " + expert_out.shape_string() + " with " +
                                std::to_string(rows.size()) + " rows and " + std::to_string(weights.size()) +
                                " weights into " + out.shape_string());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= out.rows())
      throw std::out_of_range("moe_combine: row " + std::to_string(rows[i]) + " outside " + out.shape_string());
    float* dst = out.row(rows[i]);
    const float* src = expert_out.row(static_cast<int64_t>(i));
    for (int64_t j = 0; j < out.cols(); ++j) dst[j] += weights[i] * src[j];
  }
}

}  // namespace dayzero::executor
