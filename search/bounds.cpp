#include "search/bounds.h"

#include <algorithm>
#include <iterator>

namespace dayzero::search::detail {

bool operator<(const Key& x, const Key& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; }

Basis basis_of(const simulate::Prediction& p, int64_t batch, const LayoutShape& l, const Scenario& s) {
  const auto dp = static_cast<int64_t>(l.dp);
  const double seqs = static_cast<double>((batch + dp - 1) / dp);
  const double out = static_cast<double>(s.workload.output_len);
  const double prompt_s = p.prompt_share_s();
  return {std::max(0.0, p.tpot_s - (seqs - 1) * prompt_s / out), p.ttft_s, prompt_s};
}

// bounds.h says why these hold.

Bound bound_at(const Basis& basis, int64_t batch, const LayoutShape& l, const Scenario& s) {
  const auto dp = static_cast<int64_t>(l.dp);
  const double seqs = static_cast<double>((batch + dp - 1) / dp);
  const double out = static_cast<double>(s.workload.output_len);
  Bound b;
  b.tpot_lo = (basis.step_s + (seqs - 1) * basis.prompt_s / out) * (1 - kSlack);
  b.ttft_lo = basis.ttft_s * (1 - kSlack);
  b.devices = l.devices();
  const double cycle_s = out * basis.step_s + seqs * basis.prompt_s;
  if (cycle_s > 0) b.thr_hi = seqs * static_cast<double>(dp) * out / cycle_s / l.devices() * (1 + kSlack);
  return b;
}

Key optimistic(const Bound& b, Objective o) {
  switch (o) {
    case Objective::latency: return {b.tpot_lo, b.ttft_lo};
    case Objective::fewest_devices: return {static_cast<double>(b.devices), -b.thr_hi};
    case Objective::throughput_per_device: break;
  }
  return {-b.thr_hi, 0};
}

Key achieved(const Evaluated& e, Objective o) {
  const auto& p = e.prediction;
  switch (o) {
    case Objective::latency: return {p.tpot_s, p.ttft_s};
    case Objective::fewest_devices:
      return {static_cast<double>(e.plan.devices_used()), -p.throughput_tokens_per_s_per_device};
    case Objective::throughput_per_device: break;
  }
  return {-p.throughput_tokens_per_s_per_device, 0};
}

Incumbents::Incumbents(Objective o, size_t k) : o_(o), k_(std::max<size_t>(1, k)) {}

bool Incumbents::dominates(const Bound& b) const {
  if (best_.size() < k_ || !(best_[k_ - 1].first < optimistic(b, o_))) return false;
  auto it = std::lower_bound(front_.begin(), front_.end(), b.tpot_lo,
                             [](const std::pair<double, double>& f, double t) { return f.first < t; });
  return it != front_.begin() && std::prev(it)->second >= b.thr_hi;
}

Identity identity_of(size_t unit, const plan::Plan& p) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields that tell a unit's names apart
  for (uint64_t v : {static_cast<uint64_t>(unit), static_cast<uint64_t>(p.dtypes.kv_cache),
                     static_cast<uint64_t>(p.offload.resident_experts), static_cast<uint64_t>(p.prefill_chunk_tokens)})
    h = (h ^ v) * 1099511628211ull;
  return h;
}

Identity identity_of(const std::string& layout_name) {
  return static_cast<Identity>(std::hash<std::string>{}(layout_name)) ^ 0x9e3779b97f4a7c15ull;
}

bool Incumbents::rank(const Evaluated& e, Identity id) {
  const Key k = achieved(e, o_);
  auto same = std::find_if(best_.begin(), best_.end(), [&](const auto& x) { return x.second == id; });
  if (same == best_.end()) best_.emplace_back(k, id);
  else if (k < same->first) same->first = k;
  // A point some front point is as fast as and as productive as would not stay on
  // the staircase.
  const double tpot_s = e.prediction.tpot_s, thr = e.prediction.throughput_tokens_per_s_per_device;
  return std::none_of(front_.begin(), front_.end(),
                      [&](const auto& f) { return f.first <= tpot_s && f.second >= thr; });
}

void Incumbents::merge(std::vector<std::pair<double, double>>& points) {
  std::stable_sort(best_.begin(), best_.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  if (best_.size() > k_) best_.resize(k_);
  if (points.empty()) return;
  points.insert(points.end(), front_.begin(), front_.end());
  std::sort(points.begin(), points.end(),
            [](const auto& x, const auto& y) { return x.first != y.first ? x.first < y.first : x.second > y.second; });
  front_.clear();
  for (const auto& p : points)
    if (front_.empty() || p.second > front_.back().second) front_.push_back(p);
}

void Incumbents::add(const std::vector<Evaluated>& plans, size_t unit) {
  bool ranked = false;
  std::vector<std::pair<double, double>> points;  // only the new ones the front may keep (most units add none)
  for (const Evaluated& e : plans) {
    if (!e.meets_sla) continue;
    ranked = true;
    if (rank(e, identity_of(unit, e.plan)))
      points.emplace_back(e.prediction.tpot_s, e.prediction.throughput_tokens_per_s_per_device);
  }
  if (ranked) merge(points);
}

void Incumbents::add(const Evaluated& e, Identity id) {
  if (!e.meets_sla) return;
  std::vector<std::pair<double, double>> points;
  if (rank(e, id)) points.emplace_back(e.prediction.tpot_s, e.prediction.throughput_tokens_per_s_per_device);
  merge(points);
}

}  // namespace dayzero::search::detail
