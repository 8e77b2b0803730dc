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

// Elements per activation scale of block-scaled FP8 GEMMs: one F32 scale per token and
// 128 input columns (DeepSeek-V3's activation quantization, model::kFp8DefaultBlock).
constexpr double kFp8QuantGroup = static_cast<double>(model::kFp8DefaultBlock);

// Tokens per chunk of a gated delta-net's chunked prefill (flash-linear-attention's
// chunk_gated_delta_rule, which vLLM and SGLang call for Qwen3-Next / Qwen3.5: 64).
constexpr double kLinearChunk = 64;

// Sum over a sequence's new tokens of the context each attends to: with p cached
// tokens and n new ones, token i sees p + i (1-based), capped at the window.
double prefill_ctx_sum(double n, double p, double window) {
  if (window <= 0) return n * p + n * (n + 1) / 2;
  const double k = std::clamp(window - p, 0.0, n);  // new tokens whose context fits the window
  return k * p + k * (k + 1) / 2 + (n - k) * window;
}

// One stage's step, costed layer class by layer class. The phases add to the same
// breakdown in a fixed order (attention, then the FFN, then per-layer fixed costs;
// the stage's embedding and head last), so sums are reproducible to the bit.
class StageCoster {
 public:
  StageCoster(const PlanContext& ctx, const StepInputs& in, const Collectives& coll, const Roofline& rf,
              double host_bw_Bps)
      : ctx_(ctx), p_(ctx.plan), mc_(ctx.mc), in_(in), coll_(coll), rf_(rf), host_bw_Bps_(host_bw_Bps) {
    t_ = static_cast<double>(in.batch ? in.batch->tokens() : in.tokens);
    rows_ = ceil_div(t_, tile_) * tile_;
    chunks_ = in.batch ? 1.0 : static_cast<double>(in.chunks);
    seqs_ = static_cast<double>(in.batch ? in.batch->sampled() : in.seqs);  // rows of the LM head
    st_.tokens = in.batch ? in.batch->tokens() : in.tokens * in.chunks;
  }

  StepTime cost(const Stage& s) {
    for (size_t c = 0; c < mc_.classes.size(); ++c) {
      const double n = static_cast<double>(s.class_counts[c]);
      if (n == 0) continue;
      const auto& lc = mc_.classes[c];
      attention(lc, n);
      if (lc.moe) moe(lc, n);
      else
        add(CostKind::gemm, n * chunks_,
            rf_.gemm_timed(flops(lc, WeightClass::dense_mlp) / tp_ * rows_,
                           bytes(lc, WeightClass::dense_mlp, ctx_.p_dense) / tp_, dt(ctx_.p_dense)));
      add(CostKind::elementwise, n * chunks_,
          rf_.memory_timed(t_ * static_cast<double>(ctx_.act_bytes) *
                           (static_cast<double>(lc.elementwise_elems_per_token) +
                            static_cast<double>(lc.elementwise_tp_elems_per_token) / tp_)));
      add(CostKind::kernel_overhead, n * chunks_ * static_cast<double>(lc.kernels) * ctx_.eff.kernel_overhead_s,
          TimeFigure::kernel_overhead);
      if (ctx_.separate_activation_quant) activation_quant(lc, n);
      if (p_.attention.tp > 1)
        add(CostKind::tp_allreduce, n * chunks_ * 2 * coll_.tp_allreduce_s * overlap_, TimeFigure::communication);
    }
    ends(s);
    for (const auto& [k, v] : st_.by_kind_s) st_.time_s += v;
    return st_;
  }

 private:
  void add(CostKind kind, double s, TimeFigure figure) {
    st_.by_kind_s[kind] += s;
    st_.by_figure_s[static_cast<size_t>(figure)] += s;
  }
  void add(CostKind kind, double times, BoundTime t) { add(kind, times * t.s, t.figure); }
  double bytes(const LayerClassCosts& lc, WeightClass w, size_t prec) const {
    return static_cast<double>(lc.bytes[idx(w)][prec]);
  }
  double flops(const LayerClassCosts& lc, WeightClass w) const {
    return static_cast<double>(lc.flops_per_token[idx(w)]);
  }
  topology::ComputeDtype dt(size_t precision) const { return mc_.gemm_dtype[precision]; }

  // Attention projections, then attention over the context: heads split over TP;
  // the cache a rank reads is its KV heads (GQA) or the whole latent (MLA,
  // replicated over TP).
  void attention(const LayerClassCosts& lc, double n) {
    const double attn_w = bytes(lc, WeightClass::attn_sharded, ctx_.p_attn) / tp_ +
                          bytes(lc, WeightClass::attn_kv, ctx_.p_attn) * ctx_.kv_frac +
                          bytes(lc, WeightClass::attn_replicated, ctx_.p_attn);
    const double attn_f = flops(lc, WeightClass::attn_sharded) / tp_ + flops(lc, WeightClass::attn_kv) * ctx_.kv_frac +
                          flops(lc, WeightClass::attn_replicated);
    add(CostKind::gemm, n * chunks_, rf_.gemm_timed(attn_f * rows_, attn_w, dt(ctx_.p_attn)));
    const double kv_elems = mc_.mla ? static_cast<double>(lc.kv_elems_per_token)
                                    : static_cast<double>(lc.kv_elems_per_token) * ctx_.kv_frac;
    const double kv_bytes = static_cast<double>(ctx_.kv_elem_bytes);
    // Sparse attention reads at most top-k tokens per query: for time, a window of k.
    const double window = static_cast<double>(lc.window > 0 ? lc.window : lc.attn_topk);
    if (lc.linear) return linear_state(lc, n);
    if (lc.index_ctx_flops > 0) indexer(lc, n);
    if (in_.batch) {
      batch_attention(lc, n, kv_elems * kv_bytes);
    } else if (in_.prefill) {
      const double ctx_sum = seqs_ * prefill_ctx_sum(static_cast<double>(in_.new_per_seq),
                                                     static_cast<double>(in_.prefix_per_seq), window);
      const double seen =
          std::min(static_cast<double>(in_.new_per_seq + in_.prefix_per_seq), window > 0 ? window : 1e300);
      add(CostKind::attention, n,
          rf_.attention_timed(ctx_sum * static_cast<double>(lc.attn_ctx_flops) / tp_,
                              seqs_ * seen * kv_elems * kv_bytes));
    } else {
      const double c_len = window > 0 ? std::min(in_.decode_ctx, window) : in_.decode_ctx;
      const double f = static_cast<double>(mc_.mla ? lc.attn_ctx_flops_absorbed : lc.attn_ctx_flops);
      add(CostKind::attention, n, rf_.attention_timed(seqs_ * c_len * f / tp_, seqs_ * c_len * kv_elems * kv_bytes));
    }
  }

  // Contexts of the step: the sum over its queries of the tokens each sees (prefill
  // chunks over their cache and themselves, decodes over their context), and the
  // tokens cached (read once per sequence).
  std::pair<double, double> step_contexts() const {
    double ctx_sum = 0, cached = 0;
    if (in_.batch) {
      for (const auto& c : in_.batch->prefills) {
        ctx_sum += prefill_ctx_sum(static_cast<double>(c.new_tokens), static_cast<double>(c.cached_tokens), 0);
        cached += static_cast<double>(c.new_tokens + c.cached_tokens);
      }
      const auto w = static_cast<double>(in_.batch->decode_width);
      for (int64_t c : in_.batch->decode_contexts) {
        ctx_sum += prefill_ctx_sum(w, static_cast<double>(c), 0);
        cached += static_cast<double>(c) + w;
      }
    } else if (in_.prefill) {
      ctx_sum =
          seqs_ * prefill_ctx_sum(static_cast<double>(in_.new_per_seq), static_cast<double>(in_.prefix_per_seq), 0);
      cached = seqs_ * static_cast<double>(in_.new_per_seq + in_.prefix_per_seq);
    } else {
      ctx_sum = cached = seqs_ * in_.decode_ctx;
    }
    return {ctx_sum, cached};
  }

  // DeepSeek sparse attention's indexer: every query scores every cached token (replicated
  // over TP, so not divided), reading each token's FP8 key once per sequence.
  void indexer(const LayerClassCosts& lc, double n) {
    const auto [ctx_sum, cached] = step_contexts();
    add(CostKind::attention, n,
        rf_.attention_timed(ctx_sum * static_cast<double>(lc.index_ctx_flops),
                            cached * static_cast<double>(lc.index_bytes_per_token)));
  }

  // A gated delta-net layer: its recurrence's FLOPs are costed with the projections
  // (per token); here the state each sequence reads and writes once per step (decode) or
  // once per 64-token chunk (prefill), split over TP by heads.
  void linear_state(const LayerClassCosts& lc, double n) {
    double passes = 0;  // state reads + writes of the step
    if (in_.batch) {
      for (const auto& c : in_.batch->prefills) passes += std::ceil(static_cast<double>(c.new_tokens) / kLinearChunk);
      passes += static_cast<double>(in_.batch->decode_contexts.size());
    } else if (in_.prefill) {
      passes = seqs_ * std::ceil(static_cast<double>(in_.new_per_seq) / kLinearChunk);
    } else {
      passes = seqs_;
    }
    add(CostKind::attention, n,
        rf_.attention_timed(0, passes * 2 * static_cast<double>(lc.recurrent_state_bytes) / tp_));
  }

  // A serving step's attention: the prefill chunks (each over its cached tokens and
  // itself, capped at the window) and the decoding sequences (each new token over
  // its context and itself), as two kernels: compute-bound and cache-bound.
  void batch_attention(const LayerClassCosts& lc, double n, double kv_bytes_per_token) {
    // A sliding window, or sparse attention's top-k: each query reads at most that many tokens.
    const double window = static_cast<double>(lc.window > 0 ? lc.window : lc.attn_topk);
    const double cap = window > 0 ? window : 1e300;
    const StepBatch& b = *in_.batch;
    if (!b.prefills.empty()) {
      double ctx_sum = 0, seen = 0;
      for (const auto& c : b.prefills) {
        ctx_sum += prefill_ctx_sum(static_cast<double>(c.new_tokens), static_cast<double>(c.cached_tokens), window);
        seen += std::min(static_cast<double>(c.new_tokens + c.cached_tokens), cap);
      }
      add(CostKind::attention, n,
          rf_.attention_timed(ctx_sum * static_cast<double>(lc.attn_ctx_flops) / tp_, seen * kv_bytes_per_token));
    }
    if (!b.decode_contexts.empty()) {
      // Each sequence's w queries (w > 1: a speculative verify) see c + 1 .. c + w
      // tokens; its cache is read once.
      const auto w = static_cast<double>(b.decode_width);
      double ctx_sum = 0, read = 0;
      for (int64_t c : b.decode_contexts) {
        ctx_sum += prefill_ctx_sum(w, static_cast<double>(c), window);
        read += std::min(static_cast<double>(c) + w, cap);
      }
      const double f = static_cast<double>(mc_.mla ? lc.attn_ctx_flops_absorbed : lc.attn_ctx_flops);
      add(CostKind::attention, n, rf_.attention_timed(ctx_sum * f / tp_, read * kv_bytes_per_token));
    }
  }

  // The precision a weight class is costed at (WeightClass::norms and router: none).
  size_t precision_of(WeightClass w) const {
    switch (w) {
      case WeightClass::attn_sharded:
      case WeightClass::attn_kv:
      case WeightClass::attn_replicated: return ctx_.p_attn;
      case WeightClass::dense_mlp:
      case WeightClass::shared_experts: return ctx_.p_dense;
      case WeightClass::expert: return ctx_.p_experts;
      case WeightClass::norms:
      case WeightClass::router:
      case WeightClass::count: break;
    }
    return kPrecisions;
  }
  bool quantizes_activations(WeightClass w) const {
    const size_t p = precision_of(w);
    return ctx_.separate_activation_quant && p < kPrecisions && mc_.block_fp8_activations[p];
  }

  // Block-scaled FP8 GEMMs under an engine that quantizes their activations in kernels of
  // their own (PlanContext::separate_activation_quant): one launch per distinct input,
  // which reads the input and writes it as FP8 with an F32 scale per 128 elements. A
  // (token, expert) pair's inputs are costed with the experts (moe).
  void activation_quant(const LayerClassCosts& lc, double n) {
    double launches = 0, elems = 0;
    for (size_t w = 0; w < kWeightClasses; ++w) {
      if (!quantizes_activations(static_cast<WeightClass>(w))) continue;
      const GemmInputs& g = lc.gemm_inputs[w];
      launches += static_cast<double>(g.count);
      elems += static_cast<double>(g.elems_per_token) + static_cast<double>(g.tp_elems_per_token) / tp_;
    }
    if (launches == 0) return;
    add(CostKind::kernel_overhead, n * chunks_ * launches * ctx_.eff.kernel_overhead_s, TimeFigure::kernel_overhead);
    add(CostKind::elementwise, n * chunks_, rf_.memory_timed(t_ * elems * quant_bytes_per_elem()));
  }
  double quant_bytes_per_elem() const { return static_cast<double>(ctx_.act_bytes) + 1 + 4.0 / kFp8QuantGroup; }

  // Router, shared experts, routed experts on the busiest EP rank, cold experts
  // fetched from the host, and the MoE collectives.
  void moe(const LayerClassCosts& lc, double n) {
    add(CostKind::router, n * chunks_,
        rf_.gemm_timed(flops(lc, WeightClass::router) * rows_, bytes(lc, WeightClass::router, ctx_.p_dense),
                       topology::ComputeDtype::bf16));
    if (flops(lc, WeightClass::shared_experts) > 0)
      add(CostKind::gemm, n * chunks_,
          rf_.gemm_timed(flops(lc, WeightClass::shared_experts) / tp_ * rows_,
                         bytes(lc, WeightClass::shared_experts, ctx_.p_dense) / tp_, dt(ctx_.p_dense)));
    // Tokens entering one MoE replica: every attention replica's tokens, split over MoE DP.
    const double assignments = t_ * p_.attention.dp / p_.moe.dp * static_cast<double>(mc_.top_k);
    const auto load = ctx_.routing.busiest_rank_load(p_.moe.ep, assignments, ctx_.eff.tile_rows, ctx_.resident_experts,
                                                     p_.moe.redundant_experts);
    const double moe_tp = p_.moe.tp;
    const double expert_w = bytes(lc, WeightClass::expert, ctx_.p_experts) / moe_tp;
    add(CostKind::experts, n * chunks_,
        rf_.gemm_timed(flops(lc, WeightClass::expert) / moe_tp * load.padded_rows, load.experts_touched * expert_w,
                       dt(ctx_.p_experts)));
    add(CostKind::elementwise, n * chunks_,
        rf_.memory_timed(load.assignments * static_cast<double>(ctx_.act_bytes) *
                         static_cast<double>(lc.elementwise_expert_elems) / moe_tp));
    if (quantizes_activations(WeightClass::expert))
      add(CostKind::elementwise, n * chunks_,
          rf_.memory_timed(load.assignments * quant_bytes_per_elem() *
                           static_cast<double>(lc.gemm_inputs[idx(WeightClass::expert)].expert_elems) / moe_tp));
    if (load.cold_touched > 0)
      add(CostKind::offload_fetch, n * chunks_ * load.cold_touched * expert_w / host_bw_Bps_,
          TimeFigure::host_transfer);
    if (p_.moe.ep > 1)
      add(CostKind::ep_alltoall, n * chunks_ * 2 * coll_.ep_alltoall_s * overlap_, TimeFigure::communication);
    if (p_.moe.tp > 1)
      add(CostKind::tp_allreduce, n * chunks_ * coll_.moe_tp_allreduce_s * overlap_, TimeFigure::communication);
  }

  // The embedding on the first stage; the LM head on the last, for each
  // sequence's last position (prefill) or its one new token (decode).
  void ends(const Stage& s) {
    if (s.first) {
      add(CostKind::embedding, chunks_, rf_.memory_timed(t_ * static_cast<double>(mc_.hidden * ctx_.act_bytes)));
      add(CostKind::embedding, chunks_ * ctx_.eff.kernel_overhead_s, TimeFigure::kernel_overhead);
    }
    if (s.last) {
      const double head_rows = ceil_div(seqs_, tile_) * tile_;
      add(CostKind::lm_head, 1,
          rf_.gemm_timed(static_cast<double>(mc_.head_flops_per_token) / tp_ * head_rows,
                         static_cast<double>(mc_.head_bytes[ctx_.p_embed]) / tp_, dt(ctx_.p_embed)));
      add(CostKind::lm_head, ctx_.eff.kernel_overhead_s, TimeFigure::kernel_overhead);
    }
  }

  const PlanContext& ctx_;
  const plan::Plan& p_;
  const ModelCosts& mc_;
  const StepInputs& in_;
  const Collectives& coll_;
  const Roofline& rf_;
  const double host_bw_Bps_;
  const double tp_ = p_.attention.tp;
  const double tile_ = ctx_.eff.tile_rows;
  const double overlap_ = 1 - p_.comm_overlap;       // share of communication not hidden behind compute
  double t_ = 0, rows_ = 0, chunks_ = 0, seqs_ = 0;  // tokens, GEMM rows rounded up to whole tiles
  StepTime st_;
};

}  // namespace

StepTime stage_time(const PlanContext& ctx, const Stage& s, const StepInputs& in, const Collectives& coll,
                    const Roofline& rf, double host_bw_Bps) {
  return StageCoster(ctx, in, coll, rf, host_bw_Bps).cost(s);
}

}  // namespace dayzero::simulate::detail
