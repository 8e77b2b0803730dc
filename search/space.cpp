// The search space: layouts, precisions, offload policies and batches that divide
// the model and the cluster.
#include <algorithm>
#include <cmath>
#include <optional>

#include "core/arith.h"
#include "core/error.h"
#include "plan/plan_json.h"
#include "search/search.h"
#include "simulate/precisions.h"

namespace dayzero::search {

namespace {

std::vector<int> powers_of_two_up_to(int n) {
  std::vector<int> v;
  for (int x = 1; x <= n; x *= 2) v.push_back(x);
  return v;
}

std::vector<int> pick(const std::vector<int>& overrides, const std::vector<int>& defaults) {
  if (overrides.empty()) return defaults;
  std::vector<int> out;
  for (int v : overrides)
    if (std::find(defaults.begin(), defaults.end(), v) != defaults.end()) out.push_back(v);
  return out;
}

std::vector<int> divisors_pow2(int n) {
  std::vector<int> v;
  for (int x = 1; x <= n; x *= 2)
    if (n % x == 0) v.push_back(x);
  return v;
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

// One layout of the space and the batches it is tried at.
struct Layout {
  int pp = 1, tp = 1, dp = 1, ep = 1, moe_tp = 1, rps = 1;
  std::vector<int64_t> batches;
};

// Batches: powers of two from one sequence per replica up to the scenario's
// concurrency (always including it), or the scenario's list.
std::vector<int64_t> batches_for(const Scenario& s, int dp) {
  std::vector<int64_t> batches;
  const int64_t cap = s.workload.batch > 0 ? s.workload.batch : kRateBatchCap;
  if (!s.space.batches.empty()) {
    for (int64_t b : s.space.batches)
      if (b >= dp) batches.push_back(b);
  } else {
    for (int64_t b = dp; b < cap; b *= 2) batches.push_back(b);
    if (cap >= dp) batches.push_back(cap);
  }
  return batches;
}

// (ep, moe tp) pairs of a stage of `rps` ranks, the expert set not replicated.
std::vector<std::pair<int, int>> moe_layouts(const Scenario& s, const model::ModelConfig& cfg, int rps, int per_node) {
  if (!cfg.is_moe()) return {{1, 1}};
  std::vector<std::pair<int, int>> moe;
  for (int ep : pick(s.space.ep, divisors_pow2(rps))) {
    const int moe_tp = rps / ep;
    if (cfg.moe.num_experts % ep != 0 || cfg.moe.expert_intermediate % moe_tp != 0) continue;
    if (s.space.tp_within_node && moe_tp > per_node) continue;
    moe.emplace_back(ep, moe_tp);
  }
  return moe;
}

std::vector<Layout> layouts(const Scenario& s, const model::ModelConfig& cfg, const topology::Cluster& c) {
  const auto& sp = s.space;
  const int total = static_cast<int>(c.num_devices());
  const int per_node = static_cast<int>(c.devices_per_node());
  std::vector<int> counts = powers_of_two_up_to(total);
  if (counts.back() != total) counts.push_back(total);
  counts = pick(sp.device_counts, counts);
  std::vector<Layout> out;
  for (int n : counts)
    for (int pp : pick(sp.pp, divisors_pow2(n))) {
      if (pp > cfg.num_layers) continue;
      const int rps = n / pp;
      for (int tp : pick(sp.tp, divisors_pow2(rps))) {
        if (sp.tp_within_node && tp > per_node) continue;
        if (cfg.num_heads % tp != 0) continue;
        if (cfg.attention == model::AttentionKind::gqa && cfg.num_kv_heads % tp != 0 && tp % cfg.num_kv_heads != 0)
          continue;
        if (cfg.intermediate_size > 0 && cfg.intermediate_size % tp != 0) continue;
        const int dp = rps / tp;
        for (const auto& [ep, moe_tp] : moe_layouts(s, cfg, rps, per_node))
          out.push_back({pp, tp, dp, ep, moe_tp, rps, batches_for(s, dp)});
      }
    }
  return out;
}

}  // namespace

std::vector<Evaluated> enumerate_plans(const Scenario& s, const model::Model& m, const topology::Cluster& c) {
  const auto& cfg = m.config;
  const auto weights = weight_choices(s, m, c);
  const std::vector<plan::KvDtype> kvs = s.space.kv_dtypes.empty()
                                             ? std::vector<plan::KvDtype>{plan::KvDtype::bf16, plan::KvDtype::fp8}
                                             : s.space.kv_dtypes;
  std::vector<double> fractions = s.space.resident_expert_fractions;
  if (fractions.empty()) fractions = cfg.is_moe() ? std::vector<double>{1, 0.5, 0.25, 0.125} : std::vector<double>{1};
  if (!cfg.is_moe()) fractions = {1};

  const std::vector<Layout> all = layouts(s, cfg, c);
  // The space's size before any plan is built: refused above kMaxSpacePlans.
  const int64_t per_batch =
      core::checked_mul(core::checked_mul(static_cast<int64_t>(weights.size()), static_cast<int64_t>(kvs.size())),
                        static_cast<int64_t>(fractions.size()));
  int64_t size = 0;
  for (const Layout& l : all)
    size = core::checked_add(size, core::checked_mul(per_batch, static_cast<int64_t>(l.batches.size())));
  if (size > kMaxSpacePlans)
    throw core::InputError(s.file.string(), "search", std::to_string(size) + " plans",
                           "the space holds more plans than the search evaluates (" + std::to_string(kMaxSpacePlans) +
                               "): narrow search.batches, resident_expert_fractions, device_counts, tp, pp or ep");

  std::vector<Evaluated> out;
  out.reserve(static_cast<size_t>(size));
  for (const Layout& l : all)
    for (WeightChoice w : weights)
      for (plan::KvDtype kv : kvs)
        for (double frac : fractions)
          for (int64_t batch : l.batches) {
            Evaluated e;
            auto& p = e.plan;
            p.model = m.config.source;
            p.cluster = c.name();
            p.pp = l.pp;
            p.attention = {l.tp, l.dp};
            p.moe = cfg.is_moe() ? plan::MoeLayout{l.moe_tp, l.ep, 1} : plan::MoeLayout{1, 1, l.rps};
            apply_weight_choice(p, w);
            p.dtypes.kv_cache = kv;
            if (frac < 1)
              p.offload.resident_experts = std::max<int64_t>(
                  l.ep, static_cast<int64_t>(std::llround(frac * static_cast<double>(cfg.moe.num_experts))));
            p.workload = s.workload;
            p.workload.batch = batch;
            p.speculative = s.speculative;
            e.weights = w;
            e.resident_fraction = frac;
            out.push_back(std::move(e));
          }
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

namespace {

std::string worker_layout(int pp, const plan::AttentionLayout& a, const plan::MoeLayout& m) {
  std::string s = "pp" + std::to_string(pp) + " tp" + std::to_string(a.tp) + " dp" + std::to_string(a.dp);
  if (m.ep > 1 || m.tp > 1) s += " | ep" + std::to_string(m.ep) + " etp" + std::to_string(m.tp);
  return s;
}

}  // namespace

std::string layout_name(const Evaluated& e) {
  const auto& p = e.plan;
  std::string s = std::to_string(p.devices_used()) + " dev: ";
  if (p.disaggregated.on()) {
    const plan::WorkerLayout& l = p.disaggregated.prefill;
    s += std::to_string(p.disaggregated.prefill_workers) + "x prefill " + worker_layout(l.pp, l.attention, l.moe) +
         " + " + std::to_string(p.disaggregated.decode_workers) + "x decode ";
  }
  s += worker_layout(p.pp, p.attention, p.moe);
  s +=
      " | " + std::string(weight_choice_name(e.weights)) + " kv=" + std::string(plan::kv_dtype_name(p.dtypes.kv_cache));
  if (p.offload.resident_experts >= 0) s += " hot=" + std::to_string(p.offload.resident_experts);
  return s;
}

}  // namespace dayzero::search
