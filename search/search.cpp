#include "search/search.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "plan/plan_json.h"
#include "simulate/simulator.h"

namespace dayzero::search {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Higher is better, per objective; ties broken by enumeration order (stable sort).
bool better(const Evaluated& a, const Evaluated& b, Objective o) {
  const auto& pa = a.prediction;
  const auto& pb = b.prediction;
  switch (o) {
    case Objective::latency:
      if (pa.tpot_s != pb.tpot_s) return pa.tpot_s < pb.tpot_s;
      return pa.ttft_s < pb.ttft_s;
    case Objective::fewest_devices:
      if (a.plan.world_size() != b.plan.world_size()) return a.plan.world_size() < b.plan.world_size();
      return pa.throughput_tokens_per_s_per_device > pb.throughput_tokens_per_s_per_device;
    case Objective::throughput_per_device:
      break;
  }
  return pa.throughput_tokens_per_s_per_device > pb.throughput_tokens_per_s_per_device;
}

void check_sla(Evaluated& e, const Scenario& s) {
  const auto& p = e.prediction;
  e.meets_sla = false;
  if (!p.fits) return;
  if (s.sla.max_ttft_s > 0 && p.ttft_s > s.sla.max_ttft_s) {
    e.sla_miss = "TTFT " + fmt("%.3g", p.ttft_s) + " s > " + fmt("%.3g", s.sla.max_ttft_s) + " s";
    return;
  }
  if (s.sla.max_tpot_s > 0 && p.tpot_s > s.sla.max_tpot_s) {
    e.sla_miss = "TPOT " + fmt("%.3g", p.tpot_s * 1e3) + " ms > " + fmt("%.3g", s.sla.max_tpot_s * 1e3) + " ms";
    return;
  }
  const double rate = p.throughput_tokens_per_s / static_cast<double>(e.plan.workload.output_len);
  if (s.request_rate_per_s > 0 && rate < s.request_rate_per_s) {
    e.sla_miss = "serves " + fmt("%.3g", rate) + " requests/s < " + fmt("%.3g", s.request_rate_per_s);
    return;
  }
  e.meets_sla = true;
}

std::string main_cost(const simulate::StepTime& st) {
  std::string best;
  double v = -1;
  for (const auto& [k, t] : st.by_kind_s)
    if (t > v) {
      v = t;
      best = simulate::cost_kind_name(k);
    }
  return best + " " + fmt("%.0f", 100 * v / st.time_s) + " %";
}

std::string differences(const Evaluated& a, const Evaluated& b) {
  std::vector<std::string> d;
  const auto& pa = a.plan;
  const auto& pb = b.plan;
  if (pa.world_size() != pb.world_size()) d.push_back(std::to_string(pa.world_size()) + " devices");
  if (pa.pp != pb.pp) d.push_back("pp " + std::to_string(pa.pp));
  if (pa.attention.tp != pb.attention.tp) d.push_back("tp " + std::to_string(pa.attention.tp));
  if (pa.moe.ep != pb.moe.ep) d.push_back("ep " + std::to_string(pa.moe.ep));
  if (a.weights != b.weights) d.push_back(std::string(weight_choice_name(a.weights)) + " weights");
  if (pa.dtypes.kv_cache != pb.dtypes.kv_cache) d.push_back(std::string(plan::kv_dtype_name(pa.dtypes.kv_cache)) + " KV");
  if (a.resident_fraction != b.resident_fraction) d.push_back(fmt("%.0f", 100 * a.resident_fraction) + " % experts resident");
  if (pa.workload.batch != pb.workload.batch) d.push_back("batch " + std::to_string(pa.workload.batch));
  std::string s;
  for (size_t i = 0; i < d.size() && i < 4; ++i) s += (i ? ", " : "") + d[i];
  return s;
}

void explain_infeasible(SearchResult& r, const Scenario& s, const model::Model& m, const topology::Cluster& c,
                        const simulate::Efficiency& eff) {
  const Evaluated* smallest = nullptr;  // the plan closest to fitting
  double ratio = 1e300;
  const Evaluated* fastest = nullptr;   // among plans that fit: best TPOT
  for (const auto& e : r.all) {
    const double rr = static_cast<double>(e.max_memory_bytes) / c.device_spec().mem_bytes;
    if (rr < ratio) {
      ratio = rr;
      smallest = &e;
    }
    if (e.prediction.fits && (!fastest || e.prediction.tpot_s < fastest->prediction.tpot_s)) fastest = &e;
  }
  if (!fastest) {
    r.suggestions.push_back("nothing fits: the smallest plan (" + (smallest ? layout_name(*smallest) : "-") + ") needs " +
                            fmt("%.0f", 100 * ratio) + " % of a device's memory");
    const int total = static_cast<int>(c.num_devices());
    r.suggestions.push_back("more devices: about " + std::to_string(static_cast<int>(std::ceil(total * ratio))) +
                            " " + c.device_spec().name + " (the cluster has " + std::to_string(total) + ")");
    if (smallest) {
      simulate::Simulator sim(m, c, eff);
      auto try_variant = [&](const char* what, auto&& change) {
        plan::Plan p = smallest->plan;
        change(p);
        const auto pred = sim.simulate(p, {false, false, false});
        int64_t mx = 0;
        for (const auto& rk : pred.ranks) mx = std::max(mx, rk.total_bytes);
        r.suggestions.push_back(std::string(what) + ": the same layout would need " +
                                fmt("%.0f", 100.0 * static_cast<double>(mx) / c.device_spec().mem_bytes) +
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
      try_variant("a smaller batch (one sequence per replica)", [](plan::Plan& p) { p.workload.batch = p.attention.dp; });
    }
    return;
  }
  // Plans fit, none meets the SLA: the looser limit that the best of them needs.
  const Evaluated* quickest = nullptr;
  for (const auto& e : r.all)
    if (e.prediction.fits && (!quickest || e.prediction.ttft_s < quickest->prediction.ttft_s)) quickest = &e;
  r.suggestions.push_back("no plan meets the SLA; the fastest decode is TPOT " + fmt("%.3g", fastest->prediction.tpot_s * 1e3) +
                          " ms (" + layout_name(*fastest) + ", batch " + std::to_string(fastest->plan.workload.batch) +
                          ", TTFT " + fmt("%.3g", fastest->prediction.ttft_s) + " s)");
  r.suggestions.push_back("the quickest first token is TTFT " + fmt("%.3g", quickest->prediction.ttft_s) + " s (" +
                          layout_name(*quickest) + ")");
  if (s.sla.max_tpot_s > 0 || s.sla.max_ttft_s > 0)
    r.suggestions.push_back("a looser SLA: max_tpot_s >= " + fmt("%.3g", fastest->prediction.tpot_s) +
                            " with max_ttft_s >= " + fmt("%.3g", fastest->prediction.ttft_s) +
                            " admits the plan above; or more or faster devices");
}

}  // namespace

SearchResult run_search(const Scenario& s, const model::Model& m, const topology::Cluster& c,
                        const simulate::Efficiency& eff, const SearchOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult r;
  r.all = enumerate_plans(s, m, c);
  r.candidates = r.all.size();
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  r.threads = opts.threads > 0 ? opts.threads : static_cast<int>(hw);
  r.threads = std::max(1, std::min<int>(r.threads, static_cast<int>(r.all.size() / 64 + 1)));

  // Workers take interleaved blocks, each with its own simulator (its caches are
  // per thread); the calling thread reports progress until they are done.
  std::atomic<size_t> done{0};
  int finished = 0;
  std::mutex mu;
  std::condition_variable cv;
  constexpr size_t kBlock = 256;
  auto work = [&](int w) {
    simulate::Simulator sim(m, c, eff);
    for (size_t b = static_cast<size_t>(w) * kBlock; b < r.all.size(); b += static_cast<size_t>(r.threads) * kBlock) {
      const size_t end = std::min(r.all.size(), b + kBlock);
      for (size_t i = b; i < end; ++i) {
        Evaluated& e = r.all[i];
        e.prediction = sim.simulate(e.plan, {false, false, false});
        for (const auto& rk : e.prediction.ranks) e.max_memory_bytes = std::max(e.max_memory_bytes, rk.total_bytes);
        check_sla(e, s);
      }
      done += end - b;
    }
    std::lock_guard<std::mutex> lock(mu);
    ++finished;
    cv.notify_one();
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < r.threads; ++w) pool.emplace_back(work, w);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished == r.threads; }))
      if (opts.progress)
        opts.progress(done.load(), r.all.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (auto& t : pool) t.join();

  // Ranking: feasible plans, best first; keep the best batch of each distinct layout.
  std::vector<size_t> feasible;
  for (size_t i = 0; i < r.all.size(); ++i)
    if (r.all[i].meets_sla) feasible.push_back(i);
  std::stable_sort(feasible.begin(), feasible.end(),
                   [&](size_t a, size_t b) { return better(r.all[a], r.all[b], s.objective); });
  std::set<std::string> seen;
  for (size_t i : feasible) {
    if (r.top.size() >= static_cast<size_t>(s.space.top)) break;
    if (!seen.insert(layout_name(r.all[i])).second) continue;
    r.top.push_back(i);
  }
  // Pareto front: no other feasible plan has both lower TPOT and higher throughput per device.
  std::vector<size_t> by_tpot = feasible;
  std::stable_sort(by_tpot.begin(), by_tpot.end(), [&](size_t a, size_t b) {
    const auto& pa = r.all[a].prediction;
    const auto& pb = r.all[b].prediction;
    if (pa.tpot_s != pb.tpot_s) return pa.tpot_s < pb.tpot_s;
    return pa.throughput_tokens_per_s_per_device > pb.throughput_tokens_per_s_per_device;
  });
  double best_thr = -1;
  for (size_t i : by_tpot) {
    const double thr = r.all[i].prediction.throughput_tokens_per_s_per_device;
    if (thr > best_thr) {
      r.pareto.push_back(i);
      best_thr = thr;
    }
  }
  // Reasons.
  for (size_t k = 0; k < r.top.size(); ++k) {
    const Evaluated& e = r.all[r.top[k]];
    const Evaluated& first = r.all[r.top[0]];
    std::string why;
    if (k == 0) {
      why = "best " + std::string(objective_name(s.objective)) + " within the SLA";
    } else {
      const double a = e.prediction.throughput_tokens_per_s_per_device;
      const double b = first.prediction.throughput_tokens_per_s_per_device;
      why = s.objective == Objective::latency
                ? fmt("TPOT +%.0f %%", 100 * (e.prediction.tpot_s / first.prediction.tpot_s - 1))
                : fmt("%.0f %% less throughput/device", 100 * (1 - a / b));
      const std::string diff = differences(e, first);
      if (!diff.empty()) why += " (" + diff + ")";
    }
    why += "; decode bound by " + main_cost(e.prediction.decode);
    if (std::find(r.pareto.begin(), r.pareto.end(), r.top[k]) != r.pareto.end()) why += "; on the Pareto front";
    r.reasons.push_back(why);
  }
  if (r.top.empty()) explain_infeasible(r, s, m, c, eff);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dayzero::search
