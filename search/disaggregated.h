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

// Disaggregated plans from `single` (evaluated single-pool plans), evaluated, their
// SLA checked. Throws core::InputError when they are more than kMaxKeptPlans.
std::vector<Evaluated> disaggregated_plans(const std::vector<Evaluated>& single, const Scenario& s,
                                           simulate::Simulator& sim);

}  // namespace dayzero::search
