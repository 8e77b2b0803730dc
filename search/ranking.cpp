#include "search/ranking.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

#include "core/text.h"

namespace dayzero::search {

namespace {

// What `a` changes from `b`, the first four differences.
std::string differences(const Evaluated& a, const Evaluated& b) {
  std::vector<std::string> d;
  const auto& pa = a.plan;
  const auto& pb = b.plan;
  if (pa.disaggregated.on() != pb.disaggregated.on())
    d.push_back(pa.disaggregated.on() ? "prefill and decode pools" : "one pool");
  if (pa.devices_used() != pb.devices_used()) d.push_back(std::to_string(pa.devices_used()) + " devices");
  if (pa.pp != pb.pp) d.push_back("pp " + std::to_string(pa.pp));
  if (pa.attention.tp != pb.attention.tp) d.push_back("tp " + std::to_string(pa.attention.tp));
  if (pa.moe.ep != pb.moe.ep) d.push_back("ep " + std::to_string(pa.moe.ep));
  if (a.weights != b.weights) d.push_back(std::string(weight_choice_name(a.weights)) + " weights");
  if (pa.dtypes.kv_cache != pb.dtypes.kv_cache)
    d.push_back(std::string(plan::kv_dtype_name(pa.dtypes.kv_cache)) + " KV");
  if (a.resident_fraction != b.resident_fraction)
    d.push_back(core::format_double("%.0f", 100 * a.resident_fraction) + " % experts resident");
  if (pa.speculative.on() != pb.speculative.on() || pa.speculative.draft_tokens != pb.speculative.draft_tokens)
    d.push_back(pa.speculative.on() ? std::to_string(pa.speculative.draft_tokens) + " draft tokens" : "no drafts");
  if (pa.moe.dp != pb.moe.dp) d.push_back("moe dp " + std::to_string(pa.moe.dp));
  if (pa.stage_layers != pb.stage_layers) d.push_back(pa.stage_layers.empty() ? "even stages" : "balanced stages");
  if (pa.prefill_chunk_tokens != pb.prefill_chunk_tokens)
    d.push_back("token budget " + std::to_string(pa.prefill_chunk_tokens));
  if (pa.workload.batch != pb.workload.batch) d.push_back("batch " + std::to_string(pa.workload.batch));
  std::string s;
  for (size_t i = 0; i < d.size() && i < 4; ++i) s += (i ? ", " : "") + d[i];
  return s;
}

}  // namespace

std::string main_cost(const simulate::StepTime& st) {
  std::string best;
  double v = -1;
  for (const auto& [k, t] : st.by_kind_s)
    if (t > v) {
      v = t;
      best = simulate::cost_kind_name(k);
    }
  return best + " " + core::format_double("%.0f", 100 * v / st.time_s) + " %";
}

bool better(const Evaluated& a, const Evaluated& b, Objective o) {
  const auto& pa = a.prediction;
  const auto& pb = b.prediction;
  switch (o) {
    case Objective::latency:
      if (pa.tpot_s != pb.tpot_s) return pa.tpot_s < pb.tpot_s;
      return pa.ttft_s < pb.ttft_s;
    case Objective::fewest_devices:
      if (a.plan.devices_used() != b.plan.devices_used()) return a.plan.devices_used() < b.plan.devices_used();
      return pa.throughput_tokens_per_s_per_device > pb.throughput_tokens_per_s_per_device;
    case Objective::throughput_per_device: break;
  }
  return pa.throughput_tokens_per_s_per_device > pb.throughput_tokens_per_s_per_device;
}

namespace {

// A plan's place in an order, copied out of its Evaluated (1.2 kB) so that sorting
// tens of thousands of plans touches 32-byte keys, not scattered plans
// (bench_search); the index breaks ties, as a stable sort would.
struct SortKey {
  double first = 0, second = 0;
  size_t index = 0;
  bool operator<(const SortKey& o) const {
    if (first != o.first) return first < o.first;
    if (second != o.second) return second < o.second;
    return index < o.index;
  }
};

// The keys of the plans that meet the SLA, sorted: `better` as keys (smaller first).
std::vector<SortKey> sorted_feasible(const std::vector<Evaluated>& all,
                                     const std::function<SortKey(const Evaluated&)>& key) {
  std::vector<SortKey> keys;
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].meets_sla) {
      keys.push_back(key(all[i]));
      keys.back().index = i;
    }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

std::vector<size_t> rank_plans(const std::vector<Evaluated>& all, Objective o, int top) {
  const std::vector<SortKey> feasible = sorted_feasible(all, [o](const Evaluated& e) {
    const auto& p = e.prediction;
    switch (o) {  // better(): the same order
      case Objective::latency: return SortKey{p.tpot_s, p.ttft_s};
      case Objective::fewest_devices:
        return SortKey{static_cast<double>(e.plan.devices_used()), -p.throughput_tokens_per_s_per_device};
      case Objective::throughput_per_device: break;
    }
    return SortKey{-p.throughput_tokens_per_s_per_device, 0};
  });
  std::vector<size_t> out;
  std::set<std::string> seen;
  for (const SortKey& k : feasible) {
    if (out.size() >= static_cast<size_t>(std::max(top, 0))) break;
    if (!seen.insert(layout_name(all[k.index])).second) continue;
    out.push_back(k.index);
  }
  return out;
}

std::vector<size_t> pareto_front(const std::vector<Evaluated>& all) {
  const std::vector<SortKey> by_tpot = sorted_feasible(all, [](const Evaluated& e) {
    return SortKey{e.prediction.tpot_s, -e.prediction.throughput_tokens_per_s_per_device};
  });
  // Walking by increasing TPOT, a plan is on the front when it beats every faster
  // plan's throughput per device.
  std::vector<size_t> front;
  double best_thr = -1;
  for (const SortKey& k : by_tpot) {
    const double thr = all[k.index].prediction.throughput_tokens_per_s_per_device;
    if (thr > best_thr) {
      front.push_back(k.index);
      best_thr = thr;
    }
  }
  return front;
}

std::vector<std::string> ranking_reasons(const std::vector<Evaluated>& all, const std::vector<size_t>& top,
                                         const std::vector<size_t>& pareto, Objective o) {
  std::vector<std::string> reasons;
  for (size_t k = 0; k < top.size(); ++k) {
    const Evaluated& e = all[top[k]];
    const Evaluated& first = all[top[0]];
    std::string why;
    if (k == 0) {
      why = "best " + std::string(objective_name(o)) + " within the SLA";
    } else {
      const double a = e.prediction.throughput_tokens_per_s_per_device;
      const double b = first.prediction.throughput_tokens_per_s_per_device;
      why = o == Objective::latency
                ? core::format_double("TPOT +%.0f %%", 100 * (e.prediction.tpot_s / first.prediction.tpot_s - 1))
                : core::format_double("%.0f %% less throughput/device", 100 * (1 - a / b));
      const std::string diff = differences(e, first);
      if (!diff.empty()) why += " (" + diff + ")";
    }
    why += "; decode bound by " + main_cost(e.prediction.decode);
    if (std::find(pareto.begin(), pareto.end(), top[k]) != pareto.end()) why += "; on the Pareto front";
    reasons.push_back(why);
  }
  return reasons;
}

}  // namespace dayzero::search
