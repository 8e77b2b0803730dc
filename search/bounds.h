#pragma once
// Internal to search/: what one costed plan says about others (walk.h). A basis (the
// TTFT and decode step per token of a plan costed at some batch) bounds the plans of
// its group at larger batches, and of its unit's slower groups; the incumbents (the
// plans meeting the SLA found so far) say when a bound leaves a plan out of both the
// ranking and the Pareto front.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "search/search.h"
#include "search/space.h"

namespace dayzero::search::detail {

// Bounds are loosened by this relative margin against rounding: a bound computed
// from one batch's figures and a plan's own figures come from different sums.
inline constexpr double kSlack = 1e-9;

// Ordered lexicographically; smaller is better under the objective.
struct Key {
  double a = 0, b = 0;
};
bool operator<(const Key& x, const Key& y);

// What a plan costed at one batch says about the larger batches of its group, and
// of its unit's groups with fewer experts resident or a wider KV dtype: TTFT and a
// prompt's share of the steady state (Prediction::prompt_s: its step holds as many
// prompts as the token budget, whatever the batch) are the same at every batch (and
// no shorter for those groups), and the decode step per token does not shrink as the
// batch grows (nor for those groups).
struct Basis {
  double step_s = 0, ttft_s = 0, prompt_s = 0;
};
Basis basis_of(const simulate::Prediction& p, int64_t batch, const LayoutShape& l, const Scenario& s);

// Bounds on a plan at `batch` from a basis costed at a batch no larger: TPOT = step +
// (seqs - 1) x prompt / output_len and throughput = seqs x dp x output_len /
// (output_len x step + seqs x prompt) (simulate/steady_state.cpp), with the basis's
// step, prompt and TTFT, which are no larger than the plan's: TPOT and TTFT from
// below, throughput per device from above.
struct Bound {
  double tpot_lo = 0, ttft_lo = 0, thr_hi = std::numeric_limits<double>::infinity();
  int64_t devices = 0;
};
Bound bound_at(const Basis& basis, int64_t batch, const LayoutShape& l, const Scenario& s);

// The best key a plan within the bound could have, and a costed plan's key.
Key optimistic(const Bound& b, Objective o);
Key achieved(const Evaluated& e, Objective o);

// A layout name of the ranking (ranking.h), hashed: one unit's groups with the same KV
// dtype, number of resident experts and token budget are one name; a disaggregated
// deployment is named by layout_name. Two names that hash alike count as one, which
// only prunes less.
using Identity = uint64_t;
Identity identity_of(size_t unit, const plan::Plan& p);
Identity identity_of(const std::string& layout_name);

// The plans meeting the SLA found so far: the best `k` layout names under the
// objective, and the Pareto front as a staircase of (TPOT, throughput per device).
// Read-only while a wave runs; grown between waves.
class Incumbents {
 public:
  Incumbents(Objective o, size_t k);
  bool any() const { return !front_.empty(); }
  // Whether no plan within the bound can enter the ranking nor the front: `k` other
  // layout names strictly better than its optimistic key, and a front plan strictly
  // faster and at least as productive.
  bool dominates(const Bound& b) const;
  // A unit's costed plans (those meeting the SLA count).
  void add(const std::vector<Evaluated>& plans, size_t unit);
  // One plan, named by `id` (counted when it meets the SLA).
  void add(const Evaluated& e, Identity id);

 private:
  // Ranks `e` under `id`; returns whether its point may join the front.
  bool rank(const Evaluated& e, Identity id);
  void merge(std::vector<std::pair<double, double>>& points);

  Objective o_;
  size_t k_;
  std::vector<std::pair<Key, Identity>> best_;
  std::vector<std::pair<double, double>> front_;
};

}  // namespace dayzero::search::detail
