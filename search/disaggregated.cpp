#include "search/disaggregated.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "search/bounds.h"
#include "simulate/disaggregated.h"

namespace dayzero::search {

namespace {

// What workers of one deployment share.
using PrecisionKey = std::tuple<WeightChoice, plan::KvDtype, plan::ActivationDtype, int64_t>;
PrecisionKey precision_of(const Evaluated& e) {
  const plan::Plan& p = e.plan;
  return {e.weights, p.dtypes.kv_cache, p.dtypes.activations, p.offload.resident_experts};
}

using LayoutKey = std::tuple<int, int, int, int, int, int>;
LayoutKey layout_of(const plan::Plan& p) {
  return {p.pp, p.attention.tp, p.attention.dp, p.moe.tp, p.moe.ep, p.moe.dp};
}

// Prompts per second one prefill worker serves (simulate/disaggregated.h).
double prefill_rate(const Evaluated& e) { return simulate::prefill_prompts_per_s(e.plan.attention.dp, e.prediction); }

// The prefill workers worth pairing: per worker size, the most prompts per second per
// device and the quickest prompt, each at its layout's smallest batch that fits.
std::vector<const Evaluated*> prefill_workers(const std::vector<const Evaluated*>& fitting) {
  std::map<LayoutKey, const Evaluated*> smallest;
  for (const Evaluated* e : fitting) {
    auto [it, fresh] = smallest.try_emplace(layout_of(e->plan), e);
    if (!fresh && e->plan.workload.batch < it->second->plan.workload.batch) it->second = e;
  }
  std::map<int, std::pair<const Evaluated*, const Evaluated*>> by_size;  // (best rate per device, quickest)
  for (const auto& [key, e] : smallest) {
    auto& [rate, quick] = by_size[e->plan.world_size()];
    if (!rate || prefill_rate(*e) > prefill_rate(*rate)) rate = e;
    if (!quick || e->prediction.ttft_s < quick->prediction.ttft_s) quick = e;
  }
  std::vector<const Evaluated*> out;
  for (const auto& [size, pair] : by_size) {
    out.push_back(pair.first);
    if (pair.second != pair.first) out.push_back(pair.second);
  }
  return out;
}

}  // namespace

namespace {

// Pairs workers into deployments, keeping those that may be ranked or on the front.
class Pairing {
 public:
  Pairing(const std::vector<Evaluated>& single, const Scenario& s, simulate::Simulator& sim, bool prune)
      : s_(s), sim_(sim) {
    if (!prune) return;
    inc_.emplace(s.objective, static_cast<size_t>(s.space.top));
    pairs_inc_.emplace(s.objective, static_cast<size_t>(s.space.top));
    for (const Evaluated& e : single)
      if (e.meets_sla) inc_->add(e, detail::identity_of(layout_name(e)));
  }

  // The deployment of np prefill workers `p` and nd decode workers `d` (into `plan`,
  // d's plan to start with), whose decode rank receives `kv_bytes` per prompt.
  void pair(const Evaluated& d, int64_t nd, const Evaluated& p, int64_t np, double kv_bytes, plan::Plan& plan) {
    plan.disaggregated = {
        static_cast<int>(np), static_cast<int>(nd), {p.plan.pp, p.plan.attention, p.plan.moe, p.plan.workload.batch}};
    const std::pair<double, int64_t> where{kv_bytes, np * p.plan.world_size()};
    auto [t, new_path] = transfers_.try_emplace(where, 0.0);
    if (new_path) t->second = simulate::kv_transfer_s(sim_.cluster(), plan, kv_bytes);
    ++out_.generated;
    if (skip(plan, simulate::disaggregated_figures(plan, p.prediction, d.prediction, t->second))) return;
    Evaluated e;
    e.plan = plan;
    e.weights = d.weights;
    e.resident_fraction = d.resident_fraction;
    e.prediction = simulate::combine_disaggregated(e.plan, p.prediction, d.prediction, t->second);
    e.max_memory_bytes = std::max(p.max_memory_bytes, d.max_memory_bytes);
    check_sla(e, s_);
    if (inc_) {
      inc_->add(e, detail::identity_of(layout_name(e)));
      pairs_inc_->add(e, detail::identity_of(layout_name(e)));
    }
    out_.kept.push_back(std::move(e));
    if (static_cast<int64_t>(out_.kept.size()) > kMaxKeptPlans)
      throw core::InputError(s_.file.string(), "search.disaggregated", "true",
                             "the disaggregated pairs kept number more than " + std::to_string(kMaxKeptPlans) +
                                 ": narrow search.batches, device_counts, tp, pp or ep");
  }

  PoolPairs take() { return std::move(out_); }

 private:
  // Once a plan meets the SLA (and so the answer is the ranking and the front, not
  // suggestions), a deployment that misses the SLA, or that `top` names and a front
  // plan beat (search.h's bound rule, on its own figures) both among all plans and
  // among the pairs, changes nothing: the ranking, the front, and the `top` best pairs
  // (what `plan --serve-check` serves beside the single pools) stay as an exhaustive
  // search finds them. Both workers fit by construction.
  bool skip(const plan::Plan& plan, const simulate::DisaggregatedFigures& f) {
    if (!inc_ || !inc_->any()) return false;
    const double rate = f.throughput_tokens_per_s / static_cast<double>(plan.workload.output_len);
    int64_t* rule = nullptr;  // the counter of the rule that drops the pair
    switch (sla_miss(s_, f.ttft_s, f.tpot_s, rate)) {
      case SlaMiss::ttft: rule = &out_.pruned.ttft; break;
      case SlaMiss::tpot: rule = &out_.pruned.tpot; break;
      case SlaMiss::rate: rule = &out_.pruned.bound; break;
      case SlaMiss::none: {
        const detail::Bound b{f.tpot_s, f.ttft_s, f.throughput_tokens_per_s_per_device, plan.devices_used()};
        if (inc_->dominates(b) && pairs_inc_->any() && pairs_inc_->dominates(b)) rule = &out_.pruned.bound;
        break;
      }
    }
    if (rule) ++*rule;
    return rule != nullptr;
  }

  const Scenario& s_;
  simulate::Simulator& sim_;
  std::optional<detail::Incumbents> inc_;                   // every plan's
  std::optional<detail::Incumbents> pairs_inc_;             // the pairs' own
  std::map<std::pair<double, int64_t>, double> transfers_;  // (bytes, first decode device) -> s
  PoolPairs out_;
};

}  // namespace

PoolPairs disaggregated_plans(const std::vector<Evaluated>& single, const Scenario& s, simulate::Simulator& sim,
                              bool prune) {
  const int64_t devices = sim.cluster().num_devices();
  std::map<PrecisionKey, std::vector<const Evaluated*>> fitting;
  for (const Evaluated& e : single)
    // Uneven stages stay in single pools: a worker layout (plan::WorkerLayout) has no split.
    if (e.prediction.fits && e.prediction.tpot_s > 0 && !e.plan.disaggregated.on() && e.plan.stage_layers.empty())
      fitting[precision_of(e)].push_back(&e);
  Pairing pairing(single, s, sim, prune);
  for (const auto& [key, plans] : fitting) {
    const std::vector<const Evaluated*> prefills = prefill_workers(plans);
    std::map<LayoutKey, double> kv_bytes;  // one decode rank's shard of a prompt, per decode layout
    for (const Evaluated* d : plans) {
      plan::Plan dp = d->plan;
      auto [kv, fresh] = kv_bytes.try_emplace(layout_of(dp), 0.0);
      if (fresh) kv->second = sim.kv_budget(*sim.prepare(dp), {}).sequence_bytes(dp.workload.input_len);
      // Requests/s one decode worker finishes, as the deployment's prediction costs it.
      const double decode_rate =
          simulate::decode_requests_per_s(static_cast<double>(dp.workload.batch), dp, d->prediction);
      for (int64_t nd = 1; nd * dp.world_size() < devices; ++nd) {
        const int64_t left = devices - nd * dp.world_size();
        for (const Evaluated* p : prefills) {
          const int64_t most = left / p->plan.world_size();
          if (most < 1) continue;
          const double balanced = static_cast<double>(nd) * decode_rate / prefill_rate(*p);
          const int64_t lo = std::clamp<int64_t>(static_cast<int64_t>(std::floor(balanced)), 1, most);
          const int64_t hi = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(balanced)), 1, most);
          pairing.pair(*d, nd, *p, lo, kv->second, dp);
          if (hi != lo) pairing.pair(*d, nd, *p, hi, kv->second, dp);
        }
      }
    }
  }
  return pairing.take();
}

}  // namespace dayzero::search
