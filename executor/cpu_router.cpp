// CPU kernels: MoE routing. Every selection is a stable sort by score, so equal
// scores go to the lower expert (or group) index: routing is deterministic.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "executor/kernel_checks.h"
#include "executor/kernels.h"

namespace dayzero::executor {

namespace {
// DeepSeek-V3 reference (transformers DeepseekV3MoE.route_tokens_to_experts): the
// normalization's denominator gets 1e-20 so that all-zero weights stay finite.
constexpr double kNormEpsilon = 1e-20;
// Groups are ranked by the sum of their best two (biased) scores (DeepSeek-V3 noaux_tc).
constexpr int64_t kGroupScoreTop = 2;

// Indices of the k largest values (among `allowed`), best first, ties to the lower index.
std::vector<int64_t> top_k(std::span<const double> v, int64_t k, const std::vector<bool>* allowed = nullptr) {
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i)
    if (!allowed || (*allowed)[i]) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  idx.resize(static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(idx.size()))));
  return idx;
}

Routing start(const Tensor& logits, const RouterParams& p, const char* what) {
  checks::router(logits, p, what);
  Routing r;
  r.tokens = logits.rows();
  r.top_k = p.top_k;
  return r;
}

void normalize(std::vector<double>& w, double eps) {
  const double sum = std::accumulate(w.begin(), w.end(), 0.0) + eps;
  for (double& x : w) x /= sum;
}
}  // namespace

Routing route_softmax_topk(const Tensor& logits, const RouterParams& p) {
  Routing r = start(logits, p, "route_softmax_topk");
  const int64_t E = logits.cols();
  std::vector<double> prob(static_cast<size_t>(E));
  for (int64_t t = 0; t < r.tokens; ++t) {
    const float* l = logits.row(t);
    const double mx = *std::max_element(l, l + E);
    double sum = 0.0;
    for (int64_t e = 0; e < E; ++e) sum += (prob[e] = std::exp(l[e] - mx));
    for (double& x : prob) x /= sum;
    const auto sel = top_k(prob, p.top_k);
    std::vector<double> w;
    for (int64_t e : sel) w.push_back(prob[e]);
    if (p.normalize) normalize(w, 0.0);
    for (size_t i = 0; i < sel.size(); ++i) {
      r.experts.push_back(sel[i]);
      r.weights.push_back(static_cast<float>(w[i]));
    }
  }
  return r;
}

Routing route_topk_softmax(const Tensor& logits, const RouterParams& p) {
  Routing r = start(logits, p, "route_topk_softmax");
  const int64_t E = logits.cols();
  for (int64_t t = 0; t < r.tokens; ++t) {
    std::vector<double> l(logits.row(t), logits.row(t) + E);
    const auto sel = top_k(l, p.top_k);
    const double mx = l[sel.front()];
    std::vector<double> w;
    for (int64_t e : sel) w.push_back(std::exp(l[e] - mx));
    normalize(w, 0.0);
    for (size_t i = 0; i < sel.size(); ++i) {
      r.experts.push_back(sel[i]);
      r.weights.push_back(static_cast<float>(w[i]));
    }
  }
  return r;
}

Routing route_sigmoid_group_topk(const Tensor& logits, const RouterParams& p) {
  Routing r = start(logits, p, "route_sigmoid_group_topk");
  const int64_t E = logits.cols(), G = p.n_group;
  checks::group_router(logits, p);
  const int64_t per_group = E / G;
  std::vector<double> score(static_cast<size_t>(E)), biased(static_cast<size_t>(E)),
      group_score(static_cast<size_t>(G));
  for (int64_t t = 0; t < r.tokens; ++t) {
    for (int64_t e = 0; e < E; ++e) {
      score[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits.row(t)[e])));
      biased[e] = score[e] + (p.correction_bias.empty() ? 0.0 : p.correction_bias[e]);
    }
    for (int64_t g = 0; g < G; ++g) {
      const auto best =
          top_k(std::span<const double>(biased).subspan(g * per_group, per_group), std::min(kGroupScoreTop, per_group));
      group_score[g] = 0.0;
      for (int64_t i : best) group_score[g] += biased[g * per_group + i];
    }
    std::vector<bool> allowed(static_cast<size_t>(E), false);
    for (int64_t g : top_k(group_score, p.topk_group))
      for (int64_t i = 0; i < per_group; ++i) allowed[g * per_group + i] = true;
    const auto sel = top_k(biased, p.top_k, &allowed);
    std::vector<double> w;
    for (int64_t e : sel) w.push_back(score[e]);  // weights from the unbiased scores
    if (p.normalize) normalize(w, kNormEpsilon);
    for (size_t i = 0; i < sel.size(); ++i) {
      r.experts.push_back(sel[i]);
      r.weights.push_back(static_cast<float>(w[i] * p.routed_scaling_factor));
    }
  }
  return r;
}

}  // namespace dayzero::executor
