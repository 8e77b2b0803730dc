#include "simulate/routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>

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

std::vector<std::pair<int64_t, double>> Routing::balanced_placement(int ep, int64_t redundant) const {
  const auto key = std::make_pair(ep, redundant);
  if (const auto it = placements_.find(key); it != placements_.end()) return it->second;
  const int64_t E = num_experts();
  // Replicas: one more each time to the expert whose replicas carry the most.
  std::vector<int64_t> copies(static_cast<size_t>(E), 1);
  std::priority_queue<std::pair<double, int64_t>> heavy;  // (load per replica, -id)
  for (int64_t e = 0; e < E; ++e) heavy.emplace(p_[static_cast<size_t>(e)], -e);
  for (int64_t k = 0; k < redundant && !heavy.empty(); ++k) {
    const int64_t e = -heavy.top().second;
    heavy.pop();
    const auto i = static_cast<size_t>(e);
    heavy.emplace(p_[i] / static_cast<double>(++copies[i]), -e);
  }
  std::vector<std::pair<double, int64_t>> replicas;  // (share, id)
  for (int64_t e = 0; e < E; ++e)
    for (int64_t c = 0; c < copies[static_cast<size_t>(e)]; ++c)
      replicas.emplace_back(p_[static_cast<size_t>(e)] / static_cast<double>(copies[static_cast<size_t>(e)]), e);
  std::stable_sort(replicas.begin(), replicas.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // Heaviest first, to the least-loaded rank with a free slot (ties: the lowest rank).
  const int64_t slots = (E + redundant) / ep;
  std::vector<double> load(static_cast<size_t>(ep), 0);
  std::vector<std::vector<std::pair<int64_t, double>>> held(static_cast<size_t>(ep));
  using Free = std::pair<double, int>;
  std::priority_queue<Free, std::vector<Free>, std::greater<>> free_ranks;
  for (int r = 0; r < ep; ++r) free_ranks.emplace(0.0, r);
  for (const auto& [share, e] : replicas) {
    if (free_ranks.empty()) break;
    const int r = free_ranks.top().second;
    free_ranks.pop();
    const auto ri = static_cast<size_t>(r);
    load[ri] += share;
    held[ri].emplace_back(e, share);
    if (static_cast<int64_t>(held[ri].size()) < slots) free_ranks.emplace(load[ri], r);
  }
  const auto busiest = static_cast<size_t>(std::max_element(load.begin(), load.end()) - load.begin());
  return placements_.emplace(key, held[busiest]).first->second;
}

Routing::RankLoad Routing::busiest_rank_load(int ep, double assignments, int tile_rows, int64_t resident,
                                             int64_t redundant) const {
  const auto key = std::make_tuple(ep, assignments, tile_rows, resident, redundant);
  if (const auto it = loads_.find(key); it != loads_.end()) return it->second;
  if (loads_.size() > 65536) loads_.clear();  // bound the memory of long searches
  RankLoad l;
  // One replica of expert e receiving `share` of all routed pairs, with log(1 - share).
  auto add = [&](int64_t e, double share, double log_miss) {
    const double rows = assignments * share;  // expected tokens routed to it
    // P(at least one of the step's assignments picks it) = 1 - (1 - share)^assignments.
    const double touched = -std::expm1(assignments * log_miss);
    l.assignments += rows;
    l.experts_touched += touched;
    l.padded_rows += touched * std::ceil(std::max(rows, 1.0) / tile_rows) * tile_rows;
    if (!is_resident(e, resident)) l.cold_touched += touched;
  };
  if (redundant > 0) {
    for (const auto& [e, share] : balanced_placement(ep, redundant))
      add(e, share, share >= 1.0 ? -1e300 : std::log1p(-share));
  } else {
    const int64_t per = num_experts() / ep;
    const int r = busiest_rank(ep);
    for (int64_t e = r * per; e < (r + 1) * per; ++e)
      add(e, p_[static_cast<size_t>(e)], log_miss_[static_cast<size_t>(e)]);
  }
  loads_.emplace(key, l);
  return l;
}

}  // namespace dayzero::simulate
