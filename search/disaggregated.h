#pragma once
// Disaggregated candidates of a search (scenario "search": {"disaggregated": true}):
// a prefill pool and a decode pool built from the single-pool plans the search has
// already evaluated, and costed from their predictions (simulate/disaggregated.h),
// so no worker is simulated twice.
//
// - Workers share one precision (weights, KV cache, resident experts): the KV cache
//   moves between them as it is.
// - Prefill workers: of each layout that fits, its smallest batch (one prompt per
//   replica); per worker size, the layout that serves the most prompts per second
//   per device and the one with the quickest prompt.
// - Decode workers: every plan that fits, at its batch.
// - Worker counts: for every decode worker count the cluster leaves room for, the
//   prefill worker counts just below and just above the one that matches the decode
//   pool's request rate (more only idles, fewer starves the decode pool). Each
//   decode worker's batch is at most the scenario's concurrency, as a single pool's.

#include <vector>

#include "search/search.h"
#include "simulate/simulator.h"

namespace dayzero::search {

// The pairs a search considered: those kept (evaluated, their SLA checked), how many
// were generated, and those pruned by rule.
struct PoolPairs {
  std::vector<Evaluated> kept;
  int64_t generated = 0;
  Pruned pruned;
};

// Disaggregated plans from `single` (evaluated single-pool plans). With `prune`, once
// some plan meets the SLA, pairs that miss it, or that `top` better layout names and a
// faster, as productive front plan beat, are counted and dropped (search.h's rules on
// the pair's own figures: the ranking and the front are those of every pair). Throws
// core::InputError when the kept pairs are more than kMaxKeptPlans.
PoolPairs disaggregated_plans(const std::vector<Evaluated>& single, const Scenario& s, simulate::Simulator& sim,
                              bool prune);

}  // namespace dayzero::search
