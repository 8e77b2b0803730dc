// The time model: one pipeline stage, one step. Every op costs
//   max(FLOPs / (peak x eff_compute), bytes / (HBM bandwidth x eff_memory))
// (simulate/roofline.h) plus a fixed per-kernel overhead; collectives come from topology/.
#include <algorithm>
#include <cmath>

#include "simulate/roofline.h"
#include "simulate/sim_internal.h"

namespace dayzero::simulate::detail {

namespace {

size_t idx(WeightClass c) { return static_cast<size_t>(c); }
double ceil_div(double a, double b) { return std::ceil(a / b); }

// Sum over a sequence's new tokens of the context each attends to: with p cached
// tokens and n new ones, token i sees p + i (1-based), capped at the window.
double prefill_ctx_sum(double n, double p, double window) {
  if (window <= 0) return n * p + n * (n + 1) / 2;
  const double k = std::clamp(window - p, 0.0, n);  // new tokens whose context fits the window
  return k * p + k * (k + 1) / 2 + (n - k) * window;
}

}  // namespace

StepTime stage_time(const PlanContext& ctx, const Stage& s, const StepInputs& in, const Collectives& coll,
                    const topology::DeviceSpec& dev, double host_bw_Bps) {
  const plan::Plan& p = ctx.plan;
  const ModelCosts& mc = ctx.mc;
  const Roofline rf{dev, ctx.eff};
  const double tp = p.attention.tp, moe_tp = p.moe.tp;
  const double tile = ctx.eff.tile_rows;
  const double t = static_cast<double>(in.tokens);
  const double rows = ceil_div(t, tile) * tile;  // GEMM rows rounded up to whole tiles
  const double chunks = static_cast<double>(in.chunks);
  const double seqs = static_cast<double>(in.seqs);
  const topology::ComputeDtype dt_attn = mc.gemm_dtype[ctx.p_attn];
  const topology::ComputeDtype dt_dense = mc.gemm_dtype[ctx.p_dense];
  const topology::ComputeDtype dt_exp = mc.gemm_dtype[ctx.p_experts];
  const double kv_bytes = static_cast<double>(ctx.kv_elem_bytes);
  const double overlap = 1 - p.comm_overlap;

  StepTime st;
  st.tokens = in.tokens * in.chunks;
  auto add = [&](CostKind kind, double s_) { st.by_kind_s[kind] += s_; };

  for (size_t c = 0; c < mc.classes.size(); ++c) {
    const double n = static_cast<double>(s.class_counts[c]);
    if (n == 0) continue;
    const auto& lc = mc.classes[c];
    const auto bytes = [&](WeightClass w, size_t prec) { return static_cast<double>(lc.bytes[idx(w)][prec]); };
    const auto flops = [&](WeightClass w) { return static_cast<double>(lc.flops_per_token[idx(w)]); };

    // Attention projections.
    const double attn_w = bytes(WeightClass::attn_sharded, ctx.p_attn) / tp +
                          bytes(WeightClass::attn_kv, ctx.p_attn) * ctx.kv_frac +
                          bytes(WeightClass::attn_replicated, ctx.p_attn);
    const double attn_f = flops(WeightClass::attn_sharded) / tp + flops(WeightClass::attn_kv) * ctx.kv_frac +
                          flops(WeightClass::attn_replicated);
    add(CostKind::gemm, n * chunks * rf.gemm(attn_f * rows, attn_w, dt_attn));

    // Attention over the context: heads split over TP; the cache a rank reads is
    // its KV heads (GQA) or the whole latent (MLA, replicated over TP).
    const double kv_elems = mc.mla ? static_cast<double>(lc.kv_elems_per_token)
                                   : static_cast<double>(lc.kv_elems_per_token) * ctx.kv_frac;
    const double window = static_cast<double>(lc.window);
    if (in.prefill) {
      const double ctx_sum = seqs * prefill_ctx_sum(static_cast<double>(in.new_per_seq),
                                                    static_cast<double>(in.prefix_per_seq), window);
      const double seen = std::min(static_cast<double>(in.new_per_seq + in.prefix_per_seq),
                                   window > 0 ? window : 1e300);
      add(CostKind::attention, n * rf.attention(ctx_sum * static_cast<double>(lc.attn_ctx_flops) / tp,
                                        seqs * seen * kv_elems * kv_bytes));
    } else {
      const double c_len = window > 0 ? std::min(in.decode_ctx, window) : in.decode_ctx;
      const double f = static_cast<double>(mc.mla ? lc.attn_ctx_flops_absorbed : lc.attn_ctx_flops);
      add(CostKind::attention, n * rf.attention(seqs * c_len * f / tp, seqs * c_len * kv_elems * kv_bytes));
    }

    if (!lc.moe) {
      add(CostKind::gemm, n * chunks * rf.gemm(flops(WeightClass::dense_mlp) / tp * rows,
                                       bytes(WeightClass::dense_mlp, ctx.p_dense) / tp, dt_dense));
    } else {
      add(CostKind::router, n * chunks * rf.gemm(flops(WeightClass::router) * rows,
                                         bytes(WeightClass::router, ctx.p_dense), topology::ComputeDtype::bf16));
      if (flops(WeightClass::shared_experts) > 0)
        add(CostKind::gemm, n * chunks * rf.gemm(flops(WeightClass::shared_experts) / tp * rows,
                                         bytes(WeightClass::shared_experts, ctx.p_dense) / tp, dt_dense));
      // Routed experts: the busiest EP rank sets the pace. Tokens entering one
      // MoE replica: every attention replica's tokens, split over MoE DP.
      const double assignments = t * p.attention.dp / p.moe.dp * static_cast<double>(mc.top_k);
      const auto load = ctx.routing.busiest_rank_load(p.moe.ep, assignments, ctx.eff.tile_rows, ctx.resident_experts);
      const double expert_w = bytes(WeightClass::expert, ctx.p_experts) / moe_tp;
      add(CostKind::experts, n * chunks * rf.gemm(flops(WeightClass::expert) / moe_tp * load.padded_rows,
                                          load.experts_touched * expert_w, dt_exp));
      if (load.cold_touched > 0) add(CostKind::offload_fetch, n * chunks * load.cold_touched * expert_w / host_bw_Bps);
      if (p.moe.ep > 1) add(CostKind::ep_alltoall, n * chunks * 2 * coll.ep_alltoall_s * overlap);
      if (p.moe.tp > 1) add(CostKind::tp_allreduce, n * chunks * coll.moe_tp_allreduce_s * overlap);
    }
    add(CostKind::elementwise, n * chunks * rf.memory(t * static_cast<double>(lc.elementwise_elems_per_token * ctx.act_bytes)));
    add(CostKind::kernel_overhead, n * chunks * static_cast<double>(lc.kernels) * ctx.eff.kernel_overhead_s);
    if (p.attention.tp > 1) add(CostKind::tp_allreduce, n * chunks * 2 * coll.tp_allreduce_s * overlap);
  }
  if (s.first)
    add(CostKind::embedding, chunks * (rf.memory(t * static_cast<double>(mc.hidden * ctx.act_bytes)) + ctx.eff.kernel_overhead_s));
  if (s.last) {
    // Logits only for each sequence's last position (prefill) or its one new token.
    const double head_rows = ceil_div(seqs, tile) * tile;
    add(CostKind::lm_head, rf.gemm(static_cast<double>(mc.head_flops_per_token) / tp * head_rows,
                           static_cast<double>(mc.head_bytes[ctx.p_embed]) / tp, mc.gemm_dtype[ctx.p_embed]) +
                       ctx.eff.kernel_overhead_s);
  }
  for (const auto& [k, v] : st.by_kind_s) st.time_s += v;
  return st;
}

}  // namespace dayzero::simulate::detail
