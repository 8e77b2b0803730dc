#pragma once
// The plan search: every valid layout, precision, offload policy and batch for a
// scenario, pruned by divisibility, costed in parallel by the simulator, then
// filtered (fits, meets the SLA), ranked by the objective, with the Pareto front
// of throughput per device against TPOT. Deterministic: the same scenario gives
// the same result, whatever the number of threads.

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "search/scenario.h"
#include "simulate/efficiency.h"
#include "simulate/prediction.h"

namespace dayzero::search {

struct Evaluated {
  plan::Plan plan;
  WeightChoice weights = WeightChoice::checkpoint;
  double resident_fraction = 1;
  simulate::Prediction prediction;  // per stage (not per rank); no time when it does not fit
  int64_t max_memory_bytes = 0;     // fullest rank's total
  bool meets_sla = false;
  std::string sla_miss;  // which limit it misses, when it fits but misses
};

struct SearchResult {
  size_t candidates = 0;  // plans enumerated (all are evaluated), disaggregated pairs included
  double wall_s = 0;
  int threads = 1;
  std::vector<Evaluated> all;            // in enumeration order
  std::vector<size_t> top;               // ranked indices into `all`: best plan per distinct layout
  std::vector<std::string> reasons;      // one per `top`
  std::vector<size_t> pareto;            // indices into `all`, by increasing TPOT
  std::vector<std::string> suggestions;  // when nothing is feasible: what would be
  bool feasible() const { return !top.empty(); }
};

struct SearchOptions {
  int threads = 0;  // 0 = every core
  // Called from the calling thread about every 100 ms while the search runs.
  std::function<void(size_t done, size_t total, double elapsed_s)> progress;
};

// The candidate plans of a scenario (valid by construction).
std::vector<Evaluated> enumerate_plans(const Scenario& s, const model::Model& m, const topology::Cluster& c);
// The largest batch swept for a scenario given by request rate (no concurrency): 65536
// concurrent sequences, 256 per device (vLLM's default max_num_seqs) on 256 devices.
inline constexpr int64_t kRateBatchCap = int64_t{1} << 16;
// The most plans a search builds and evaluates: about 1 GB of plans and
// predictions held at once (sizeof(Evaluated) is 744 B before its per-stage
// vectors) and ~25 s at bench_search's 40,000 plans/s on 2 threads. A larger
// space is refused, naming the fields that widen it.
inline constexpr int64_t kMaxSpacePlans = 1'000'000;

SearchResult run_search(const Scenario& s, const model::Model& m, const topology::Cluster& c,
                        const simulate::Efficiency& eff, const SearchOptions& opts = {});

// Whether an evaluated plan fits and meets the scenario's SLA (TTFT, TPOT, request
// rate): sets e.meets_sla, and e.sla_miss to the first limit it misses.
void check_sla(Evaluated& e, const Scenario& s);

// Sets a plan's per-part weight dtypes from a search weight choice.
void apply_weight_choice(plan::Plan& p, WeightChoice choice);

// The short name of a plan's layout, e.g. "16 dev: pp1 tp1 dp16 | ep16 | fp8 kv=bf16";
// disaggregated: "16 dev: 1x prefill pp1 tp8 dp1 | ep8 + 1x decode pp1 tp1 dp8 | ep8 | fp8 kv=bf16".
std::string layout_name(const Evaluated& e);

}  // namespace dayzero::search
