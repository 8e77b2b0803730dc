#pragma once
// Expert popularity under top-k routing, and what it means per EP rank: the
// busiest rank's share of the routed tokens, how many distinct experts a step
// touches, and how often it reaches a cold (offloaded) expert.

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "plan/plan.h"

namespace dayzero::simulate {

class Routing {
 public:
  // Popularity of each expert id (sums to 1): from measured counts when given,
  // else Zipf(s) over popularity ranks mapped to ids by a fixed permutation
  // (`seed`), so hot experts are scattered over EP ranks as in real routers.
  Routing(int64_t num_experts, const plan::Workload& w);
  Routing() = default;

  int64_t num_experts() const { return static_cast<int64_t>(p_.size()); }
  const std::vector<double>& popularity() const { return p_; }

  // Experts live in contiguous blocks: EP rank r holds ids [r*E/ep, (r+1)*E/ep).
  // Share of all routed (token, expert) pairs that the busiest rank receives.
  double busiest_rank_share(int ep) const;
  // The busiest rank's experts, for `assignments` routed (token, expert) pairs:
  // expected distinct experts touched, and expected tile-padded rows.
  struct RankLoad {
    double assignments = 0;  // (token, expert) pairs landing on the rank
    double experts_touched = 0;
    double padded_rows = 0;   // sum over touched experts of rows rounded up to tiles
    double cold_touched = 0;  // touched experts that are not resident
  };
  // With `redundant` extra slots (plan::MoeLayout::redundant_experts) the experts are
  // placed as expert-parallel load balancing places them (balanced_placement).
  RankLoad busiest_rank_load(int ep, double assignments, int tile_rows, int64_t resident_per_layer,
                             int64_t redundant = 0) const;
  // Load-balanced placement with `redundant` replicas (EPLB, DeepSeek-V3 report sec.
  // 3.4): each replica goes to the expert whose replicas carry the most load each;
  // then every replica, heaviest first, to the least-loaded EP rank with a free slot
  // ((experts + redundant) / ep slots per rank). The busiest rank's replicas: (expert,
  // share of all routed pairs the replica receives).
  std::vector<std::pair<int64_t, double>> balanced_placement(int ep, int64_t redundant) const;
  // Experts of popularity rank < resident are resident (the hottest ones).
  bool is_resident(int64_t expert, int64_t resident_per_layer) const;

 private:
  int busiest_rank(int ep) const;  // the EP rank with the largest share (cached)

  std::vector<double> p_;
  std::vector<double> log_miss_;  // log(1 - p) per expert: P(untouched by n draws) = exp(n log(1-p))
  std::vector<int64_t> rank_of_;  // popularity rank of each expert id (0 = hottest)
  mutable std::vector<std::pair<int, int>> busiest_;  // (ep, busiest rank) seen so far
  // Loads already computed: a search asks the same (ep, assignments, tile, resident)
  // for every precision and KV choice of a layout.
  mutable std::map<std::tuple<int, double, int, int64_t, int64_t>, RankLoad> loads_;
  // Balanced placements already computed: (ep, redundant) -> the busiest rank's replicas.
  mutable std::map<std::pair<int, int64_t>, std::vector<std::pair<int64_t, double>>> placements_;
};

}  // namespace dayzero::simulate
