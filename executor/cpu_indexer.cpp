// CPU kernels of DeepSeek sparse attention (GLM-5): the indexer's LayerNorm and its
// top-k selection.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "executor/kernel_checks.h"
#include "executor/kernels.h"
#include "executor/threads.h"

namespace dayzero::executor {

void layer_norm(Tensor& x, std::span<const float> weight, std::span<const float> bias, double eps) {
  checks::layer_norm(x, weight, bias);
  const int64_t n = x.cols();
  for (int64_t t = 0; t < x.rows(); ++t) {
    float* r = x.row(t);
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += r[i];
    mean /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) var += (r[i] - mean) * (r[i] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) r[i] = static_cast<float>((r[i] - mean) * inv) * weight[i] + bias[i];
  }
}

Tensor dsa_topk(const Tensor& q, const Tensor& w, std::span<const int64_t> q_positions, const KvPages& keys_in,
                const IndexerParams& p) {
  const int64_t T = q.rows(), C = keys_in.tokens, H = p.heads, D = p.head_dim;
  checks::dsa_topk(q, w, q_positions, keys_in, p);
  KvRows host_rows;  // a device's cache: its rows on the host
  const KvPages keys = to_host(keys_in, host_rows);
  Tensor keep({T, C});
  const double head_scale = 1.0 / std::sqrt(static_cast<double>(H)),
               dot_scale = 1.0 / std::sqrt(static_cast<double>(D));
  parallel_for(T, static_cast<double>(C * H * D), [&](int64_t t0, int64_t t1) {
    std::vector<double> score;
    std::vector<int64_t> order;
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t seen = q_positions[t] + 1;
      score.assign(static_cast<size_t>(seen), 0.0);
      for (int64_t j = 0; j < seen; ++j) {
        const float* k = keys.k_row(j);
        double s = 0.0;
        for (int64_t h = 0; h < H; ++h) {
          const float* qh = q.row(t) + h * D;
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(qh[d]) * k[d];
          s += static_cast<double>(w.row(t)[h]) * head_scale * std::max(0.0, dot * dot_scale);
        }
        score[static_cast<size_t>(j)] = s;
      }
      order.resize(static_cast<size_t>(seen));
      std::iota(order.begin(), order.end(), int64_t{0});
      const auto k = static_cast<size_t>(std::min(p.topk, seen));
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                        [&](int64_t a, int64_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
      for (size_t i = 0; i < k; ++i) keep.row(t)[order[i]] = 1.0f;
    }
  });
  return keep;
}

}  // namespace dayzero::executor
