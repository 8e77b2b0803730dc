#pragma once
// Ranking and the Pareto front of evaluated plans: pure functions of the evaluated
// list (no simulation, no threads), so that what the search recommends can be
// checked on hand-made lists. run_search applies them to its results.

#include <cstddef>
#include <string>
#include <vector>

#include "search/search.h"

namespace dayzero::search {

// The kind of cost that takes most of a step, and its share ("experts 48 %").
std::string main_cost(const simulate::StepTime& st);

// Whether `a` ranks above `b` under the objective: throughput per device (higher),
// latency (lower TPOT, then lower TTFT), fewest devices (then throughput per device).
bool better(const Evaluated& a, const Evaluated& b, Objective o);

// Indices of the plans that meet the SLA, best first (ties keep enumeration
// order), keeping only the best of each distinct layout (layout_name), at most `top`.
std::vector<size_t> rank_plans(const std::vector<Evaluated>& all, Objective o, int top);

// Indices of the plans that meet the SLA and that no other such plan beats on both
// TPOT (lower) and throughput per device (higher), by increasing TPOT.
std::vector<size_t> pareto_front(const std::vector<Evaluated>& all);

// Why each ranked plan (indices `top` into `all`) ranks where it does: against the
// first, what differs, what bounds its decode step, whether it is on the front.
std::vector<std::string> ranking_reasons(const std::vector<Evaluated>& all, const std::vector<size_t>& top,
                                         const std::vector<size_t>& pareto, Objective o);

}  // namespace dayzero::search
