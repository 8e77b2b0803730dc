#pragma once
// The search space of a scenario, described rather than listed: the layouts that
// divide the model and the cluster, and per layout the precisions, offload levels
// and batches it is tried at. A "group" is one layout at one weight choice,
// speculative setting, KV dtype, resident share of the experts and token budget: its
// plans differ only in the batch, which is
// how the search prunes (search.h). Nothing here builds a plan until asked.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "search/scenario.h"

namespace dayzero::search {

// One layout of the space: a stage's ranks as attention tp x dp and as experts
// moe_tp x ep x moe_dp, pp stages split as `split` says, and the batches (ascending)
// it is tried at.
struct LayoutShape {
  int pp = 1, tp = 1, dp = 1;
  int moe_tp = 1, ep = 1, moe_dp = 1;  // a dense model: 1, 1, tp x dp
  int redundant = 0;                   // plan::MoeLayout::redundant_experts
  StageSplit split = StageSplit::even;
  std::vector<int64_t> stage_layers;  // balanced: layers per stage; even: empty
  std::vector<int64_t> batches;
  int devices() const { return pp * tp * dp; }
};

struct Space {
  std::vector<LayoutShape> layouts;
  std::vector<WeightChoice> weights;
  // Speculative decoding settings: the scenario's, and in the full space also plain
  // decoding and each shorter draft (search.draft_tokens lists them; 0 = plain).
  std::vector<plan::SpeculativeDecoding> specs;
  std::vector<plan::KvDtype> kvs;
  std::vector<double> fractions;  // resident share of the routed experts (1 = all)
  std::vector<int64_t> budgets;   // prefill tokens per step (plan::Plan::prefill_chunk_tokens), ascending

  size_t per_layout() const { return weights.size() * specs.size() * kvs.size() * fractions.size() * budgets.size(); }
  size_t groups() const { return layouts.size() * per_layout(); }
  const LayoutShape& layout_of(size_t group) const { return layouts[group / per_layout()]; }
  size_t batches_of(size_t group) const { return layout_of(group).batches.size(); }
  int64_t plans() const;  // every (group, batch)
};

// The space of a scenario (its search overrides applied). Throws core::InputError
// naming search.weight_dtypes when a listed precision needs tensor cores the device lacks.
Space make_space(const Scenario& s, const model::Model& m, const topology::Cluster& c);

// A group's plan at one of its batches (valid for the model and cluster by
// construction). Groups of a layout are ordered by weight choice, then speculative
// setting, then KV dtype, then resident share, then token budget (innermost).
struct GroupChoice {
  WeightChoice weights = WeightChoice::checkpoint;
  plan::SpeculativeDecoding spec;
  plan::KvDtype kv = plan::KvDtype::bf16;
  double fraction = 1;
  int64_t token_budget = plan::Plan{}.prefill_chunk_tokens;
};
GroupChoice choice_of(const Space& space, size_t group);
plan::Plan plan_of(const Space& space, size_t group, int64_t batch, const Scenario& s, const model::Model& m,
                   const topology::Cluster& c);

// Every plan of the space, in group order then by batch (small spaces and tests).
std::vector<plan::Plan> list_plans(const Space& space, const Scenario& s, const model::Model& m,
                                   const topology::Cluster& c);

// Decoder layers per stage balanced by weight bytes: the contiguous split of the
// layers into `pp` stages (each at least one layer) whose heaviest stage is the
// lightest, counting the embedding on the first stage and the LM head on the last.
// layer_bytes: one entry per decoder layer.
std::vector<int64_t> balanced_stage_layers(const std::vector<double>& layer_bytes, double embedding_bytes,
                                           double head_bytes, int pp);
// The same for every stage count from 1 to max_pp at once (entry pp; entry 0 and
// counts above the layers are empty).
std::vector<std::vector<int64_t>> balanced_stage_splits(const std::vector<double>& layer_bytes, double embedding_bytes,
                                                        double head_bytes, int max_pp);

}  // namespace dayzero::search
