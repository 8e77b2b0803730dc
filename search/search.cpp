#include "search/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/text.h"
#include "plan/plan_json.h"
#include "search/disaggregated.h"
#include "search/ranking.h"
#include "search/space.h"
#include "search/walk.h"
#include "simulate/simulator.h"

namespace dayzero::search {

namespace {

using Clock = std::chrono::steady_clock;

// Why the plan closest to fitting still does not, beyond its device memory: its experts'
// share of host memory, or the serving engine's KV room.
std::string why_not_fits(const simulate::Prediction& p, const topology::Cluster& c) {
  std::string why;
  if (!p.host_fits)
    why += "; its experts in host memory need " + core::format_double("%.0f", p.host_bytes_per_node / 1e9) +
           " GB per node, the host has " + core::format_double("%.0f", c.config().host.mem_bytes / 1e9) + " GB";
  if (p.engine_kv.checked && !p.engine_kv.fits)
    why += "; the serving engine's memory share (" + core::format_double("%.2f", p.engine_kv.memory_fraction) +
           (p.engine_kv.share_of_free ? " of the free memory" : " of the device") + ") leaves " +
           core::format_double("%.1f", static_cast<double>(p.engine_kv.free_bytes) / 1e9) +
           " GB of KV room per rank, its batch needs " +
           core::format_double("%.1f", static_cast<double>(p.engine_kv.needed_bytes) / 1e9) + " GB (GB = 1e9 bytes)";
  return why;
}

void explain_infeasible(SearchResult& r, const Scenario& s, const model::Model& m, const topology::Cluster& c,
                        const simulate::Efficiency& eff, const SearchOptions& opts) {
  const Evaluated* smallest = nullptr;  // the plan closest to fitting
  double ratio = 1e300;
  const Evaluated* fastest = nullptr;  // among plans that fit: best TPOT
  for (const auto& e : r.all) {
    const double rr = static_cast<double>(e.max_memory_bytes) / c.device_spec().mem_bytes;
    if (rr < ratio) {
      ratio = rr;
      smallest = &e;
    }
    if (e.prediction.fits && (!fastest || e.prediction.tpot_s < fastest->prediction.tpot_s)) fastest = &e;
  }
  if (!fastest) {
    r.suggestions.push_back("nothing fits: the smallest plan (" + (smallest ? layout_name(*smallest) : "-") +
                            ") needs " + core::format_double("%.0f", 100 * ratio) + " % of a device's memory" +
                            (smallest ? why_not_fits(smallest->prediction, c) : ""));
    const int total = static_cast<int>(c.num_devices());
    if (ratio > 1)  // device memory binds (else the host's, or the engine's share: the reason above)
      r.suggestions.push_back("more devices: about " + std::to_string(static_cast<int>(std::ceil(total * ratio))) +
                              " " + c.device_spec().name + " (the cluster has " + std::to_string(total) + ")");
    if (smallest) {
      simulate::Simulator sim(m, c, eff);
      auto try_variant = [&](const char* what, auto&& change) {
        plan::Plan p = smallest->plan;
        change(p);
        simulate::SimulateOptions so{false, false, false};
        std::optional<simulate::KvMemoryRule> rule;  // held to the engine's share as the search was
        if (opts.engine_memory) rule = opts.engine_memory(p);
        so.engine_memory = rule ? &*rule : nullptr;
        so.kernels = opts.kernels;
        const auto pred = sim.simulate(p, so);
        int64_t mx = 0;
        for (const auto& rk : pred.ranks) mx = std::max(mx, rk.total_bytes);
        r.suggestions.push_back(
            std::string(what) + ": the same layout would need " +
            core::format_double("%.0f", 100.0 * static_cast<double>(mx) / c.device_spec().mem_bytes) +
            " % of a device" + (pred.fits ? " and fits" : ""));
      };
      try_variant("lower precision (INT4 weights, FP8 KV cache)", [](plan::Plan& p) {
        p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.experts = model::WeightPrecision::int4;
        p.dtypes.kv_cache = plan::KvDtype::fp8;
      });
      if (m.config.is_moe())
        try_variant("offloading (1/16 of the experts resident, the rest in host memory)", [&](plan::Plan& p) {
          p.offload.resident_experts = std::max<int64_t>(p.moe.ep, m.config.moe.num_experts / 16);
        });
      try_variant("a smaller batch (one sequence per replica)",
                  [](plan::Plan& p) { p.workload.batch = p.attention.dp; });
    }
    return;
  }
  // Plans fit, none meets the SLA: the looser limit that the best of them needs.
  const Evaluated* quickest = nullptr;
  for (const auto& e : r.all)
    if (e.prediction.fits && (!quickest || e.prediction.ttft_s < quickest->prediction.ttft_s)) quickest = &e;
  r.suggestions.push_back("no plan meets the SLA; the fastest decode is TPOT " +
                          core::format_double("%.3g", fastest->prediction.tpot_s * 1e3) + " ms (" +
                          layout_name(*fastest) + ", batch " + std::to_string(fastest->plan.workload.batch) +
                          ", TTFT " + core::format_double("%.3g", fastest->prediction.ttft_s) + " s)");
  r.suggestions.push_back("the quickest first token is TTFT " +
                          core::format_double("%.3g", quickest->prediction.ttft_s) + " s (" + layout_name(*quickest) +
                          ")");
  if (s.sla.max_tpot_s > 0 || s.sla.max_ttft_s > 0)
    r.suggestions.push_back("a looser SLA: max_tpot_s >= " + core::format_double("%.3g", fastest->prediction.tpot_s) +
                            " with max_ttft_s >= " + core::format_double("%.3g", fastest->prediction.ttft_s) +
                            " admits the plan above; or more or faster devices");
}

}  // namespace

SlaMiss sla_miss(const Scenario& s, double ttft_s, double tpot_s, double requests_per_s) {
  if (s.sla.max_ttft_s > 0 && ttft_s > s.sla.max_ttft_s) return SlaMiss::ttft;
  if (s.sla.max_tpot_s > 0 && tpot_s > s.sla.max_tpot_s) return SlaMiss::tpot;
  if (s.request_rate_per_s > 0 && requests_per_s < s.request_rate_per_s) return SlaMiss::rate;
  return SlaMiss::none;
}

void check_sla(Evaluated& e, const Scenario& s) {
  const auto& p = e.prediction;
  e.meets_sla = false;
  if (!p.fits) return;
  const double rate = p.throughput_tokens_per_s / static_cast<double>(e.plan.workload.output_len);
  switch (sla_miss(s, p.ttft_s, p.tpot_s, rate)) {
    case SlaMiss::ttft:
      e.sla_miss = "TTFT " + core::format_double("%.3g", p.ttft_s) + " s > " +
                   core::format_double("%.3g", s.sla.max_ttft_s) + " s";
      return;
    case SlaMiss::tpot:
      e.sla_miss = "TPOT " + core::format_double("%.3g", p.tpot_s * 1e3) + " ms > " +
                   core::format_double("%.3g", s.sla.max_tpot_s * 1e3) + " ms";
      return;
    case SlaMiss::rate:
      e.sla_miss = "serves " + core::format_double("%.3g", rate) + " requests/s < " +
                   core::format_double("%.3g", s.request_rate_per_s);
      return;
    case SlaMiss::none: break;
  }
  e.meets_sla = true;
}

SearchResult run_search(const Scenario& s, const model::Model& m, const topology::Cluster& c,
                        const simulate::Efficiency& eff, const SearchOptions& opts) {
  const auto t0 = Clock::now();
  SearchResult r;
  {
    // The largest memory any candidate can need must fit in 64 bits: the whole batch on
    // one replica (the largest batch swept), the widest KV dtype.
    const plan::Plan defaults;
    plan::Workload w = s.workload;
    if (w.batch == 0) w.batch = kRateBatchCap;
    for (int64_t b : s.space.batches) w.batch = std::max(w.batch, b);
    int64_t kv_bytes = 0;
    for (plan::KvDtype d : plan::kAllKvDtypes) kv_bytes = std::max(kv_bytes, plan::kv_elem_bytes(d));
    int64_t step_tokens = s.engine.token_budget.value_or(defaults.prefill_chunk_tokens);  // the largest budget
    for (int64_t b : s.space.token_budgets) step_tokens = std::max(step_tokens, b);
    plan::check_workload_sizes(w, m, defaults.kv_block_tokens, step_tokens, kv_bytes, s.file.string());
    if (s.speculative.method == plan::SpecMethod::mtp && m.config.mtp_layers == 0)
      throw core::InputError(s.file.string(), "speculative.method", "\"mtp\"",
                             "the model has no multi-token-prediction layer (use eagle)");
  }
  const Space space = make_space(s, m, c);
  r.space_plans = space.plans();
  if (r.space_plans > kMaxSpacePlans)
    throw core::InputError(s.file.string(), "search", std::to_string(r.space_plans) + " plans",
                           "the space holds more plans than the search considers (" + std::to_string(kMaxSpacePlans) +
                               "): narrow search.batches, resident_expert_fractions, device_counts, tp, pp, ep or "
                               "moe_dp, or use \"space\": \"compact\"");
  r.space_layouts = static_cast<int64_t>(space.layouts.size());
  r.candidates = static_cast<size_t>(r.space_plans);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  r.threads = opts.threads > 0 ? opts.threads : static_cast<int>(hw);
  r.threads = std::max(1, std::min<int>(r.threads, static_cast<int>(space.groups() / 16 + 1)));
  detail::walk_space(r, space, s, m, c, eff, opts, t0);
  if (s.space.disaggregated) {
    simulate::Simulator sim(m, c, eff);
    PoolPairs pools = disaggregated_plans(r.all, s, sim, opts.prune);
    r.candidates += static_cast<size_t>(pools.generated);
    r.evaluated += static_cast<int64_t>(pools.kept.size());
    r.pruned.ttft += pools.pruned.ttft;
    r.pruned.tpot += pools.pruned.tpot;
    r.pruned.bound += pools.pruned.bound;
    r.all.insert(r.all.end(), std::make_move_iterator(pools.kept.begin()), std::make_move_iterator(pools.kept.end()));
  }
  r.top = rank_plans(r.all, s.objective, s.space.top);
  r.pareto = pareto_front(r.all);
  r.reasons = ranking_reasons(r.all, r.top, r.pareto, s.objective);
  if (r.top.empty()) explain_infeasible(r, s, m, c, eff, opts);
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace dayzero::search
