#pragma once
// Internal to search/: the walk over a space's groups (search.h states the pruning
// rules). Exhaustive, or pruned:
//
//   1. Bounds. A "unit" is a layout at one weight choice and speculative setting
//      (space.h orders groups so); its groups differ only in
//      the KV dtype and the resident share of the experts, and a wider KV dtype or
//      fewer resident experts only add time (more KV bytes read; cold experts
//      fetched over the host link). The unit's group with the narrowest KV dtype and
//      the most experts resident is costed at its smallest batch, fitting or not:
//      its TTFT and decode step per token bound every plan of the unit, TPOT from
//      below and throughput per device from above, batch by batch (Bound, walk.cpp).
//   2. Waves. Units are taken best bound first, in waves of a fixed size (so that
//      what a wave sees does not depend on the threads); a unit is skipped when the
//      plans already found make it useless: `top` other layouts strictly better
//      than its bound and a plan of the front strictly faster and at least as
//      productive (rule "bound"), or, once any plan meets the SLA, its bound misses
//      the TTFT or TPOT limit. Inside a wave each group walks its batches as the
//      exhaustive search does, and stops early by the same rules (the bound of
//      its latest batch).
// A skipped plan could neither enter the ranking nor the front, and the
// suggestions are only made when nothing meets the SLA, when no unit is skipped by
// bound: the answer is the exhaustive search's (tests/search/test_space.cpp).

#include <chrono>

#include "search/search.h"
#include "search/space.h"
#include "simulate/efficiency.h"

namespace dayzero::search::detail {

// Fills r.all (the costed plans, in space order), r.evaluated and r.pruned.
void walk_space(SearchResult& r, const Space& space, const Scenario& s, const model::Model& m,
                const topology::Cluster& c, const simulate::Efficiency& eff, const SearchOptions& opts,
                std::chrono::steady_clock::time_point t0);

}  // namespace dayzero::search::detail
