// The CUDA backend's routing and MoE combine over host tensors (stage 1,
// cuda/backend.h): inputs checked as the CPU kernels check them, uploaded, run,
// results downloaded.
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/staging.h"

namespace dayzero::cuda::staged {

using executor::Tensor;
using staging::download;
using staging::upload;

namespace {
executor::Routing route(const Tensor& logits, const executor::RouterParams& p, RouteRule rule, const char* what) {
  if (p.top_k <= 0 || p.top_k > logits.cols())
    throw std::invalid_argument(std::string(what) + ": top_k " + std::to_string(p.top_k) + " for " +
                                std::to_string(logits.cols()) + " experts");
  if (!p.correction_bias.empty() && static_cast<int64_t>(p.correction_bias.size()) != logits.cols())
    throw std::invalid_argument(std::string(what) + ": correction bias of " + std::to_string(p.correction_bias.size()) +
                                " for " + std::to_string(logits.cols()) + " experts");
  executor::Routing r;
  r.tokens = logits.rows();
  r.top_k = p.top_k;
  const auto n = static_cast<size_t>(r.tokens * r.top_k);
  r.experts.resize(n);
  r.weights.resize(n);
  if (n == 0) return r;
  DeviceRouter dr;
  dr.rule = rule;
  dr.top_k = static_cast<int>(p.top_k);
  dr.normalize = p.normalize;
  dr.n_group = static_cast<int>(p.n_group);
  dr.topk_group = static_cast<int>(p.topk_group);
  dr.routed_scaling_factor = p.routed_scaling_factor;
  DeviceBuffer experts = staging::scratch(n * sizeof(int64_t)), weights = staging::scratch(n * sizeof(float));
  const DeviceBuffer bias = upload(p.correction_bias);
  const bool biased = rule == RouteRule::sigmoid_group_topk && !p.correction_bias.empty();
  try {
    route_f32(upload(logits), r.tokens, logits.cols(), dr, biased ? &bias : nullptr, experts, weights);
  } catch (const CudaError& e) {  // a configuration the rule cannot hold: the CPU kernel's exception type
    throw std::invalid_argument(std::string(what) + ": " + e.what());
  }
  experts.download(r.experts.data(), n * sizeof(int64_t));
  weights.download(r.weights.data(), n * sizeof(float));
  return r;
}
}  // namespace

executor::Routing route_softmax_topk(const Tensor& logits, const executor::RouterParams& p) {
  return route(logits, p, RouteRule::softmax_topk, "route_softmax_topk");
}
executor::Routing route_topk_softmax(const Tensor& logits, const executor::RouterParams& p) {
  return route(logits, p, RouteRule::topk_softmax, "route_topk_softmax");
}
executor::Routing route_sigmoid_group_topk(const Tensor& logits, const executor::RouterParams& p) {
  return route(logits, p, RouteRule::sigmoid_group_topk, "route_sigmoid_group_topk");
}

void moe_combine(Tensor& out, const Tensor& expert_out, std::span<const int64_t> rows, std::span<const float> weights) {
  if (expert_out.cols() != out.cols() || static_cast<int64_t>(rows.size()) != expert_out.rows() ||
      rows.size() != weights.size())
    throw std::invalid_argument("moe_combine: expert output " + expert_out.shape_string() + " with " +
                                std::to_string(rows.size()) + " rows and " + std::to_string(weights.size()) +
                                " weights into " + out.shape_string());
  for (int64_t r : rows)
    if (r < 0 || r >= out.rows())
      throw std::out_of_range("moe_combine: row " + std::to_string(r) + " outside " + out.shape_string());
  if (rows.empty() || out.numel() == 0) return;
  DeviceBuffer d = upload(out);
  moe_combine_f32(d, upload(expert_out), upload(rows), upload(weights), static_cast<int64_t>(rows.size()), out.cols());
  download(d, out);
}

}  // namespace dayzero::cuda::staged
