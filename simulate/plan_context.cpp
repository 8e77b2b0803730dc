// A plan's context for the step model (sim_internal.h): its precisions, memory
// constants, per-stage layer counts and the draft's stage, computed once per plan.
#include "simulate/sim_internal.h"

namespace dayzero::simulate {

namespace {

size_t precision_index(model::WeightPrecision p) { return static_cast<size_t>(p); }

// The layer class speculative decoding drafts with: the model's MTP layer, or for an
// EAGLE head one decoder layer of the target's shape with full attention (EAGLE-1 and
// EAGLE-3 heads are one such layer); -1 when the plan does not draft.
int draft_class_of(const plan::SpeculativeDecoding& spec, const ModelCosts& mc) {
  if (!spec.on()) return -1;
  switch (spec.method) {
    case plan::SpecMethod::none: return -1;
    case plan::SpecMethod::mtp: return mc.mtp_class;
    case plan::SpecMethod::eagle: break;
  }
  for (int c : mc.class_of_layer) {
    const auto& lc = mc.classes[static_cast<size_t>(c)];
    if (!lc.linear && lc.window == 0) return c;
  }
  return mc.class_of_layer.empty() ? -1 : mc.class_of_layer.front();
}

}  // namespace

namespace detail {

PlanContext make_context(const plan::Plan& p, const ModelCosts& mc, const Efficiency& eff, const Routing& r,
                         const topology::DeviceSpec& device, bool cuda_executor, plan::Fp8BlockGemm cuda_fp8_block_gemm,
                         EngineKernels kernels) {
  PlanContext ctx(p, mc, eff, r);
  ctx.separate_activation_quant = kernels.separate_activation_quant;
  ctx.runtime_overhead_bytes = device.runtime_overhead_bytes.value_or(kRuntimeOverheadBytes);
  ctx.cuda_executor = cuda_executor;
  ctx.cuda_fp8_block_gemm = cuda_fp8_block_gemm;
  if (cuda_executor && device.executor_runtime) ctx.runtime_overhead_bytes = device.executor_runtime->bytes;
  ctx.comm_buffer_bytes = device.comm_buffer_bytes_per_group.value_or(kNcclBytesPerCommunicator);
  const int world = p.world_size();
  if (world > 1)
    ctx.comm_library_bytes =
        (world == 2 ? device.comm_library_bytes_pair : std::nullopt).value_or(device.comm_library_bytes.value_or(0));
  ctx.p_attn = precision_index(p.dtypes.attention);
  ctx.p_dense = precision_index(p.dtypes.dense_mlp);
  ctx.p_experts = precision_index(p.dtypes.experts);
  ctx.p_embed = precision_index(p.dtypes.embedding);
  ctx.kv_elem_bytes = plan::kv_elem_bytes(p.dtypes.kv_cache);
  ctx.act_bytes = plan::activation_elem_bytes(p.dtypes.activations);
  ctx.seqs_per_replica = (p.workload.batch + p.attention.dp - 1) / p.attention.dp;
  ctx.resident_experts = p.offload.resident_experts < 0 ? mc.experts : p.offload.resident_experts;
  const int64_t tp = p.attention.tp;
  // GQA: a rank holds kv_heads / tp heads, or one (replicated) head once tp > kv_heads.
  ctx.kv_frac = (mc.mla || mc.kv_heads == 0)
                    ? 1.0
                    : (mc.kv_heads >= tp ? 1.0 / static_cast<double>(tp) : 1.0 / static_cast<double>(mc.kv_heads));
  const auto per_stage = p.layers_per_stage(static_cast<int64_t>(mc.class_of_layer.size()));
  int64_t layer = 0;
  ctx.stages.reserve(static_cast<size_t>(p.pp));
  for (int s = 0; s < p.pp; ++s) {
    Stage st;
    st.index = s;
    st.first_rank = s * p.ranks_per_stage();
    st.first = s == 0;
    st.last = s == p.pp - 1;
    st.class_counts.assign(mc.classes.size(), 0);
    for (int64_t i = 0; i < per_stage[static_cast<size_t>(s)]; ++i, ++layer)
      ++st.class_counts[static_cast<size_t>(mc.class_of_layer[static_cast<size_t>(layer)])];
    ctx.stages.push_back(std::move(st));
  }
  const int draft_class = draft_class_of(p.speculative, mc);
  if (draft_class >= 0) {
    Stage d = ctx.stages.back();
    d.first = d.last = false;
    d.class_counts.assign(mc.classes.size(), 0);
    d.class_counts[static_cast<size_t>(draft_class)] = 1;
    ctx.draft = std::move(d);
  }
  return ctx;
}

}  // namespace detail

}  // namespace dayzero::simulate
