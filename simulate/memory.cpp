// The memory model: what one rank of a stage holds.
#include <algorithm>
#include <cmath>

#include "core/arith.h"
#include "plan/cuda_staging.h"
#include "simulate/sim_internal.h"

namespace dayzero::simulate::detail {

namespace {
using core::ceil_div;
using core::round_up;
size_t idx(WeightClass c) { return static_cast<size_t>(c); }
constexpr int64_t kBf16Bytes = 2;
constexpr int64_t kFloatBytes = 4;

// Weights one rank of the stage holds in device memory, and its offloaded experts
// kept in host memory.
struct StageWeights {
  double device_bytes = 0, host_bytes = 0;
};

StageWeights stage_weights(const PlanContext& ctx, const Stage& s) {
  const plan::Plan& p = ctx.plan;
  const ModelCosts& mc = ctx.mc;
  const int64_t tp = p.attention.tp, ep = p.moe.ep, moe_tp = p.moe.tp;
  // Each EP rank holds its share of the experts (the resident ones on the device, the
  // rest in host memory) and its share of the redundant replicas (of hot, resident
  // experts: on the device).
  const int64_t experts_per_rank = mc.experts > 0 ? mc.experts / ep : 0;
  const int64_t resident_logical = std::min(experts_per_rank, ceil_div(ctx.resident_experts, ep));
  const int64_t resident_per_rank = resident_logical + (mc.experts > 0 ? p.moe.redundant_experts / ep : 0);
  StageWeights w;
  for (size_t c = 0; c < mc.classes.size(); ++c) {
    const auto n = static_cast<double>(s.class_counts[c]);
    if (n == 0) continue;
    const auto& lc = mc.classes[c];
    double layer = static_cast<double>(ceil_div(lc.bytes[idx(WeightClass::attn_sharded)][ctx.p_attn], tp)) +
                   static_cast<double>(ceil_div(lc.mla_absorbed_copy_bytes[ctx.p_attn], tp)) +
                   static_cast<double>(lc.bytes[idx(WeightClass::attn_kv)][ctx.p_attn]) * ctx.kv_frac +
                   static_cast<double>(lc.bytes[idx(WeightClass::attn_replicated)][ctx.p_attn]) +
                   static_cast<double>(lc.bytes[idx(WeightClass::norms)][ctx.p_attn]);
    if (!lc.moe) {
      layer += static_cast<double>(ceil_div(lc.bytes[idx(WeightClass::dense_mlp)][ctx.p_dense], tp));
    } else {
      const auto expert = static_cast<double>(ceil_div(lc.bytes[idx(WeightClass::expert)][ctx.p_experts], moe_tp));
      layer += static_cast<double>(ceil_div(lc.bytes[idx(WeightClass::shared_experts)][ctx.p_dense], tp)) +
               static_cast<double>(lc.bytes[idx(WeightClass::router)][ctx.p_dense]) +
               static_cast<double>(resident_per_rank) * expert;
      w.host_bytes += n * static_cast<double>(experts_per_rank - resident_logical) * expert;
    }
    w.device_bytes += n * layer;
  }
  if (s.first) w.device_bytes += static_cast<double>(ceil_div(mc.embedding_bytes[ctx.p_embed], tp));
  if (s.last) {
    // A tied head shares the embedding table when both sit on the same stage.
    if (!(mc.tied && s.first)) w.device_bytes += static_cast<double>(ceil_div(mc.head_bytes[ctx.p_embed], tp));
    w.device_bytes += static_cast<double>(mc.final_norm_bytes[ctx.p_embed]);
  }
  return w;
}

// KV cache: every sequence of the replica at full length, in whole blocks. A finished
// sequence holds its prompt and every output token but the last, which is never fed
// back (the step that samples it writes the previous token's KV; the executor's cache,
// measured, and the engines' slots for computed tokens alike).
int64_t stage_kv_bytes(const PlanContext& ctx, const Stage& s) {
  const plan::Plan& p = ctx.plan;
  const ModelCosts& mc = ctx.mc;
  const int64_t block = p.kv_block_tokens;
  const int64_t full =
      round_up(core::checked_add(p.workload.input_len, std::max<int64_t>(p.workload.output_len - 1, 0)), block);
  double kv = 0, other = 0;  // other: bytes per sequence outside the KV dtype (indexer keys, linear state)
  for (size_t c = 0; c < mc.classes.size(); ++c) {
    const auto& lc = mc.classes[c];
    const auto n = static_cast<double>(s.class_counts[c]);
    other += n * (static_cast<double>(lc.state_bytes_per_seq) / static_cast<double>(p.attention.tp) +
                  static_cast<double>(lc.index_bytes_per_token) * static_cast<double>(full));
    if (s.class_counts[c] == 0 || lc.kv_elems_per_token == 0) continue;
    // A sliding layer keeps its window plus the block being filled.
    const int64_t tokens = lc.window > 0 ? std::min(full, round_up(lc.window, block) + block) : full;
    const double elems =
        mc.mla ? static_cast<double>(lc.kv_elems_per_token) : static_cast<double>(lc.kv_elems_per_token) * ctx.kv_frac;
    kv += static_cast<double>(s.class_counts[c]) * elems * static_cast<double>(tokens);
  }
  // plan::check_workload_sizes bounds this; a miss throws instead of wrapping round.
  return core::checked_int64(kv * static_cast<double>(core::checked_mul(ctx.seqs_per_replica, ctx.kv_elem_bytes)) +
                             other * static_cast<double>(ctx.seqs_per_replica));
}

// Tokens of the largest step (a prefill chunk) of a replica.
int64_t largest_step_tokens(const PlanContext& ctx) {
  const plan::Plan& p = ctx.plan;
  const int64_t new_tokens =
      ctx.seqs_per_replica *
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(p.workload.input_len) *
                                                          (1 - p.workload.prefix_hit_rate))));
  return std::min(new_tokens, p.prefill_chunk_tokens);
}

// The engines' W8A8 scratch of one FP8 GEMM call (cuda/backend.cpp `w8a8_linear`,
// plan/cuda_staging.h), the larger of the MLP's two shapes (hidden size in and widest
// intermediate on this rank out, and back): the rows padded to cuBLASLt's multiple, the
// input a byte an element with a float32 scale per 128 columns, and the padded float32
// product when the rows were padded (the weights' block scales, a few kB, not counted).
int64_t cuda_w8a8_staging_bytes(const PlanContext& ctx, int64_t step_tokens) {
  const int64_t hidden = ctx.mc.hidden, ffn = ceil_div(ctx.mc.max_ffn_width, ctx.plan.attention.tp);
  const int64_t rows = round_up(step_tokens, plan::kCudaW8a8RowMultiple);
  const auto call = [&](int64_t in, int64_t out) {
    const int64_t input = in + ceil_div(in, plan::kCudaW8a8Block) * kFloatBytes;
    return core::checked_mul(rows, rows != step_tokens ? input + out * kFloatBytes : input);
  };
  return std::max(call(hidden, ffn), call(ffn, hidden));
}

// What DayZero's CUDA executor holds in a step beyond the activations an engine holds
// (cuda/backend.cpp linear, plan/cuda_staging.h): the BF16 copy of each GEMM's float32
// input, kept while the input lives (at the MLP's down projection the normed hidden
// state's and the gated product's), cuBLASLt's workspace, and at more rows than the
// FP8 GEMV takes the largest FP8 matrix of the stage widened to BF16 for the call, or
// under W8A8 (cuda_w8a8_staging_bytes) the widest input quantized.
int64_t cuda_executor_staging_bytes(const PlanContext& ctx, const Stage& s, int64_t step_tokens) {
  const ModelCosts& mc = ctx.mc;
  const int64_t tp = ctx.plan.attention.tp, moe_tp = ctx.plan.moe.tp;
  int64_t bytes = core::checked_add(
      plan::kCudaBlasWorkspaceBytes,
      core::checked_mul(core::checked_mul(step_tokens, mc.hidden + ceil_div(mc.max_ffn_width, tp)), kBf16Bytes));
  if (step_tokens <= plan::kCudaFp8GemvRows) return bytes;
  const auto fp8 = [&](size_t p) { return mc.gemm_dtype[p] == topology::ComputeDtype::fp8; };
  if (ctx.cuda_fp8_block_gemm == plan::Fp8BlockGemm::w8a8 &&
      (fp8(ctx.p_attn) || fp8(ctx.p_dense) || fp8(ctx.p_experts)))
    return core::checked_add(bytes, cuda_w8a8_staging_bytes(ctx, step_tokens));
  int64_t widest = 0;  // elements
  for (size_t c = 0; c < mc.classes.size(); ++c) {
    if (s.class_counts[c] == 0) continue;
    const auto& m = mc.classes[c].largest_matrix_elems;
    if (fp8(ctx.p_attn))
      widest = std::max({widest, ceil_div(m[idx(WeightClass::attn_sharded)], tp),
                         static_cast<int64_t>(static_cast<double>(m[idx(WeightClass::attn_kv)]) * ctx.kv_frac),
                         m[idx(WeightClass::attn_replicated)]});
    if (fp8(ctx.p_dense))
      widest = std::max(
          {widest, ceil_div(m[idx(WeightClass::dense_mlp)], tp), ceil_div(m[idx(WeightClass::shared_experts)], tp)});
    if (mc.classes[c].moe && fp8(ctx.p_experts))
      widest = std::max(widest, ceil_div(m[idx(WeightClass::expert)], moe_tp));
  }
  return core::checked_add(bytes, core::checked_mul(widest, kBf16Bytes));
}

// The activations and workspace of a step of `step_tokens` (the residual stream,
// the normed input and one op's output, and at the MLP's activation the gate and up
// projections with the gated product beside them: 3 x the widest intermediate, as
// vLLM's fused gate_up [T, 2I] and SiluAndMul's [T, I] or the executor's three
// tensors hold; plus FP32 logits of `logit_rows` sequences on the last stage), the
// communication buffers (one NCCL
// communicator per group the rank is in, and MoE dispatch / combine buffers for the
// step's routed copies) and the runtime's overhead.
void step_memory(const PlanContext& ctx, const Stage& s, int64_t step_tokens, int64_t logit_rows, RankMemory& r) {
  const plan::Plan& p = ctx.plan;
  const ModelCosts& mc = ctx.mc;
  const int64_t tp = p.attention.tp, ep = p.moe.ep, moe_tp = p.moe.tp;
  using core::checked_add;
  using core::checked_mul;
  const int64_t width = 3 * mc.hidden + ceil_div(3 * mc.max_ffn_width, tp);
  r.activation_bytes =
      checked_add(checked_mul(checked_mul(step_tokens, width), ctx.act_bytes),
                  s.last ? checked_mul(checked_mul(logit_rows, ceil_div(mc.vocab, tp)), kLogitBytes) : 0);
  if (ctx.cuda_executor)
    r.activation_bytes = checked_add(r.activation_bytes, cuda_executor_staging_bytes(ctx, s, step_tokens));
  int64_t comms = 0;
  if (tp > 1) ++comms;
  if (ep > 1) ++comms;
  if (moe_tp > 1 && mc.experts > 0) ++comms;
  if (p.pp > 1) ++comms;
  r.buffer_bytes = checked_add(comms * ctx.comm_buffer_bytes, ctx.comm_library_bytes);
  if (ep > 1)
    r.buffer_bytes = checked_add(
        r.buffer_bytes,
        checked_mul(checked_mul(checked_mul(2 * ceil_div(step_tokens, tp), mc.top_k), mc.hidden), ctx.act_bytes));
  r.overhead_bytes = ctx.runtime_overhead_bytes;
}

// What a token (and a sequence, for linear layers) costs in the KV cache of one rank
// of the stage's layers.
void add_token_bytes(const PlanContext& ctx, const Stage& s, KvBudget& b) {
  const ModelCosts& mc = ctx.mc;
  for (size_t c = 0; c < mc.classes.size(); ++c) {
    const auto& lc = mc.classes[c];
    const double elems =
        mc.mla ? static_cast<double>(lc.kv_elems_per_token) : static_cast<double>(lc.kv_elems_per_token) * ctx.kv_frac;
    const auto n = static_cast<double>(s.class_counts[c]);
    // Indexer keys are replicated over TP like the MLA latent; a linear layer's state is split by heads.
    const double bytes =
        n * (elems * static_cast<double>(ctx.kv_elem_bytes) + static_cast<double>(lc.index_bytes_per_token));
    b.state_bytes_per_seq +=
        n * static_cast<double>(lc.state_bytes_per_seq) / static_cast<double>(ctx.plan.attention.tp);
    if (lc.window > 0) {
      b.sliding_bytes_per_token += bytes;
      b.window = std::max(b.window, lc.window);
    } else {
      b.full_bytes_per_token += bytes;
    }
  }
}

}  // namespace

HeldStages held_stages(const PlanContext& ctx, const Stage& s) {
  HeldStages held;
  held.stages[held.n++] = &s;
  if (s.last && ctx.draft) held.stages[held.n++] = &*ctx.draft;
  return held;
}

RankMemory stage_memory(const PlanContext& ctx, const Stage& s, double capacity_bytes) {
  RankMemory r;
  r.stage = s.index;
  r.rank = s.first_rank;
  r.capacity_bytes = static_cast<int64_t>(capacity_bytes);
  double device = 0, host = 0;
  for (const Stage* held : held_stages(ctx, s)) {
    const StageWeights w = stage_weights(ctx, *held);
    device += w.device_bytes;
    host += w.host_bytes;
    r.kv_cache_bytes = core::checked_add(r.kv_cache_bytes, stage_kv_bytes(ctx, *held));
  }
  r.weights_bytes = core::checked_int64(device);
  r.host_bytes = core::checked_int64(host);
  step_memory(ctx, s, largest_step_tokens(ctx), ctx.seqs_per_replica, r);
  r.total_bytes =
      core::checked_add(core::checked_add(core::checked_add(r.weights_bytes, r.kv_cache_bytes), r.activation_bytes),
                        core::checked_add(r.buffer_bytes, r.overhead_bytes));
  return r;
}

namespace {

// The bytes an engine sizing its memory by `rule` leaves for KV on a rank of stage
// `s` that holds `weights_bytes`: its share of the device (or of what is free) less
// the weights, the largest step's activations it profiles, the communication buffers
// and the runtime.
double stage_kv_free_bytes(const PlanContext& ctx, const Stage& s, int64_t weights_bytes, double capacity_bytes,
                           const KvMemoryRule& rule) {
  RankMemory r;
  r.weights_bytes = weights_bytes;
  step_memory(ctx, s, rule.step_tokens, rule.logit_rows, r);
  const double used = static_cast<double>(r.weights_bytes + r.activation_bytes + r.buffer_bytes + r.overhead_bytes);
  return std::max(0.0, rule.share_of_free ? rule.memory_fraction * (capacity_bytes - used)
                                          : rule.memory_fraction * capacity_bytes - used);
}

// Prediction::engine_kv of a plan whose stages hold `stage_mem`: the stage whose KV
// room is shortest against its batch's KV cache.
EngineKvCheck engine_kv_check(const PlanContext& ctx, const std::vector<RankMemory>& stage_mem, double capacity_bytes,
                              const KvMemoryRule& rule) {
  EngineKvCheck best;
  best.checked = true;
  best.memory_fraction = rule.memory_fraction;
  best.share_of_free = rule.share_of_free;
  double best_margin = 1e300;
  for (size_t i = 0; i < ctx.stages.size(); ++i) {
    if (i > 0 && alike(ctx.stages[i - 1], ctx.stages[i])) continue;
    const double free = stage_kv_free_bytes(ctx, ctx.stages[i], stage_mem[i].weights_bytes, capacity_bytes, rule);
    const auto needed = static_cast<double>(stage_mem[i].kv_cache_bytes);
    const double margin = needed > 0 ? free / needed : 1e300;
    if (margin >= best_margin) continue;
    best_margin = margin;
    best.stage = ctx.stages[i].index;
    best.free_bytes = static_cast<int64_t>(free);
    best.needed_bytes = stage_mem[i].kv_cache_bytes;
    best.fits = free >= needed;
  }
  return best;
}

}  // namespace

KvBudget kv_budget(const PlanContext& ctx, const double capacity_bytes, const KvMemoryRule& rule) {
  KvBudget best;
  double best_tokens = -1;
  for (const auto& s : ctx.stages) {
    KvBudget b;
    b.block_tokens = ctx.plan.kv_block_tokens;
    int64_t weights_bytes = 0;
    for (const Stage* held : held_stages(ctx, s))
      weights_bytes += static_cast<int64_t>(stage_weights(ctx, *held).device_bytes);
    b.free_bytes = stage_kv_free_bytes(ctx, s, weights_bytes, capacity_bytes, rule);
    for (const Stage* held : held_stages(ctx, s)) add_token_bytes(ctx, *held, b);
    const double per_token = b.full_bytes_per_token + b.sliding_bytes_per_token;
    const double tokens = per_token > 0 ? b.free_bytes / per_token : b.state_bytes_per_seq > 0 ? 1e18 : 1e300;
    if (best_tokens < 0 || tokens < best_tokens) {
      best_tokens = tokens;
      best = b;
    }
  }
  return best;
}

}  // namespace dayzero::simulate::detail

namespace dayzero::simulate {

double KvBudget::sequence_bytes(int64_t tokens) const {
  const int64_t blocks = core::ceil_div(std::max<int64_t>(tokens, 1), block_tokens);
  const int64_t full = blocks * block_tokens;
  const int64_t sliding = window > 0 ? std::min(full, core::round_up(window, block_tokens) + block_tokens) : full;
  return static_cast<double>(full) * full_bytes_per_token + static_cast<double>(sliding) * sliding_bytes_per_token +
         state_bytes_per_seq;
}

int64_t KvBudget::capacity_tokens(int64_t sequence_tokens) const {
  const double per_seq = sequence_bytes(sequence_tokens);
  if (per_seq <= 0) return 0;
  return static_cast<int64_t>(std::floor(free_bytes / per_seq)) * sequence_tokens;
}

}  // namespace dayzero::simulate

namespace dayzero::simulate::detail {

Prediction plan_memory(const PlanContext& ctx, const topology::Cluster& cluster, bool per_rank,
                       const KvMemoryRule* engine_memory) {
  const plan::Plan& p = ctx.plan;
  Prediction pred;
  // One representative per stage, expanded to every rank on request.
  std::vector<RankMemory> stage_mem;
  stage_mem.reserve(ctx.stages.size());
  for (size_t i = 0; i < ctx.stages.size(); ++i) {
    const Stage& s = ctx.stages[i];
    // A stage with the layers and ends of the one before holds what it holds (a deep
    // pipeline's middle stages are alike).
    if (i > 0 && alike(ctx.stages[i - 1], s)) {
      RankMemory m = stage_mem.back();
      m.stage = s.index;
      m.rank = s.first_rank;
      stage_mem.push_back(std::move(m));
    } else {
      stage_mem.push_back(stage_memory(ctx, s, cluster.device_spec().mem_bytes));
    }
  }
  pred.fits = std::all_of(stage_mem.begin(), stage_mem.end(), [](const RankMemory& r) { return r.fits(); });
  if (engine_memory) {
    pred.engine_kv = engine_kv_check(ctx, stage_mem, cluster.device_spec().mem_bytes, *engine_memory);
    pred.fits = pred.fits && pred.engine_kv.fits;
  }
  // Offloaded experts live in the host memory of each rank's node.
  const double host_capacity = cluster.config().host.mem_bytes;
  if (host_capacity > 0) {
    std::vector<double> per_node(cluster.num_nodes(), 0.0);
    if (p.devices.empty()) {  // rank r on device r: each stage's ranks fill whole runs of nodes
      const int64_t per = cluster.devices_per_node(), rps = p.ranks_per_stage();
      for (int st = 0; st < p.pp; ++st) {
        const auto bytes = static_cast<double>(stage_mem[static_cast<size_t>(st)].host_bytes);
        if (bytes == 0) continue;
        for (int64_t r = st * rps, end = (st + 1) * rps; r < end;) {
          const int64_t node = r / per, next = std::min(end, (node + 1) * per);
          per_node[static_cast<size_t>(node)] += static_cast<double>(next - r) * bytes;
          r = next;
        }
      }
    } else {
      for (int r = 0; r < p.world_size(); ++r)
        per_node[cluster.node_of(p.device_of(r))] +=
            static_cast<double>(stage_mem[static_cast<size_t>(p.stage_of(r))].host_bytes);
    }
    pred.host_bytes_per_node = *std::max_element(per_node.begin(), per_node.end());
    pred.host_fits = pred.host_bytes_per_node <= host_capacity;
    pred.fits = pred.fits && pred.host_fits;
  }
  const auto fullest =
      std::max_element(stage_mem.begin(), stage_mem.end(), [](const RankMemory& a, const RankMemory& b) {
        return static_cast<double>(a.total_bytes) / static_cast<double>(a.capacity_bytes) <
               static_cast<double>(b.total_bytes) / static_cast<double>(b.capacity_bytes);
      });
  pred.fullest_rank = fullest->rank;
  if (per_rank) {
    pred.ranks.reserve(static_cast<size_t>(p.world_size()));
    for (int r = 0; r < p.world_size(); ++r) {
      RankMemory m = stage_mem[static_cast<size_t>(p.stage_of(r))];
      m.rank = r;
      m.device = p.device_of(r);
      m.device_name = cluster.device_name(m.device);
      pred.ranks.push_back(std::move(m));
    }
  } else {
    for (auto& m : stage_mem) m.device = p.device_of(m.rank);
    pred.ranks = std::move(stage_mem);
  }
  return pred;
}

}  // namespace dayzero::simulate::detail
