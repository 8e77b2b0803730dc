// The CUDA backend's kernel table: the executor's kernel signatures, each kernel
// reading its tensor inputs where they lie (on the device after an earlier kernel,
// else uploaded once and kept with the tensor) and leaving its result on the device
// (stage 2, executor/tensor_values.h; cuda/backend.h). Checks mirror the CPU kernels' so a bad
// call fails the same way on both backends.
#include "cuda/backend.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/arith.h"
#include "cuda/dequant.h"
#include "cuda/kernels.h"
#include "cuda/kv_store.h"
#include "cuda/staging.h"
#ifdef DAYZERO_HAVE_NCCL
#include "cuda/nccl_communicator.h"
#endif
#include "executor/kernel_checks.h"
#include "executor/kernels.h"
#include "executor/rope.h"

namespace dayzero::cuda {

namespace {
using executor::StoredWeight;
using executor::Tensor;
using model::OpKind;

using staging::device_weight;
using staging::upload;
DeviceBuffer scratch(int64_t floats) { return staging::scratch(static_cast<size_t>(floats) * sizeof(float)); }

Tensor embedding(const StoredWeight& table, std::span<const int64_t> tokens) {
  executor::checks::embedding(table, tokens);
  const int64_t vocab = table.rows(), hidden = table.cols(), T = static_cast<int64_t>(tokens.size());
  if (T == 0) return Tensor({0, hidden});
  DeviceBuffer y = scratch(T * hidden);
  // A BF16 table stays BF16 on the device (the one copy a tied LM head reads too).
  if (const DeviceBuffer* wb = table.input_major ? nullptr : staging::device_weight_bf16(table, 0))
    embedding_bf16(*wb, vocab, hidden, upload(tokens), T, y);
  else embedding_f32(device_weight(table, 0), vocab, hidden, upload(tokens), T, y);
  return staging::result({T, hidden}, std::move(y));
}

void rms_norm(Tensor& x, std::span<const float> weight, double eps) {
  executor::checks::rms_norm(x, weight);
  const auto n = static_cast<int64_t>(weight.size());
  if (x.numel() == 0) return;
  rms_norm_f32(staging::writable(x), upload(weight), x.numel() / n, n, eps);
}

void rms_norm_zero_centered(Tensor& x, std::span<const float> weight, double eps) {
  std::vector<float> one_plus(weight.begin(), weight.end());  // (1 + w), in float as the CPU adds it
  for (float& w : one_plus) w += 1.0f;
  cuda::rms_norm(x, one_plus, eps);  // qualified: not executor's, which argument lookup also finds
}

void rms_norm_given_mean(Tensor& x, std::span<const float> weight, double eps, std::span<const float> mean_sq) {
  executor::checks::rms_norm_given_mean(x, weight, mean_sq);
  if (x.numel() == 0) return;
  rms_norm_given_mean_f32(staging::writable(x), upload(weight), upload(mean_sq), x.rows(), x.cols(), eps);
}

void layer_norm(Tensor& x, std::span<const float> weight, std::span<const float> bias, double eps) {
  executor::checks::layer_norm(x, weight, bias);
  const int64_t n = x.cols();
  if (x.numel() == 0) return;
  layer_norm_f32(staging::writable(x), upload(weight), upload(bias), x.rows(), n, eps);
}

// The table's frequencies go up with each call (rot_dim / 2 doubles): cos and sin are
// computed on the device from them, in double, as the CPU computes them.
void rope(Tensor& x, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t> positions,
          const executor::RopeTable& table, executor::RopeLayout layout) {
  executor::checks::rope(x, heads, stride, offset, positions, table);
  if (x.numel() == 0 || table.inv_freq.empty()) return;
  const DeviceRopeTable t = rope_table_on_device(staging::pool(), table.inv_freq.data(),
                                                 static_cast<int64_t>(table.inv_freq.size()), table.attention_factor);
  rope_f32(staging::writable(x), x.rows(), heads, stride, offset, upload(positions), t,
           layout == executor::RopeLayout::interleaved);
}

// DeepSeek-V3's W8A8 for FP8 block weights past the decode GEMV (cuda/dequant.h):
// opt-in with DAYZERO_CUDA_FP8_W8A8=1 (its values are not the CPU's), and dropped for
// the process after cuBLASLt first refuses it (no block-scaled kernel for the device or
// the library: the BF16 path below serves instead).
// The refusal's message is kept for the run's Measurements (fp8_block_gemm_path).
std::atomic<bool> g_w8a8_refused{false};
std::mutex g_w8a8_mutex;
std::string g_w8a8_refusal;
bool w8a8_asked() {
  static const bool on = [] {
    const char* v = std::getenv("DAYZERO_CUDA_FP8_W8A8");
    return v && std::string(v) == "1";
  }();
  return on;
}
bool w8a8_wanted(const staging::DeviceFp8Weight& w8, int64_t in, int64_t out) {
  return w8a8_asked() && !g_w8a8_refused.load() && w8.block_rows == kFp8ScaleBlock && w8.block_cols == kFp8ScaleBlock &&
         in % kFp8ScaleBlock == 0 && out % plan::kCudaW8a8OuterMultiple == 0;
}
// y [m, out] = x W^T through Blas::gemm_fp8_blocks: x quantized per row and 128 columns
// (m padded to a multiple of 4 with zero rows), W's block scales padded for cuBLASLt.
// False (and the path off) when cuBLASLt refuses it.
bool w8a8_linear(const Tensor& x, const staging::DeviceFp8Weight& w8, int64_t in, int64_t out, DeviceBuffer& dy) {
  const int64_t m = x.rows(), m_pad = core::round_up(m, plan::kCudaW8a8RowMultiple), groups = in / kFp8ScaleBlock;
  DeviceBuffer codes = staging::scratch(static_cast<size_t>(m_pad * in));
  DeviceBuffer x_scales = scratch(groups * m_pad);
  const int64_t w_rows = (out + kFp8ScaleBlock - 1) / kFp8ScaleBlock;
  DeviceBuffer w_scales = scratch(w_rows * fp8_padded_scale_cols(groups));
  try {
    fp8_quantize_rows(staging::on_device(x), m, in, m_pad, codes, x_scales);
    fp8_pad_block_scales(w8.scales, w_rows, groups, w_scales);
    if (m_pad == m) {
      staging::blas().gemm_fp8_blocks(codes, x_scales, w8.codes, w_scales, dy, m_pad, out, in);
    } else {
      DeviceBuffer padded = scratch(m_pad * out);
      staging::blas().gemm_fp8_blocks(codes, x_scales, w8.codes, w_scales, padded, m_pad, out, in);
      dy.copy_range(padded, 0, 0, static_cast<size_t>(m * out) * sizeof(float));
    }
  } catch (const CudaError& e) {
    const std::lock_guard<std::mutex> lock(g_w8a8_mutex);
    if (!g_w8a8_refused.exchange(true)) g_w8a8_refusal = e.what();
    return false;
  }
  return true;
}

// Backend::fp8_block_gemm: w8a8 while the option is on and cuBLASLt has not refused.
plan::Fp8BlockGemm fp8_block_gemm_path(std::string& note) {
  if (!w8a8_asked()) return plan::Fp8BlockGemm::bf16;
  const std::lock_guard<std::mutex> lock(g_w8a8_mutex);
  if (!g_w8a8_refused.load()) return plan::Fp8BlockGemm::w8a8;
  note = "DAYZERO_CUDA_FP8_W8A8=1 asked for W8A8, and cuBLASLt refused its block-scaled FP8 GEMM (" + g_w8a8_refusal +
         "): the FP8 block GEMMs past the GEMV ran widened to BF16 from then on";
  return plan::Fp8BlockGemm::bf16;
}

Tensor linear(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias) {
  const auto [in, out] = executor::checks::linear(x, w, index, bias);
  std::vector<int64_t> shape = x.shape;
  shape.back() = out;
  if (x.rows() * out == 0) return Tensor(shape);
  DeviceBuffer dy = scratch(x.rows() * out);
  // The activations rounded to BF16 (the plan's compute dtype), once for the GEMMs that
  // share an input.
  const auto bf16_x = [&]() -> const DeviceBuffer& { return staging::on_device_bf16(x); };
  // BF16 weights stay 2 bytes an element and block-scaled FP8 ones 1 byte on the
  // device. FP8: a few rows (decode) read the codes where they lie (fp8_block_gemv);
  // more rows make the matrix BF16 for the call and multiply on the tensor cores, as
  // BF16 weights do (cuBLASLt's BF16 kernels want the inner sizes in multiples of 8).
  const bool tensor_cores = in % 8 == 0 && out % 8 == 0;
  const staging::DeviceFp8Weight* w8 = staging::device_weight_fp8(w, index);
  const DeviceBuffer* wb = tensor_cores && !w8 ? staging::device_weight_bf16(w, index) : nullptr;
  bool bias_added = false;
  if (w8 && fp8_gemv_fits(x.rows(), in, w8->block_cols)) {
    const DeviceBuffer db = bias.empty() ? DeviceBuffer() : upload(bias);
    fp8_block_gemv(bf16_x(), x.rows(), w8->codes, w8->scales, out, in, w8->block_rows, w8->block_cols,
                   bias.empty() ? nullptr : &db, dy);
    bias_added = true;
  } else if (w8 && w8a8_wanted(*w8, in, out) && w8a8_linear(x, *w8, in, out, dy)) {
    // the engines' W8A8 (opt-in)
  } else if (w8 && tensor_cores) {
    DeviceBuffer w_bf16 = staging::scratch(static_cast<size_t>(out * in) * 2);
    fp8_block_to_bf16(w8->codes, w8->scales, out, in, w8->block_rows, w8->block_cols, w_bf16);
    staging::blas().gemm_bf16(bf16_x(), w_bf16, dy, x.rows(), out, in);
  } else if (wb) {
    staging::blas().gemm_bf16(bf16_x(), *wb, dy, x.rows(), out, in);
  } else {  // any other storage, or sizes cuBLASLt's BF16 kernels do not take: float32
    staging::blas().gemm_f32(staging::on_device(x), device_weight(w, index), dy, x.rows(), out, in);
  }
  if (!bias.empty() && !bias_added) add_bias_f32(dy, upload(bias), x.rows(), out);
  return staging::result(std::move(shape), std::move(dy));
}

Tensor columns(const Tensor& x, int64_t first, int64_t count) {
  executor::checks::columns(x, first, count);
  if (x.rows() * count == 0) return Tensor({x.rows(), count});
  DeviceBuffer out = scratch(x.rows() * count);
  columns_f32(staging::on_device(x), x.rows(), x.cols(), first, count, out);
  return staging::result({x.rows(), count}, std::move(out));
}

// A batch's sequences apart and back together on the device: contiguous rows, copied
// in stream order (device to device).
Tensor rows(const Tensor& x, int64_t first, int64_t count) {
  executor::checks::rows(x, first, count);
  if (count * x.cols() == 0) return Tensor({count, x.cols()});
  DeviceBuffer out = scratch(count * x.cols());
  const auto row_bytes = static_cast<size_t>(x.cols()) * sizeof(float);
  out.copy_range(staging::on_device(x), static_cast<size_t>(first) * row_bytes, 0,
                 static_cast<size_t>(count) * row_bytes);
  return staging::result({count, x.cols()}, std::move(out));
}

Tensor stack_rows(std::span<const Tensor> parts) {
  const int64_t total = executor::checks::stack_rows(parts), cols = parts.front().cols();
  if (total * cols == 0) return Tensor({total, cols});
  DeviceBuffer out = scratch(total * cols);
  size_t at = 0;
  for (const Tensor& p : parts) {
    const auto bytes = static_cast<size_t>(p.numel()) * sizeof(float);
    if (bytes > 0) out.copy_range(staging::on_device(p), 0, at, bytes);
    at += bytes;
  }
  return staging::result({total, cols}, std::move(out));
}

std::vector<float> row_sum_squares(const Tensor& x) {
  std::vector<float> out(static_cast<size_t>(x.rows()));
  if (x.numel() == 0) return out;
  DeviceBuffer sums = scratch(x.rows());
  row_sum_squares_f32(staging::on_device(x), x.rows(), x.cols(), sums);
  sums.download(out.data(), out.size() * sizeof(float));
  return out;
}

Tensor zeros_for(std::vector<int64_t> shape, DeviceUse use) {
  const int64_t n = executor::shape_elems(shape);
  if (n == 0) return Tensor(std::move(shape));
  DeviceBuffer out = staging::scratch(static_cast<size_t>(n) * sizeof(float), use);
  out.zero(0, static_cast<size_t>(n) * sizeof(float));
  return staging::result(std::move(shape), std::move(out));
}
Tensor zeros(std::vector<int64_t> shape) { return zeros_for(std::move(shape), DeviceUse::workspace); }
Tensor cache_zeros(std::vector<int64_t> shape) { return zeros_for(std::move(shape), DeviceUse::kv_cache); }

// Rows by index on the device (the embedding gather's kernel, x as the table).
Tensor gather_rows(const Tensor& x, std::span<const int64_t> indices) {
  executor::checks::gather_rows(x, indices);
  const auto n = static_cast<int64_t>(indices.size());
  if (n * x.cols() == 0) return Tensor({n, x.cols()});
  DeviceBuffer out = scratch(n * x.cols());
  embedding_f32(staging::on_device(x), x.rows(), x.cols(), upload(indices), n, out);
  return staging::result({n, x.cols()}, std::move(out));
}

void add(Tensor& x, const Tensor& y) {
  executor::checks::same_shape(x, y, "add", "x", "y");
  if (x.numel() == 0) return;
  const DeviceBuffer& dy = staging::on_device(y);
  add_f32(staging::writable(x), dy, x.numel());
}

Tensor swiglu(const Tensor& gate, const Tensor& up, const executor::ActivationParams&) {
  executor::checks::same_shape(gate, up, "swiglu", "gate", "up");
  if (gate.numel() == 0) return Tensor(gate.shape);
  DeviceBuffer d = scratch(gate.numel());
  swiglu_f32(staging::on_device(gate), staging::on_device(up), d, gate.numel());
  return staging::result(gate.shape, std::move(d));
}

Tensor swiglu_clamped(const Tensor& gate, const Tensor& up, const executor::ActivationParams& p) {
  executor::checks::same_shape(gate, up, "swiglu_clamped", "gate", "up");
  if (gate.numel() == 0) return Tensor(gate.shape);
  DeviceBuffer d = scratch(gate.numel());
  swiglu_clamped_f32(staging::on_device(gate), staging::on_device(up), d, gate.numel(), p.alpha, p.limit);
  return staging::result(gate.shape, std::move(d));
}

Tensor sigmoid_gate(const Tensor& gate, const Tensor& x, const executor::ActivationParams&) {
  const bool per_row = executor::checks::gate_per_row(gate, x, "sigmoid_gate");
  if (x.numel() == 0) return Tensor(x.shape);
  DeviceBuffer d = scratch(x.numel());
  sigmoid_gate_f32(staging::on_device(gate), staging::on_device(x), d, x.numel(), per_row ? x.cols() : 1);
  return staging::result(x.shape, std::move(d));
}

}  // namespace

namespace {
using executor::op_cost;
// The CUDA backend: one row per (op kind, variant) it runs, costed as the CPU's (the
// same op inventory formulas; float32 activations). RoPE's rows are the frequency
// tables, built on the host for either backend; the rotation is the forward's.
const executor::KernelEntry kCudaKernels[] = {
    {OpKind::embedding, "gather", &embedding, &op_cost},
    {OpKind::norm, "rms", &rms_norm, &op_cost},
    {OpKind::norm, "rms_zero_centered", &rms_norm_zero_centered, &op_cost},
    {OpKind::norm, "layer_norm", &layer_norm, &op_cost},
    {OpKind::norm, "rms_across_heads", &rms_norm_given_mean, &op_cost},  // the forward all-reduces the mean
    {OpKind::gemm, "f32", &linear, &op_cost},
    {OpKind::gemm, "bf16", &linear, &op_cost},
    {OpKind::gemm, "f16", &linear, &op_cost},
    {OpKind::gemm, "fp8_block", &linear, &op_cost},
    {OpKind::gemm, "mxfp4", &linear, &op_cost},
    {OpKind::gemm, "int4_group", &linear, &op_cost},
    {OpKind::expert_gemm, "f32", &linear, &op_cost},
    {OpKind::expert_gemm, "bf16", &linear, &op_cost},
    {OpKind::expert_gemm, "f16", &linear, &op_cost},
    {OpKind::expert_gemm, "fp8_block", &linear, &op_cost},
    {OpKind::expert_gemm, "mxfp4", &linear, &op_cost},
    {OpKind::expert_gemm, "int4_group", &linear, &op_cost},
    {OpKind::rope, "default", &executor::rope_default, &op_cost},
    {OpKind::rope, "llama3", &executor::rope_llama3, &op_cost},
    {OpKind::rope, "yarn", &executor::rope_yarn, &op_cost},
    {OpKind::attention, "gqa", &staged::attention, &op_cost},
    {OpKind::attention, "gqa+sliding", &staged::attention, &op_cost},
    {OpKind::attention, "gqa+sinks", &staged::attention, &op_cost},
    {OpKind::attention, "gqa+sliding+sinks", &staged::attention, &op_cost},
    // The form the CPU picks (absorbed for decode), costed as run: over the whole
    // context with the indexer's keep mask too (the kernels skip the keys it drops but
    // move them all).
    {OpKind::attention, "mla", &staged::mla_attention, &executor::mla_cost},
    {OpKind::attention, "mla+sparse_topk", &staged::mla_attention, &executor::mla_cost},
    {OpKind::indexer, "dsa_topk", &staged::dsa_topk, &executor::indexer_cost},
    {OpKind::linear_attention, "gated_delta_net", &staged::gated_delta_net, &executor::linear_attention_cost},
    {OpKind::activation, "swiglu", &swiglu, &op_cost},
    {OpKind::activation, "swiglu_clamped", &swiglu_clamped, &op_cost},
    {OpKind::activation, "sigmoid_gate", &sigmoid_gate, &op_cost},
    {OpKind::router, "softmax_topk", &staged::route_softmax_topk, &op_cost},
    {OpKind::router, "gpt_oss_topk_softmax", &staged::route_topk_softmax, &op_cost},
    {OpKind::router, "sigmoid_group_topk", &staged::route_sigmoid_group_topk, &op_cost},
    {OpKind::moe_combine, "weighted_sum", &staged::moe_combine, &op_cost},
    {OpKind::moe_combine, "weighted_sum+shared_gate", &staged::moe_combine, &op_cost},
};
}  // namespace

std::span<const executor::KernelEntry> cuda_kernel_table() { return kCudaKernels; }

std::unique_ptr<executor::Communicator> make_nccl_communicator(executor::Communicator& bootstrap, double timeout_s) {
  std::string error;
  DevicePool* pool = nullptr;
  try {
#ifndef DAYZERO_HAVE_NCCL
    throw CudaError("this dayzero was built without NCCL (CMake found no nccl.h): use the MPI communicator");
#endif
    pool = &staging::pool();
  } catch (const std::exception& e) {
    error = e.what();
  }
  executor::raise_on_every_rank(bootstrap, error);
#ifdef DAYZERO_HAVE_NCCL
  return std::make_unique<NcclCommunicator>(bootstrap, *pool, timeout_s);
#else
  (void)timeout_s;
  (void)pool;
  return nullptr;  // not reached: raise_on_every_rank threw
#endif
}

void register_cuda_backend() {
  executor::register_backend({"cuda",
                              cuda_kernel_table(),
                              &staging::begin_run,
                              &take_kernel_seconds,
                              &staging::device_memory,
                              &rope,
                              &staging::weight_placement_seconds,
                              &add,
                              &cuda::columns,
                              &make_kv_store,
                              &set_kernel_clock,
                              &cuda::rows,
                              &cuda::stack_rows,
                              &cuda::gather_rows,
                              &cuda::zeros,
                              &cuda::cache_zeros,
                              &cuda::row_sum_squares,
                              &begin_kernel_span,
                              &end_kernel_span,
                              &fp8_block_gemm_path});
}

}  // namespace dayzero::cuda
