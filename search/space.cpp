// The search space: layouts, precisions, offload policies and batches that divide
// the model and the cluster.
#include <algorithm>
#include <cmath>
#include <optional>

#include "core/arith.h"
#include "core/error.h"
#include "plan/plan_json.h"
#include "search/search.h"
#include "search/space.h"
#include "simulate/model_costs.h"
#include "simulate/precisions.h"

namespace dayzero::search {

namespace {

std::vector<int> pick(const std::vector<int>& overrides, const std::vector<int>& defaults) {
  if (overrides.empty()) return defaults;
  std::vector<int> out;
  for (int v : overrides)
    if (std::find(defaults.begin(), defaults.end(), v) != defaults.end()) out.push_back(v);
  return out;
}

// A compute dtype that a weight choice's precisions need (simulate::
// required_compute_dtype) and the device has no peak for, if any.
std::optional<topology::ComputeDtype> missing_compute(WeightChoice w, const topology::DeviceSpec& dev) {
  plan::Plan p;
  apply_weight_choice(p, w);
  for (model::WeightPrecision prec : {p.dtypes.attention, p.dtypes.dense_mlp, p.dtypes.experts, p.dtypes.embedding})
    if (const auto d = simulate::required_compute_dtype(prec); d && dev.peak_flops_for(*d) <= 0) return d;
  return std::nullopt;
}

// Weight choices worth trying for this model (the checkpoint's own, and the
// conversions that change its bytes).
std::vector<WeightChoice> weight_choices(const Scenario& s, const model::Model& m, const topology::Cluster& c) {
  const topology::DeviceSpec& dev = c.device_spec();
  if (!s.space.weight_dtypes.empty()) {
    std::vector<WeightChoice> v;
    for (WeightChoice d : s.space.weight_dtypes) {
      if (d == WeightChoice::experts_int4 && !m.config.is_moe()) continue;
      if (const auto missing = missing_compute(d, dev)) {
        const std::string dtype(topology::compute_dtype_name(*missing));
        throw core::InputError(s.file.string(), "search.weight_dtypes",
                               "\"" + std::string(weight_choice_name(d)) + "\"",
                               "needs " + dtype + " tensor cores; the cluster's device " + dev.name + " has none");
      }
      v.push_back(d);
    }
    return v;
  }
  // By default the checkpoint's own precision, and for a 16-bit checkpoint the
  // device's 8-bit W8A8 path: FP8, else INT8 (A100). Lossier conversions (INT4,
  // NVFP4) change the model's quality, and weight-only INT8 is slower than W8A8 at
  // the same bytes wherever W8A8 runs: a scenario opts in through search.weight_dtypes.
  std::vector<WeightChoice> v = {WeightChoice::checkpoint};
  if (m.config.quant.method == model::QuantMethod::none) {
    if (dev.peak_flops_for(topology::ComputeDtype::fp8) > 0) v.push_back(WeightChoice::fp8);
    else if (dev.peak_flops_for(topology::ComputeDtype::int8) > 0) v.push_back(WeightChoice::int8);
  }
  return v;
}

}  // namespace

namespace {

// Batches: from one sequence per replica up to the scenario's concurrency (always
// including it), by powers of two (compact) or half steps of 1.5x and 1.33x (full:
// 1, 1.5, 2, 3, 4, 6, ... per replica, so that memory a layout saves shows as a
// larger batch); or the scenario's list.
std::vector<int64_t> batches_for(const Scenario& s, int dp) {
  std::vector<int64_t> batches;
  const int64_t cap = s.workload.batch > 0 ? s.workload.batch : kRateBatchCap;
  if (!s.space.batches.empty()) {
    for (int64_t b : s.space.batches)
      if (b >= dp) batches.push_back(b);
    std::sort(batches.begin(), batches.end());
    return batches;
  }
  const bool half_steps = s.space.kind == SpaceKind::full;
  for (int64_t per = 1; per * dp < cap; per *= 2) {  // sequences per replica
    batches.push_back(per * dp);
    if (half_steps && per >= 2 && per / 2 * 3 * dp < cap) batches.push_back(per / 2 * 3 * dp);
  }
  if (cap >= dp) batches.push_back(cap);
  return batches;
}

std::vector<int> divisors(int n, bool powers_of_two) {
  std::vector<int> v;
  for (int x = 1; x <= n; x = powers_of_two ? 2 * x : x + 1)
    if (n % x == 0) v.push_back(x);
  return v;
}

struct MoeShape {
  int tp = 1, ep = 1, dp = 1, redundant = 0;
};

// The expert layouts of a stage of `rps` ranks: moe_tp x ep x moe_dp = rps.
std::vector<MoeShape> moe_shapes(const Scenario& s, const model::ModelConfig& cfg, int rps, int per_node) {
  if (!cfg.is_moe()) return {{1, 1, rps}};
  const bool pow2 = s.space.kind == SpaceKind::compact;
  const std::vector<int> copies = divisors(rps, pow2);
  const std::vector<int> redundant = !s.space.redundant_per_rank.empty() ? s.space.redundant_per_rank
                                     : pow2                              ? std::vector<int>{0}
                                                                         : std::vector<int>{0, 1};
  std::vector<MoeShape> out;
  for (int mdp : s.space.moe_dp.empty() ? (pow2 ? std::vector<int>{1} : copies) : pick(s.space.moe_dp, copies)) {
    if (rps % mdp != 0) continue;
    const int per_copy = rps / mdp;
    for (int ep : pick(s.space.ep, divisors(per_copy, pow2))) {
      const int moe_tp = per_copy / ep;
      if (cfg.moe.num_experts % ep != 0 || cfg.moe.expert_intermediate % moe_tp != 0) continue;
      if (s.space.tp_within_node && moe_tp > per_node) continue;
      out.push_back({moe_tp, ep, mdp, 0});
      if (ep < 2) continue;
      for (int per_rank : redundant)  // replicas of hot experts (EPLB)
        if (per_rank > 0 && int64_t{per_rank} * ep <= cfg.moe.num_experts)
          out.push_back({moe_tp, ep, mdp, per_rank * ep});
    }
  }
  return out;
}

bool attention_tp_divides(const model::ModelConfig& cfg, int tp) {
  if (cfg.num_heads % tp != 0) return false;
  if (cfg.attention == model::AttentionKind::gqa && cfg.num_kv_heads % tp != 0 && tp % cfg.num_kv_heads != 0)
    return false;
  if (cfg.intermediate_size > 0 && cfg.intermediate_size % tp != 0) return false;
  if (cfg.is_moe() && cfg.moe.num_shared_experts > 0 &&
      (cfg.moe.num_shared_experts * cfg.moe.expert_intermediate) % tp != 0)
    return false;
  return true;
}

// Weight bytes of each decoder layer, and of the embedding and the head, at the
// checkpoint's precision (what the balanced split weighs).
struct LayerWeights {
  std::vector<double> layers;
  double embedding = 0, head = 0;
};
LayerWeights layer_weights(const model::Model& m) {
  const simulate::ModelCosts mc = simulate::model_costs(m);
  const auto prec = static_cast<size_t>(model::WeightPrecision::checkpoint);
  LayerWeights w;
  for (int cls : mc.class_of_layer) {
    const auto& lc = mc.classes[static_cast<size_t>(cls)];
    double b = 0;
    for (size_t k = 0; k < simulate::kWeightClasses; ++k)
      b += static_cast<double>(lc.bytes[k][prec]) *
           (k == static_cast<size_t>(simulate::WeightClass::expert) ? static_cast<double>(mc.experts) : 1.0);
    w.layers.push_back(b);
  }
  w.embedding = static_cast<double>(mc.embedding_bytes[prec]);
  w.head = static_cast<double>(mc.head_bytes[prec]);
  return w;
}

// The speculative settings: search.draft_tokens (0 = plain decoding) with the
// scenario's method and acceptance; by default the scenario's own setting, and in the
// full space also plain decoding and every shorter draft.
std::vector<plan::SpeculativeDecoding> speculative_settings(const Scenario& s) {
  const plan::SpeculativeDecoding& base = s.speculative;
  std::vector<int> drafts = s.space.draft_tokens;
  if (drafts.empty()) {
    if (!base.on() || s.space.kind == SpaceKind::compact) return {base};
    for (int d = 0; d <= base.draft_tokens; ++d) drafts.push_back(d);
  }
  std::vector<plan::SpeculativeDecoding> out;
  for (int d : drafts) {
    plan::SpeculativeDecoding spec = base;
    spec.draft_tokens = d;
    if (d == 0) spec = {};
    out.push_back(spec);
  }
  return out;
}

std::vector<LayoutShape> layouts(const Scenario& s, const model::Model& m, const topology::Cluster& c) {
  const auto& cfg = m.config;
  const auto& sp = s.space;
  const bool pow2 = sp.kind == SpaceKind::compact;
  const int total = static_cast<int>(c.num_devices());
  const int per_node = static_cast<int>(c.devices_per_node());
  std::vector<int> counts;
  if (pow2) {
    for (int x = 1; x <= total; x *= 2) counts.push_back(x);
    if (counts.back() != total) counts.push_back(total);
  } else {
    for (int x = 1; x <= total; ++x) counts.push_back(x);
  }
  counts = pick(sp.device_counts, counts);
  std::vector<StageSplit> splits = sp.stage_splits;
  if (splits.empty())
    splits = pow2 ? std::vector<StageSplit>{StageSplit::even}
                  : std::vector<StageSplit>{StageSplit::even, StageSplit::balanced};
  std::vector<std::vector<int64_t>> balanced;  // per pp
  if (std::find(splits.begin(), splits.end(), StageSplit::balanced) != splits.end()) {
    const LayerWeights weights = layer_weights(m);
    balanced = balanced_stage_splits(weights.layers, weights.embedding, weights.head, static_cast<int>(cfg.num_layers));
  }
  std::vector<LayoutShape> out;
  for (int n : counts)
    for (int pp : pick(sp.pp, divisors(n, pow2))) {
      if (pp > cfg.num_layers) continue;
      const int rps = n / pp;
      for (int tp : pick(sp.tp, divisors(rps, pow2))) {
        if ((sp.tp_within_node && tp > per_node) || !attention_tp_divides(cfg, tp)) continue;
        const int dp = rps / tp;
        const std::vector<int64_t> batches = batches_for(s, dp);
        if (batches.empty()) continue;
        for (const MoeShape& moe : moe_shapes(s, cfg, rps, per_node))
          for (StageSplit split : splits) {
            LayoutShape l{pp, tp, dp, moe.tp, moe.ep, moe.dp, moe.redundant, split, {}, batches};
            if (split == StageSplit::balanced) {
              if (pp == 1) continue;
              const auto& b = balanced[static_cast<size_t>(pp)];
              plan::Plan even;
              even.pp = pp;
              if (b == even.layers_per_stage(cfg.num_layers)) continue;  // the even split already
              l.stage_layers = b;
            }
            out.push_back(std::move(l));
          }
      }
    }
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> balanced_stage_splits(const std::vector<double>& layer_bytes, double embedding_bytes,
                                                        double head_bytes, int max_pp) {
  const size_t n = layer_bytes.size();
  const size_t most = std::min(n, static_cast<size_t>(std::max(0, max_pp)));
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(std::max(0, max_pp)) + 1);
  // cost(i, j): the bytes of layers [i, j) with the embedding on a stage starting at 0
  // and the head on a stage ending at n.
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_bytes[i];
  auto cost = [&](size_t i, size_t j) {
    return prefix[j] - prefix[i] + (i == 0 ? embedding_bytes : 0) + (j == n ? head_bytes : 0);
  };
  // best[k][j]: the lightest heaviest stage splitting layers [0, j) into k stages; one
  // table serves every stage count.
  constexpr double kInf = 1e300;
  std::vector<std::vector<double>> best(most + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<size_t>> cut(most + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= most; ++k)
    for (size_t j = k; j <= n; ++j)
      for (size_t i = k - 1; i < j; ++i) {
        const double v = std::max(best[k - 1][i], cost(i, j));
        if (v < best[k][j]) {  // ties keep the earliest cut: the first stages take fewer layers
          best[k][j] = v;
          cut[k][j] = i;
        }
      }
  for (size_t stages = 1; stages <= most; ++stages) {
    std::vector<int64_t>& split = out[stages];
    split.resize(stages);
    for (size_t k = stages, j = n; k > 0; --k) {
      split[k - 1] = static_cast<int64_t>(j - cut[k][j]);
      j = cut[k][j];
    }
  }
  return out;
}

std::vector<int64_t> balanced_stage_layers(const std::vector<double>& layer_bytes, double embedding_bytes,
                                           double head_bytes, int pp) {
  if (pp < 1 || static_cast<size_t>(pp) > layer_bytes.size()) return {};
  return balanced_stage_splits(layer_bytes, embedding_bytes, head_bytes, pp)[static_cast<size_t>(pp)];
}

int64_t Space::plans() const {
  int64_t per_batch = static_cast<int64_t>(per_layout()), n = 0;
  for (const LayoutShape& l : layouts)
    n = core::checked_add(n, core::checked_mul(per_batch, static_cast<int64_t>(l.batches.size())));
  return n;
}

Space make_space(const Scenario& s, const model::Model& m, const topology::Cluster& c) {
  const auto& cfg = m.config;
  Space sp;
  sp.weights = weight_choices(s, m, c);
  sp.kvs = s.space.kv_dtypes.empty() ? std::vector<plan::KvDtype>{plan::KvDtype::bf16, plan::KvDtype::fp8}
                                     : s.space.kv_dtypes;
  sp.fractions = s.space.resident_expert_fractions;
  if (sp.fractions.empty()) sp.fractions = {1, 0.5, 0.25, 0.125};
  if (!cfg.is_moe()) sp.fractions = {1};
  sp.budgets = s.space.token_budgets;
  if (sp.budgets.empty()) sp.budgets = {s.engine.token_budget.value_or(plan::Plan{}.prefill_chunk_tokens)};
  std::sort(sp.budgets.begin(), sp.budgets.end());
  sp.budgets.erase(std::unique(sp.budgets.begin(), sp.budgets.end()), sp.budgets.end());
  sp.specs = speculative_settings(s);
  sp.layouts = layouts(s, m, c);
  return sp;
}

GroupChoice choice_of(const Space& space, size_t group) {
  size_t i = group % space.per_layout();
  GroupChoice g;
  g.token_budget = space.budgets[i % space.budgets.size()];
  i /= space.budgets.size();
  g.fraction = space.fractions[i % space.fractions.size()];
  i /= space.fractions.size();
  g.kv = space.kvs[i % space.kvs.size()];
  i /= space.kvs.size();
  g.spec = space.specs[i % space.specs.size()];
  g.weights = space.weights[i / space.specs.size()];
  return g;
}

plan::Plan plan_of(const Space& space, size_t group, int64_t batch, const Scenario& s, const model::Model& m,
                   const topology::Cluster& c) {
  const LayoutShape& l = space.layout_of(group);
  const GroupChoice g = choice_of(space, group);
  plan::Plan p;
  p.model = m.config.source;
  p.cluster = c.name();
  p.pp = l.pp;
  p.attention = {l.tp, l.dp};
  p.moe = {l.moe_tp, l.ep, l.moe_dp, l.redundant};
  p.stage_layers = l.stage_layers;
  apply_weight_choice(p, g.weights);
  p.dtypes.kv_cache = g.kv;
  if (g.fraction < 1)
    p.offload.resident_experts = std::max<int64_t>(
        l.ep, static_cast<int64_t>(std::llround(g.fraction * static_cast<double>(m.config.moe.num_experts))));
  p.workload = s.workload;
  p.workload.batch = batch;
  p.speculative = g.spec;
  p.prefill_chunk_tokens = g.token_budget;
  return p;
}

std::vector<plan::Plan> list_plans(const Space& space, const Scenario& s, const model::Model& m,
                                   const topology::Cluster& c) {
  std::vector<plan::Plan> out;
  for (size_t g = 0; g < space.groups(); ++g)
    for (int64_t b : space.layout_of(g).batches) out.push_back(plan_of(space, g, b, s, m, c));
  return out;
}

void apply_weight_choice(plan::Plan& p, WeightChoice w) {
  using model::WeightPrecision;
  auto all = [&](WeightPrecision matrices, WeightPrecision embedding) {
    p.dtypes.attention = p.dtypes.dense_mlp = p.dtypes.experts = matrices;
    p.dtypes.embedding = embedding;
  };
  switch (w) {
    case WeightChoice::checkpoint: all(WeightPrecision::checkpoint, WeightPrecision::checkpoint); return;
    case WeightChoice::bf16: all(WeightPrecision::bf16, WeightPrecision::bf16); return;
    case WeightChoice::fp8: all(WeightPrecision::fp8, WeightPrecision::fp8); return;
    // Embeddings and head stay as stored (16-bit) under the integer and FP4 choices,
    // as GPTQ / AWQ, llm-compressor's W8A8 and ModelOpt's NVFP4 recipes leave lm_head.
    case WeightChoice::int8: all(WeightPrecision::int8, WeightPrecision::checkpoint); return;
    case WeightChoice::int8_w8a16: all(WeightPrecision::int8_w8a16, WeightPrecision::checkpoint); return;
    case WeightChoice::int4: all(WeightPrecision::int4, WeightPrecision::checkpoint); return;
    case WeightChoice::nvfp4: all(WeightPrecision::nvfp4, WeightPrecision::checkpoint); return;
    case WeightChoice::experts_int4:
      all(WeightPrecision::checkpoint, WeightPrecision::checkpoint);
      p.dtypes.experts = WeightPrecision::int4;
      return;
  }
}

}  // namespace dayzero::search
