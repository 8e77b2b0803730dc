#pragma once
// The plan search: every layout, precision, offload level and batch of the scenario's
// space (space.h), pruned by rules that never drop a plan the result could hold,
// costed in parallel by the simulator, then filtered (fits, meets the SLA), ranked by
// the objective, with the Pareto front of throughput per device against TPOT.
// Deterministic: the same scenario gives the same result, whatever the number of
// threads.
//
// Pruning. The space is walked one group at a time (one layout at one precision, KV
// dtype and resident share of the experts), its batches in increasing order; a batch
// is first checked for memory alone, and costed only when it fits. Four rules skip
// plans, each resting on a monotonicity of the simulator that tests/search checks
// against the exhaustive search:
//   memory: a batch that does not fit: every larger batch needs more KV cache and
//           activations (the batch itself was not costed either);
//   ttft:   a batch whose TTFT misses the SLA: TTFT is one prompt's prefill, the
//           same at every batch (and more with fewer experts resident);
//   tpot:   a batch whose TPOT misses the SLA: TPOT grows with the batch (a longer
//           decode step and more prompts between steps);
//   bound:  plans whose TPOT lower bound and throughput upper bound (walk.h) leave
//           them out of both the ranking's `top` layouts and the Pareto front, given
//           the plans already found.
// No plan that could be ranked or on the front is skipped, and the suggestions (made
// only when nothing meets the SLA) see every plan they would see exhaustively: the
// answer is the exhaustive search's. With search.disaggregated only the memory rule
// applies: a plan that misses the SLA alone may still serve as a pool.

#include <atomic>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "search/scenario.h"
#include "simulate/efficiency.h"
#include "simulate/engine_kernels.h"
#include "simulate/prediction.h"
#include "simulate/step_batch.h"

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

// Plans of the space skipped by each pruning rule (search.h, above).
struct Pruned {
  int64_t memory = 0, ttft = 0, tpot = 0, bound = 0;
  int64_t total() const { return memory + ttft + tpot + bound; }
};

struct SearchResult {
  size_t candidates = 0;      // plans considered: the space, disaggregated pairs included
  int64_t space_plans = 0;    // single-pool plans the space holds
  int64_t space_layouts = 0;  // its layouts
  int64_t evaluated = 0;      // plans costed by the simulator (disaggregated pairs included)
  Pruned pruned;              // candidates - evaluated
  double wall_s = 0;
  int threads = 1;
  // The costed plans in space order (group, then batch), then the disaggregated pairs;
  // with pruning, also the one plan that came closest to fitting when none fits.
  std::vector<Evaluated> all;
  std::vector<size_t> top;               // ranked indices into `all`: best plan per distinct layout
  std::vector<std::string> reasons;      // one per `top`
  std::vector<size_t> pareto;            // indices into `all`, by increasing TPOT
  std::vector<std::string> suggestions;  // when nothing is feasible: what would be
  bool feasible() const { return !top.empty(); }
};

struct SearchOptions {
  int threads = 0;    // 0 = every core
  bool prune = true;  // false: cost every plan of the space (tests compare the two)
  // Called from the calling thread about every 100 ms while the search runs: plans
  // considered (costed or pruned) of the space's total.
  std::function<void(size_t done, size_t total, double elapsed_s)> progress;
  // When set (from any thread), the workers stop at their next group and run_search
  // throws Cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // The serving engine's memory rule for a plan (serve::engine_memory_rules: the
  // scenario's engine, else vLLM, with its settings). Set, a plan fits only when the
  // KV cache that engine leaves holds the plan's batch (SimulateOptions::engine_memory),
  // so the search's plans are ones `serve` can run at their batch; unset, the device's
  // whole memory is the only limit. Called once per layout and weight choice, from the
  // workers' threads.
  std::function<simulate::KvMemoryRule(const plan::Plan&)> engine_memory;
  // The serving engine's kernels the step model costs (serve::engine_kernels: the
  // scenario's engine, else vLLM); none when unset.
  simulate::EngineKernels kernels = {};
};

// Thrown by run_search when SearchOptions::cancel was set.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("the search was cancelled") {}
};

// The largest batch swept for a scenario given by request rate (no concurrency): 65536
// concurrent sequences, 256 per device (vLLM's default max_num_seqs) on 256 devices.
inline constexpr int64_t kRateBatchCap = int64_t{1} << 16;
// The most plans a search keeps (costed, or disaggregated pairs): about 1 GB of plans
// and predictions held at once (sizeof(Evaluated) is 744 B before its per-stage
// vectors). A search that would keep more is refused, naming the fields that widen it.
inline constexpr int64_t kMaxKeptPlans = 1'000'000;
// The most plans a space may hold: 27x the full space of the 3T MoE on 512 H200s
// (bench_search), minutes of searching at the slowest rate measured there. A larger
// space is refused before any plan is built, naming the fields that widen it.
inline constexpr int64_t kMaxSpacePlans = 100'000'000;

SearchResult run_search(const Scenario& s, const model::Model& m, const topology::Cluster& c,
                        const simulate::Efficiency& eff, const SearchOptions& opts = {});

// Whether an evaluated plan fits and meets the scenario's SLA (TTFT, TPOT, request
// rate): sets e.meets_sla, and e.sla_miss to the first limit it misses.
void check_sla(Evaluated& e, const Scenario& s);
// Which SLA limit a fitting plan with these figures misses first, if any (check_sla's
// order: TTFT, TPOT, then the scenario's request rate).
enum class SlaMiss { none, ttft, tpot, rate };
SlaMiss sla_miss(const Scenario& s, double ttft_s, double tpot_s, double requests_per_s);

// Sets a plan's per-part weight dtypes from a search weight choice.
void apply_weight_choice(plan::Plan& p, WeightChoice choice);

// The short name of a plan's layout, e.g. "16 dev: pp1 tp1 dp16 | ep16 | fp8 kv=bf16"
// (with " budget=N" when the token budget is not the plan's default);
// disaggregated: "16 dev: 1x prefill pp1 tp8 dp1 | ep8 + 1x decode pp1 tp1 dp8 | ep8 | fp8 kv=bf16".
std::string layout_name(const Evaluated& e);

}  // namespace dayzero::search
