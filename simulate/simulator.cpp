#include "simulate/simulator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "simulate/disaggregated.h"
#include "simulate/explain.h"
#include "simulate/sim_internal.h"

namespace dayzero::simulate {

struct Simulator::Impl {
  const model::Model& model;
  const topology::Cluster& cluster;
  Efficiency eff;
  ModelCosts costs;
  topology::CollectiveModel collectives;
  Roofline roofline;  // the device's, with eff
  // The routing distribution of the last workload seen (a search reuses it).
  std::optional<Routing> routing;
  plan::Workload routing_key;

  Impl(const model::Model& m, const topology::Cluster& c, Efficiency e,
       std::shared_ptr<topology::SharedCollectiveTables> tables)
      : model(m),
        cluster(c),
        eff(e),
        costs(model_costs(m)),
        collectives(c, {}, std::move(tables)),
        roofline(c.device_spec(), eff) {}

  const Routing& routing_for(const plan::Workload& w) {
    if (!routing || routing_key.routing_zipf_s != w.routing_zipf_s || routing_key.routing_seed != w.routing_seed ||
        routing_key.expert_counts != w.expert_counts) {
      routing.emplace(costs.experts, w);
      routing_key = w;
    }
    return *routing;
  }

  // The collective groups of each stage's first rank, prepared (a cost is then a few
  // multiply-adds), per layout: a search returns to a layout for each of its
  // precisions and batches.
  enum Slot { tp_slot, ep_slot, moe_tp_slot, send_slot, kSlots };
  struct StageGroups {
    std::array<topology::CollectiveModel::Group, kSlots> group;
  };
  struct LayoutKey {
    std::array<int, 6> shape{};
    std::vector<uint32_t> devices;
    bool operator==(const LayoutKey&) const = default;
  };
  struct LayoutHash {
    size_t operator()(const LayoutKey& k) const noexcept {
      uint64_t h = 1469598103934665603ull;  // FNV-1a over the shape and the device count
      for (int v : k.shape) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
      return static_cast<size_t>((h ^ k.devices.size()) * 1099511628211ull);
    }
  };
  static constexpr size_t kMaxLayouts = 4096;  // a few MB at most; cleared when full
  std::unordered_map<LayoutKey, std::vector<StageGroups>, LayoutHash> layouts;
  LayoutKey key;  // scratch: a lookup of a known layout allocates nothing
  std::vector<StageGroups>* last_groups = nullptr;
  LayoutKey last_key;

  std::vector<topology::DeviceId> scratch;  // a group's devices, reused

  void prepare(topology::CollectiveModel::Group& out, topology::Collective c, const plan::Plan& p,
               plan::RankRange ranks) {
    scratch.resize(static_cast<size_t>(ranks.count));
    for (int i = 0; i < ranks.count; ++i) scratch[static_cast<size_t>(i)] = p.device_of(ranks[i]);
    out = collectives.prepare(c, scratch);
  }

  std::vector<StageGroups> make_groups(const plan::Plan& p) {
    using topology::Collective;
    std::vector<StageGroups> out(static_cast<size_t>(p.pp));
    for (int s = 0; s < p.pp; ++s) {
      const int r = s * p.ranks_per_stage(), next = r + p.ranks_per_stage();
      auto& g = out[static_cast<size_t>(s)];
      prepare(g.group[tp_slot], Collective::all_reduce, p, p.attn_tp_ranks(r));
      prepare(g.group[ep_slot], Collective::all_to_all, p, p.ep_ranks(r));
      prepare(g.group[moe_tp_slot], Collective::all_reduce, p, p.moe_tp_ranks(r));
      if (s + 1 < p.pp)  // the last stage sends nothing
        prepare(g.group[send_slot], Collective::send_recv, p, {r, next - r, 2});
    }
    return out;
  }

  StageGroups& groups_for(const plan::Plan& p, int stage) {
    key.shape = {p.pp, p.attention.tp, p.attention.dp, p.moe.tp, p.moe.ep, p.moe.dp};
    if (!last_groups || key.shape != last_key.shape || p.devices != last_key.devices) {
      key.devices = p.devices;
      auto it = layouts.find(key);
      if (it == layouts.end()) {
        if (layouts.size() >= kMaxLayouts) layouts.clear();  // last_groups is reset below
        it = layouts.emplace(key, make_groups(p)).first;
      }
      last_groups = &it->second;
      last_key = key;
    }
    return (*last_groups)[static_cast<size_t>(stage)];
  }

  // The tokens one TP group of the experts reduces in a step, for `tokens` per attention
  // replica: under attention DP every replica's tokens of its MoE replica (gathered
  // before the experts and their partial sums reduce-scattered after, an all-reduce's
  // traffic), of which, with EP, those routed to an expert of its EP rank (uniform
  // top-k: 1 - C(E - E/ep, k) / C(E, k) of them); never fewer than the replica's own.
  double moe_tp_tokens(const plan::Plan& p, double tokens) const {
    const double moe_replica = tokens * p.attention.dp / p.moe.dp;
    const double e = static_cast<double>(costs.experts), held = e / p.moe.ep;
    double none = 1;  // no expert of the token's k on this EP rank
    for (int64_t i = 0; i < costs.top_k && none > 0; ++i) none *= std::max(0.0, (e - held - i) / (e - i));
    return std::max(tokens, moe_replica * (1 - none));
  }

  // A collective's time on one of a stage's groups, over the collective efficiency.
  double collective_s(const StageGroups& g, Slot slot, double bytes) {
    return collectives.time_s(g.group[slot], bytes) / eff.collective_efficiency;
  }

  detail::Collectives collectives_for(const detail::PlanContext& ctx, const detail::Stage& s, double tokens) {
    const plan::Plan& p = ctx.plan;
    detail::Collectives c;
    const auto act = static_cast<double>(ctx.act_bytes);
    const double hidden_bytes = tokens * static_cast<double>(costs.hidden) * act;
    StageGroups& g = groups_for(p, s.index);
    if (p.attention.tp > 1) c.tp_allreduce_s = collective_s(g, tp_slot, hidden_bytes);
    if (costs.experts > 0 && p.moe.ep > 1) {
      // Each rank dispatches its share of the replica's tokens, k copies each.
      const double send = std::ceil(tokens / p.attention.tp) * static_cast<double>(costs.top_k * costs.hidden) * act;
      c.ep_alltoall_s = collective_s(g, ep_slot, send);
    }
    if (costs.experts > 0 && p.moe.tp > 1)
      c.moe_tp_allreduce_s =
          collective_s(g, moe_tp_slot, moe_tp_tokens(p, tokens) * static_cast<double>(costs.hidden) * act);
    return c;
  }

  double pp_send_s(const detail::PlanContext& ctx, int stage, double tokens) {
    const double bytes = tokens * static_cast<double>(costs.hidden * ctx.act_bytes);
    return collective_s(groups_for(ctx.plan, stage), send_slot, bytes);
  }

  // Simulator::step_time.
  StepTime batch_step(const detail::PlanContext& ctx, const StepBatch& batch) {
    const plan::Plan& p = ctx.plan;
    const int64_t seqs = static_cast<int64_t>(batch.decode_contexts.size() + batch.prefills.size());
    const int micro = static_cast<int>(std::clamp<int64_t>(seqs, 1, p.pp));
    detail::StepInputs in;
    if (micro == 1) {
      in.batch = &batch;
      in.tokens = batch.tokens();
      return pipeline_step(ctx, in, 1);
    }
    // The representative micro-batch: every m-th decoding sequence and prefill chunk.
    StepBatch share;
    share.decode_width = batch.decode_width;
    for (size_t i = 0; i < batch.decode_contexts.size(); i += static_cast<size_t>(micro))
      share.decode_contexts.push_back(batch.decode_contexts[i]);
    for (size_t i = 0; i < batch.prefills.size(); i += static_cast<size_t>(micro))
      share.prefills.push_back(batch.prefills[i]);
    in.batch = &share;
    in.tokens = share.tokens();
    return pipeline_step(ctx, in, micro);
  }

  // Simulator::draft_time.
  StepTime draft(const detail::PlanContext& ctx, const StepBatch& verify) {
    StepTime total;
    if (!ctx.draft) return total;
    StepBatch next;  // the drafting sequences, one token each, at their context after the verify
    for (int64_t c : verify.decode_contexts) next.decode_contexts.push_back(c + verify.decode_width);
    for (const auto& c : verify.prefills)
      if (c.last) next.decode_contexts.push_back(c.cached_tokens + c.new_tokens);
    if (next.decode_contexts.empty()) return total;
    add_draft_forward(ctx, verify, next, total);
    for (int i = 1; i < ctx.plan.speculative.draft_tokens; ++i) {
      add_draft_forward(ctx, next, next, total);
      for (int64_t& c : next.decode_contexts) ++c;
    }
    total.by_kind_s[CostKind::draft] = total.time_s;
    total.tokens = verify.tokens();
    return total;
  }

  // One forward of the draft layer over `batch`, and the LM head for each sequence of
  // `drafting`, added to `total`'s time and figures.
  void add_draft_forward(const detail::PlanContext& ctx, const StepBatch& batch, const StepBatch& drafting,
                         StepTime& total) {
    const detail::Stage& last = ctx.stages.back();
    detail::Stage head;
    head.index = last.index;
    head.first_rank = last.first_rank;
    head.last = true;
    head.class_counts.assign(costs.classes.size(), 0);
    const StepBatch* parts[2] = {&batch, &drafting};
    const detail::Stage* stages[2] = {&*ctx.draft, &head};
    for (int i = 0; i < 2; ++i) {
      detail::StepInputs in;
      in.batch = parts[i];
      in.tokens = parts[i]->tokens();
      const auto coll = collectives_for(ctx, last, static_cast<double>(in.tokens));
      const StepTime st = detail::stage_time(ctx, *stages[i], in, coll, roofline, cluster.host_link_bw_Bps());
      total.time_s += st.time_s;
      for (size_t f = 0; f < kTimeFigures; ++f) total.by_figure_s[f] += st.by_figure_s[f];
    }
  }

  // A whole step through the pipeline: stage times for `in`, summed with the
  // sends between stages; with m > 1 micro-batches the slowest stage sets the period.
  StepTime pipeline_step(const detail::PlanContext& ctx, detail::StepInputs in, int micro_batches) {
    const plan::Plan& p = ctx.plan;
    StepTime total;
    total.micro_batches = micro_batches;
    double sum = 0, slowest = 0;
    FigureTimes slowest_figures{};
    // Stages with the same layers, ends and collective costs take the same time (a
    // deep pipeline has a few kinds of stage): each kind is costed once.
    struct Kind {
      const detail::Stage* stage;
      detail::Collectives coll;
      StepTime time;
    };
    std::array<std::optional<Kind>, 4> kinds;  // constructed only when used: a StepTime is ~300 B
    size_t n_kinds = 0;
    const auto tokens = static_cast<double>(in.tokens);
    auto send_of = [&](const detail::Stage& s) {
      return s.last ? 0.0 : static_cast<double>(in.chunks) * pp_send_s(ctx, s.index, tokens);
    };
    for (size_t i = 0; i < ctx.stages.size();) {
      const detail::Stage& s = ctx.stages[i];
      const auto coll = collectives_for(ctx, s, tokens);
      const Kind* same = nullptr;
      for (size_t k = 0; k < n_kinds && !same; ++k)
        if (detail::alike(*kinds[k]->stage, s) && kinds[k]->coll == coll) same = &*kinds[k];
      StepTime st = same ? same->time : detail::stage_time(ctx, s, in, coll, roofline, cluster.host_link_bw_Bps());
      if (!same && n_kinds < kinds.size() && ctx.stages.size() > 1) kinds[n_kinds++].emplace(Kind{&s, coll, st});
      const double send_s = send_of(s);
      // The stages after it that are alike, with the same collectives and send, take
      // the same time: a run of them is added up at once.
      size_t run = 1;
      while (i + run < ctx.stages.size()) {
        const detail::Stage& t = ctx.stages[i + run];
        if (!detail::alike(s, t) || collectives_for(ctx, t, tokens) != coll || send_of(t) != send_s) break;
        ++run;
      }
      if (!s.last) {
        st.by_kind_s[CostKind::pp_send] += send_s;
        st.by_figure_s[static_cast<size_t>(TimeFigure::communication)] += send_s;
      }
      const auto m = static_cast<double>(run);
      st.time_s = 0;
      for (const auto& [k, v] : st.by_kind_s) {
        st.time_s += v;
        total.by_kind_s[k] += v * micro_batches * m;
      }
      sum += st.time_s * m;
      for (size_t f = 0; f < kTimeFigures; ++f) total.by_figure_s[f] += st.by_figure_s[f] * m;
      if (st.time_s > slowest) slowest_figures = st.by_figure_s;
      slowest = std::max(slowest, st.time_s);
      total.tokens = st.tokens * micro_batches;
      i += run;
    }
    // One micro-batch passes every stage (sum); m of them leave the last stage
    // one period (the slowest stage) apart.
    total.time_s = sum + (micro_batches - 1) * slowest;
    for (size_t f = 0; f < kTimeFigures; ++f) total.by_figure_s[f] += (micro_batches - 1) * slowest_figures[f];
    total.bubble_s = std::max(0.0, total.time_s - sum * micro_batches / static_cast<double>(p.pp));
    // by_kind_s holds busy time summed over micro-batches, scaled to the wall time.
    double busy = 0;
    for (const auto& [k, v] : total.by_kind_s) busy += v;
    if (busy > 0)
      for (auto& [k, v] : total.by_kind_s) v *= (total.time_s - total.bubble_s) / busy;
    return total;
  }
};

Simulator::Simulator(const model::Model& m, const topology::Cluster& c, Efficiency eff,
                     std::shared_ptr<topology::SharedCollectiveTables> tables)
    : impl_(std::make_unique<Impl>(m, c, eff, std::move(tables))) {}
Simulator::~Simulator() = default;

const ModelCosts& Simulator::costs() const { return impl_->costs; }
const model::Model& Simulator::model() const { return impl_->model; }
const topology::Cluster& Simulator::cluster() const { return impl_->cluster; }
const Efficiency& Simulator::efficiency() const { return impl_->eff; }

Prediction Simulator::simulate(const plan::Plan& p, SimulateOptions opts) {
  Impl& im = *impl_;
  if (p.disaggregated.on()) {  // each worker on its own, then the pools together (disaggregated.h)
    const plan::Plan decode_worker = p.decode_worker();
    const Prediction prefill = simulate(p.prefill_worker(), opts);
    const Prediction decode = simulate(decode_worker, opts);
    const auto ctx =
        detail::make_context(decode_worker, im.costs, im.eff, im.routing_for(p.workload), im.cluster.device_spec());
    const KvBudget kv = detail::kv_budget(ctx, im.cluster.device_spec().mem_bytes, {});
    return combine_disaggregated(p, prefill, decode,
                                 kv_transfer_s(im.cluster, p, kv.sequence_bytes(p.workload.input_len)));
  }
  const auto ctx = detail::make_context(p, im.costs, im.eff, im.routing_for(p.workload), im.cluster.device_spec(),
                                        opts.cuda_executor, opts.cuda_fp8_block_gemm, opts.kernels);
  Prediction pred;
  if (opts.memory) {
    pred = detail::plan_memory(ctx, im.cluster, opts.per_rank, opts.engine_memory);
    if (opts.explain) pred.fullest_reason = explain_memory(pred, im.cluster.config().host.mem_bytes);
  }
  if (!opts.time || (!pred.fits && !opts.time_if_not_fits)) return pred;
  if (opts.prompts_of) {
    pred.prefill = opts.prompts_of->prefill;
    pred.prompts_per_step = opts.prompts_of->prompts_per_step;
    pred.prompt_s = opts.prompts_of->prompt_s;
  } else {
    pred.prefill = im.pipeline_step(ctx, detail::prefill_inputs(p), 1);
    pred.prompts_per_step = detail::prompts_per_step(p);
    pred.prompt_s = pred.prompts_per_step == 1
                        ? pred.prefill.time_s
                        : im.pipeline_step(ctx, detail::prefill_inputs(p, pred.prompts_per_step), 1).time_s /
                              static_cast<double>(pred.prompts_per_step);
  }
  const auto [decode, micro_batches] = detail::decode_inputs(p, ctx.seqs_per_replica);
  if (p.speculative.on()) {  // a verify step of every sequence at the mean context, and the drafting after it
    StepBatch verify;
    verify.decode_contexts.assign(static_cast<size_t>(ctx.seqs_per_replica), static_cast<int64_t>(decode.decode_ctx));
    verify.decode_width = p.speculative.verify_width();
    pred.decode = im.batch_step(ctx, verify);
    const StepTime d = im.draft(ctx, verify);
    pred.decode.time_s += d.time_s;
    pred.decode.by_kind_s[CostKind::draft] += d.time_s;
    for (size_t f = 0; f < kTimeFigures; ++f) pred.decode.by_figure_s[f] += d.by_figure_s[f];
  } else {
    pred.decode = im.pipeline_step(ctx, decode, micro_batches);
  }
  detail::steady_state(p, ctx.seqs_per_replica, pred);
  return pred;
}

std::shared_ptr<const PreparedPlan> Simulator::prepare(const plan::Plan& p, EngineKernels kernels) {
  return std::make_shared<const PreparedPlan>(p, impl_->costs, impl_->eff, impl_->cluster.device_spec(), kernels);
}

StepTime Simulator::step_time(const PreparedPlan& prepared, const StepBatch& batch) {
  return impl_->batch_step(prepared.ctx, batch);
}

StepTime Simulator::draft_time(const PreparedPlan& prepared, const StepBatch& verify) {
  return impl_->draft(prepared.ctx, verify);
}

KvBudget Simulator::kv_budget(const PreparedPlan& prepared, const KvMemoryRule& rule) const {
  return detail::kv_budget(prepared.ctx, impl_->cluster.device_spec().mem_bytes, rule);
}

}  // namespace dayzero::simulate
