#include "search/walk.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/parallel.h"
#include "search/bounds.h"
#include "simulate/simulator.h"

namespace dayzero::search::detail {

namespace {

using Clock = std::chrono::steady_clock;

// Units per wave: the first wave's, doubling up to the last's; fixed, so that the
// plans a wave sees do not depend on the threads.
constexpr size_t kFirstWave = 16;
constexpr size_t kLastWave = 512;
// What the walk keeps of one unit.
struct UnitOut {
  std::vector<Evaluated> kept;
  Pruned pruned;
  // The non-fitting plan closest to fitting (pruning only). On the heap: the walker
  // holds a UnitOut per unit (tens of thousands in a full space), built and freed on
  // one thread, and an empty one is 72 bytes, not 1.2 kB (bench_search: 35 ms of
  // serial construction and 10 ms of destruction on the 3T full space before).
  std::unique_ptr<Evaluated> closest;
  double closest_ratio = 1e300;
};

// A unit: one layout at one weight choice and speculative setting; its groups
// (consecutive in the space) differ in the KV dtype, the resident share of the
// experts and the token budget.
size_t groups_per_unit(const Space& space) { return space.kvs.size() * space.fractions.size() * space.budgets.size(); }

// Why a plan is skipped without being costed, from a basis (or none: cost it).
enum class Skip { none, ttft, tpot, bound };

struct Walk {
  const Space& space;
  const Scenario& s;
  const model::Model& m;
  const topology::Cluster& c;
  bool prune = true;
  bool sla_rules = true;  // TTFT / TPOT rules (off with disaggregated pools)
  const Incumbents* inc = nullptr;
  const std::function<simulate::KvMemoryRule(const plan::Plan&)>* engine_memory = nullptr;  // SearchOptions'
  simulate::EngineKernels kernels;                                                          // SearchOptions'

  // The rule that skips the plan at `batch` given a basis, once a plan meets the SLA
  // (before, every plan may be a suggestion's).
  Skip skip(const Basis& basis, int64_t batch, const LayoutShape& l) const {
    if (!inc || !inc->any()) return Skip::none;
    const Bound b = bound_at(basis, batch, l, s);
    if (s.sla.max_ttft_s > 0 && b.ttft_lo > s.sla.max_ttft_s) return Skip::ttft;
    if (s.sla.max_tpot_s > 0 && b.tpot_lo > s.sla.max_tpot_s) return Skip::tpot;
    return inc->dominates(b) ? Skip::bound : Skip::none;
  }

  // One group's batches in increasing order, pruned by the rules of search.h; `basis`
  // (when set) is the unit's representative's.
  void group(size_t g, std::optional<Basis> basis, simulate::Simulator& sim, UnitOut& out) const {
    const LayoutShape& l = space.layout_of(g);
    const GroupChoice choice = choice_of(space, g);
    std::optional<simulate::KvMemoryRule> rule;  // the engine's, for the group's layout (asked once)
    std::optional<size_t> timed;                 // out.kept's first plan of the group: its prompts' steps for the rest
    for (size_t b = 0; b < l.batches.size(); ++b) {
      const auto rest = static_cast<int64_t>(l.batches.size() - b);
      const Skip why = basis ? skip(*basis, l.batches[b], l) : Skip::none;
      if (why == Skip::ttft) return void(out.pruned.ttft += rest);  // TTFT and TPOT only grow from here
      if (why == Skip::tpot) return void(out.pruned.tpot += rest);
      if (why == Skip::bound) {  // a larger batch may still be useful
        ++out.pruned.bound;
        continue;
      }
      Evaluated e;
      e.plan = plan_of(space, g, l.batches[b], s, m, c);
      e.weights = choice.weights;
      e.resident_fraction = choice.fraction;
      if (!rule && engine_memory && *engine_memory) rule = (*engine_memory)(e.plan);
      simulate::SimulateOptions opts{false, false, false};
      opts.engine_memory = rule ? &*rule : nullptr;
      opts.kernels = kernels;
      opts.prompts_of = timed ? &out.kept[*timed].prediction : nullptr;
      e.prediction = sim.simulate(e.plan, opts);
      for (const auto& rk : e.prediction.ranks) e.max_memory_bytes = std::max(e.max_memory_bytes, rk.total_bytes);
      if (prune && !e.prediction.fits) {
        out.pruned.memory += rest;
        const double ratio = static_cast<double>(e.max_memory_bytes) / c.device_spec().mem_bytes;
        if (ratio < out.closest_ratio) {
          out.closest_ratio = ratio;
          out.closest = std::make_unique<Evaluated>(std::move(e));
        }
        return;
      }
      check_sla(e, s);
      const bool ttft_miss = sla_rules && s.sla.max_ttft_s > 0 && e.prediction.ttft_s > s.sla.max_ttft_s;
      const bool tpot_miss = sla_rules && s.sla.max_tpot_s > 0 && e.prediction.tpot_s > s.sla.max_tpot_s;
      if (inc) basis = basis_of(e.prediction, l.batches[b], l, s);
      if (!timed && e.prediction.prefill.time_s > 0) timed = out.kept.size();
      out.kept.push_back(std::move(e));
      if (ttft_miss) return void(out.pruned.ttft += rest - 1);
      if (tpot_miss) return void(out.pruned.tpot += rest - 1);
    }
  }
};

// A unit's group: the narrowest KV dtype with the most experts resident and the
// largest token budget (the fastest of its groups: fewest prefill steps), or with the
// fewest experts resident and the smallest budget (the lightest).
size_t unit_group(const Space& space, size_t unit, bool fastest) {
  const auto kv = static_cast<size_t>(std::min_element(space.kvs.begin(), space.kvs.end(),
                                                       [](plan::KvDtype a, plan::KvDtype b) {
                                                         return plan::kv_elem_bytes(a) < plan::kv_elem_bytes(b);
                                                       }) -
                                      space.kvs.begin());
  const auto& f = space.fractions;
  const auto share = static_cast<size_t>(
      (fastest ? std::max_element(f.begin(), f.end()) : std::min_element(f.begin(), f.end())) - f.begin());
  const size_t budget = fastest ? space.budgets.size() - 1 : 0;  // ascending
  return unit * groups_per_unit(space) + (kv * f.size() + share) * space.budgets.size() + budget;
}

// Plans of a unit: every batch of every group.
int64_t unit_plans(const Space& space, size_t u) {
  const size_t f = groups_per_unit(space);
  int64_t n = 0;
  for (size_t g = u * f; g < (u + 1) * f; ++g) n += static_cast<int64_t>(space.batches_of(g));
  return n;
}

class Walker {
 public:
  Walker(SearchResult& r, const Space& space, const Scenario& s, const model::Model& m, const topology::Cluster& c,
         const simulate::Efficiency& eff, const SearchOptions& opts, Clock::time_point t0)
      : r_(r),
        space_(space),
        s_(s),
        m_(m),
        c_(c),
        eff_(eff),
        opts_(opts),
        t0_(t0),
        units_(space.groups() == 0 ? 0 : space.groups() / groups_per_unit(space)),
        out_(units_),
        sims_(static_cast<size_t>(r.threads)),
        pool_(r.threads) {}

  void run() {
    Walk walk{
        space_,       s_, m_, c_, opts_.prune, opts_.prune && !s_.space.disaggregated, nullptr, &opts_.engine_memory,
        opts_.kernels};
    std::vector<size_t> order(units_);
    std::iota(order.begin(), order.end(), size_t{0});
    if (!walk.sla_rules) {  // exhaustive, or pools: every unit in one wave
      wave(walk, order, nullptr);
    } else {
      bounded(walk, order);
    }
    collect();
  }

 private:
  simulate::Simulator& sim(int worker) {
    auto& p = sims_[static_cast<size_t>(worker)];
    if (!p) p = std::make_unique<simulate::Simulator>(m_, c_, eff_, tables_);
    return *p;
  }

  // Runs `fn(worker, item)` over items [0, n) on the workers, in blocks of `block`
  // items (neighbours' writes stay on one worker's cache lines), on the walker's
  // threads (worker w is always the same thread); cancellation and progress as
  // SearchOptions says.
  void parallel(size_t n, size_t block, const std::function<void(int, size_t)>& fn) {
    std::function<void(size_t)> progress;
    if (opts_.progress)
      progress = [&](size_t) {
        opts_.progress(static_cast<size_t>(considered_.load()), static_cast<size_t>(r_.space_plans),
                       std::chrono::duration<double>(Clock::now() - t0_).count());
      };
    pool_.run(
        n, block,
        [&](int w, size_t begin, size_t end) {
          for (size_t i = begin; i < end; ++i) fn(w, i);
        },
        progress, opts_.cancel);
    if (opts_.cancel && opts_.cancel->load()) throw Cancelled();
  }

  void wave(const Walk& walk, const std::vector<size_t>& units, const std::vector<Basis>* bases) {
    parallel(units.size(), bases ? 4 : 1, [&](int w, size_t i) {
      const size_t u = units[i];
      const size_t f = groups_per_unit(space_);
      std::optional<Basis> basis;
      if (bases) basis = (*bases)[u];
      if (basis && skip_unit(walk, u, *basis)) return;
      for (size_t g = u * f; g < (u + 1) * f; ++g) walk.group(g, basis, sim(w), out_[u]);
      considered_.fetch_add(unit_plans(space_, u), std::memory_order_relaxed);
    });
  }

  // Bases per unit, then waves of the units with the best bounds first.
  void bounded(Walk& walk, std::vector<size_t>& order) {
    std::vector<Basis> bases(units_);
    std::vector<Key> best(units_);  // the best key any plan of the unit could have
    std::vector<char> no_fit(units_, 0);
    const Objective o = s_.objective;
    parallel(units_, 32, [&](int w, size_t u) {
      if (device_overflows(u, sim(w))) {
        no_fit[u] = 1;
        return;
      }
      const size_t g = unit_group(space_, u, true);
      const LayoutShape& l = space_.layout_of(g);
      const plan::Plan p = plan_of(space_, g, l.batches.front(), s_, m_, c_);
      bases[u] = basis_of(sim(w).simulate(p, {false, false, true, true, false}), l.batches.front(), l, s_);
      best[u] = optimistic(bound_at(bases[u], l.batches.front(), l, s_), o);
      for (int64_t b : l.batches) {
        const Bound bd = bound_at(bases[u], b, l, s_);
        if (s_.sla.max_tpot_s > 0 && bd.tpot_lo > s_.sla.max_tpot_s) break;
        best[u] = std::min(best[u], optimistic(bd, o));
      }
    });
    order.erase(std::remove_if(order.begin(), order.end(), [&](size_t u) { return no_fit[u] != 0; }), order.end());
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return best[a] < best[b]; });
    Incumbents inc(o, static_cast<size_t>(s_.space.top));
    walk.inc = &inc;
    // Waves of candidates, the first small (they find the incumbents), doubling up to
    // kLastWave: each worker checks its unit against the wave's incumbents and costs
    // it if needed. Sizes do not depend on the threads.
    size_t size = kFirstWave;
    for (size_t i = 0; i < order.size(); i += size, size = std::min(2 * size, kLastWave)) {
      const std::vector<size_t> batch(order.begin() + static_cast<std::ptrdiff_t>(i),
                                      order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + size)));
      wave(walk, batch, &bases);
      for (size_t u : batch) inc.add(out_[u].kept, u);
    }
  }

  // The memory bound before any costing: whether the unit's lightest plan (its
  // narrowest KV dtype, fewest resident experts, smallest token budget and batch) overflows a device's
  // memory, and so every plan of the unit (counted under the memory rule; the plan is
  // the unit's closest to fitting). Host memory is not a bound here: fewer resident
  // experts need more of it.
  bool device_overflows(size_t u, simulate::Simulator& sim) {
    const size_t g = unit_group(space_, u, false);
    const LayoutShape& l = space_.layout_of(g);
    Evaluated e;
    e.plan = plan_of(space_, g, l.batches.front(), s_, m_, c_);
    const GroupChoice choice = choice_of(space_, g);
    e.weights = choice.weights;
    e.resident_fraction = choice.fraction;
    e.prediction = sim.simulate(e.plan, {false, false, false, false});
    bool overflows = false;
    for (const auto& rk : e.prediction.ranks) {
      e.max_memory_bytes = std::max(e.max_memory_bytes, rk.total_bytes);
      overflows = overflows || !rk.fits();
    }
    if (!overflows) return false;
    UnitOut& out = out_[u];
    out.pruned.memory += unit_plans(space_, u);
    out.closest_ratio = static_cast<double>(e.max_memory_bytes) / c_.device_spec().mem_bytes;
    out.closest = std::make_unique<Evaluated>(std::move(e));
    considered_.fetch_add(out.pruned.memory, std::memory_order_relaxed);
    return true;
  }

  // Whether every plan of a unit is skipped by its basis (each counted under its rule).
  bool skip_unit(const Walk& walk, size_t u, const Basis& basis) {
    const size_t f = groups_per_unit(space_);
    const LayoutShape& l = space_.layout_of(u * f);
    std::vector<Skip> why(l.batches.size());
    for (size_t b = 0; b < l.batches.size(); ++b)
      if ((why[b] = walk.skip(basis, l.batches[b], l)) == Skip::none) return false;
    Pruned& p = out_[u].pruned;
    const auto groups = static_cast<int64_t>(f);
    for (Skip w : why) (w == Skip::ttft ? p.ttft : w == Skip::tpot ? p.tpot : p.bound) += groups;
    considered_.fetch_add(unit_plans(space_, u), std::memory_order_relaxed);
    return true;
  }

  void collect() {
    size_t kept = 0;
    for (const UnitOut& u : out_) kept += u.kept.size();
    if (static_cast<int64_t>(kept) > kMaxKeptPlans)
      throw core::InputError(s_.file.string(), "search", std::to_string(kept) + " plans costed",
                             "more than the search keeps (" + std::to_string(kMaxKeptPlans) +
                                 "): narrow search.batches, resident_expert_fractions, device_counts, tp, pp or ep");
    // Moved into place by the workers: the plans are large (sizeof(Evaluated) ~1 kB)
    // and the memory fresh.
    std::vector<size_t> offset(units_ + 1, 0);
    for (size_t u = 0; u < units_; ++u) offset[u + 1] = offset[u] + out_[u].kept.size();
    UnitOut* closest = nullptr;
    for (UnitOut& u : out_) {
      r_.pruned.memory += u.pruned.memory;
      r_.pruned.ttft += u.pruned.ttft;
      r_.pruned.tpot += u.pruned.tpot;
      r_.pruned.bound += u.pruned.bound;
      if (u.closest && (!closest || u.closest_ratio < closest->closest_ratio)) closest = &u;
    }
    std::unique_ptr<Evaluated> nearest = closest ? std::move(closest->closest) : nullptr;
    r_.all.reserve(kept + 1);
    // The reserved pages are fresh (1.2 kB a plan: 94 MB for the 3T full space's 78,566):
    // the workers touch them first, each its own megabytes, so that the kernel's page
    // zeroing is not left to one thread in resize() below. Raw storage, no object yet.
    if (r_.all.empty() && r_.threads > 1 && (kept + 1) * sizeof(Evaluated) >= (size_t{32} << 20)) {
      char* raw = reinterpret_cast<char*>(r_.all.data());
      const size_t bytes = (kept + 1) * sizeof(Evaluated);
      constexpr size_t kChunk = size_t{1} << 20;
      parallel((bytes + kChunk - 1) / kChunk, 1,
               [&](int, size_t i) { std::memset(raw + i * kChunk, 0, std::min(kChunk, bytes - i * kChunk)); });
    }
    r_.all.resize(kept);

    // What the walk leaves is freed by the workers too, not by the walker's destructor on
    // one thread: each unit's other non-fitting plan, and each worker's simulator.
    parallel(units_, 64, [&](int, size_t u) {
      std::move(out_[u].kept.begin(), out_[u].kept.end(), r_.all.begin() + static_cast<std::ptrdiff_t>(offset[u]));
      std::vector<Evaluated>().swap(out_[u].kept);
      out_[u].closest.reset();
    });
    parallel(sims_.size(), 1, [&](int, size_t w) { sims_[w].reset(); });
    r_.evaluated = static_cast<int64_t>(r_.all.size());
    const bool any_fits =
        std::any_of(r_.all.begin(), r_.all.end(), [](const Evaluated& e) { return e.prediction.fits; });
    if (nearest && !any_fits) r_.all.push_back(std::move(*nearest));
  }

  SearchResult& r_;
  const Space& space_;
  const Scenario& s_;
  const model::Model& m_;
  const topology::Cluster& c_;
  const simulate::Efficiency& eff_;
  const SearchOptions& opts_;
  Clock::time_point t0_;
  size_t units_;
  std::vector<UnitOut> out_;
  std::vector<std::unique_ptr<simulate::Simulator>> sims_;
  // The workers' simulators route each group of devices once between them.
  std::shared_ptr<topology::SharedCollectiveTables> tables_ = std::make_shared<topology::SharedCollectiveTables>(c_);
  std::atomic<int64_t> considered_{0};
  core::WorkerPool pool_;  // last: its threads stop before the rest is destroyed
};

}  // namespace

void walk_space(SearchResult& r, const Space& space, const Scenario& s, const model::Model& m,
                const topology::Cluster& c, const simulate::Efficiency& eff, const SearchOptions& opts,
                Clock::time_point t0) {
  Walker(r, space, s, m, c, eff, opts, t0).run();
}

}  // namespace dayzero::search::detail
