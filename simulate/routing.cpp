#include "simulate/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/random.h"
#include "plan/plan.h"

namespace dayzero::simulate {

Routing::Routing(int64_t num_experts, const plan::Workload& w) {
  const auto E = static_cast<size_t>(num_experts);
  p_.assign(E, 0.0);
  rank_of_.assign(E, 0);
  if (E == 0) return;
  if (!w.expert_counts.empty()) {
    p_ = w.expert_counts;
    std::vector<int64_t> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p_[a] > p_[b]; });
    for (size_t r = 0; r < E; ++r) rank_of_[order[r]] = static_cast<int64_t>(r);
  } else {
    // Fisher-Yates with a counter-based generator: id of popularity rank r.
    std::vector<int64_t> id(E);
    std::iota(id.begin(), id.end(), 0);
    for (size_t i = E - 1; i > 0; --i) std::swap(id[i], id[model::splitmix64(w.routing_seed * 1000003 + i) % (i + 1)]);
    for (size_t r = 0; r < E; ++r) {
      p_[id[r]] = 1.0 / std::pow(static_cast<double>(r + 1), w.routing_zipf_s);
      rank_of_[id[r]] = static_cast<int64_t>(r);
    }
  }
  const double total = std::accumulate(p_.begin(), p_.end(), 0.0);
  for (auto& x : p_) x = total > 0 ? x / total : 1.0 / static_cast<double>(E);
  log_miss_.resize(E);
  for (size_t e = 0; e < E; ++e) log_miss_[e] = p_[e] >= 1.0 ? -1e300 : std::log1p(-p_[e]);
}

int Routing::busiest_rank(int ep) const {
  for (const auto& [e, r] : busiest_)
    if (e == ep) return r;
  const int64_t per = num_experts() / ep;
  int best = 0;
  double best_share = -1;
  for (int r = 0; r < ep; ++r) {
    double s = 0;
    for (int64_t e = r * per; e < (r + 1) * per; ++e) s += p_[static_cast<size_t>(e)];
    if (s > best_share) {
      best_share = s;
      best = r;
    }
  }
  busiest_.emplace_back(ep, best);
  return best;
}

bool Routing::is_resident(int64_t expert, int64_t resident_per_layer) const {
  return resident_per_layer < 0 || rank_of_[static_cast<size_t>(expert)] < resident_per_layer;
}

double Routing::busiest_rank_share(int ep) const {
  const int64_t per = num_experts() / ep;
  const int r = busiest_rank(ep);
  double s = 0;
  for (int64_t e = r * per; e < (r + 1) * per; ++e) s += p_[static_cast<size_t>(e)];
  return s;
}

Routing::RankLoad Routing::busiest_rank_load(int ep, double assignments, int tile_rows, int64_t resident) const {
  const auto key = std::make_tuple(ep, assignments, tile_rows, resident);
  if (const auto it = loads_.find(key); it != loads_.end()) return it->second;
  if (loads_.size() > 65536) loads_.clear();  // bound the memory of long searches
  const int64_t per = num_experts() / ep;
  const int r = busiest_rank(ep);
  RankLoad l;
  for (int64_t e = r * per; e < (r + 1) * per; ++e) {
    const auto i = static_cast<size_t>(e);
    const double rows = assignments * p_[i];  // expected tokens routed to e
    // P(at least one of the step's assignments picks e) = 1 - (1 - p)^assignments.
    const double touched = -std::expm1(assignments * log_miss_[i]);
    l.assignments += rows;
    l.experts_touched += touched;
    l.padded_rows += touched * std::ceil(std::max(rows, 1.0) / tile_rows) * tile_rows;
    if (!is_resident(e, resident)) l.cold_touched += touched;
  }
  loads_.emplace(key, l);
  return l;
}

}  // namespace dayzero::simulate
