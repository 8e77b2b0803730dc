// The CUDA backend's routing and MoE combine (cuda/backend.h): inputs checked as the
// CPU kernels check them and read where they lie; the routing comes back to the host
// (the forward packs the expert exchange there), the combine stays on the device.
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/staging.h"
#include "executor/kernel_checks.h"

namespace dayzero::cuda::staged {

using executor::Tensor;
using staging::upload;

namespace {
executor::Routing route(const Tensor& logits, const executor::RouterParams& p, RouteRule rule, const char* what) {
  if (rule == RouteRule::sigmoid_group_topk) executor::checks::group_router(logits, p);
  else executor::checks::router(logits, p, what);
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
  route_f32(staging::on_device(logits), r.tokens, logits.cols(), dr, biased ? &bias : nullptr, experts, weights);
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
  executor::checks::moe_combine(out, expert_out, rows, weights);
  if (rows.empty() || out.numel() == 0) return;
  const DeviceBuffer& y = staging::on_device(expert_out);
  moe_combine_f32(staging::writable(out), y, upload(rows), upload(weights), static_cast<int64_t>(rows.size()),
                  out.cols());
}

}  // namespace dayzero::cuda::staged
