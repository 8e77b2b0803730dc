#include "plan/plan.h"

#include "core/enum_names.h"

namespace dayzero::plan {

std::string_view kv_dtype_name(KvDtype d) {
  switch (d) {
    case KvDtype::bf16: return "bf16";
    case KvDtype::fp8: return "fp8";
    case KvDtype::fp32: return "fp32";
  }
  return "?";
}

std::optional<KvDtype> parse_kv_dtype(std::string_view s) { return core::parse_enum(s, kPlanKvDtypes, kv_dtype_name); }

int64_t kv_elem_bytes(KvDtype d) {
  switch (d) {
    case KvDtype::bf16: return 2;
    case KvDtype::fp8: return 1;
    case KvDtype::fp32: return 4;
  }
  return 2;
}

std::string_view activation_dtype_name(ActivationDtype d) {
  switch (d) {
    case ActivationDtype::bf16: return "bf16";
    case ActivationDtype::fp16: return "fp16";
    case ActivationDtype::fp32: return "fp32";
  }
  return "?";
}

std::optional<ActivationDtype> parse_activation_dtype(std::string_view s) {
  return core::parse_enum(s, kPlanActivationDtypes, activation_dtype_name);
}

int64_t activation_elem_bytes(ActivationDtype d) {
  switch (d) {
    case ActivationDtype::bf16:
    case ActivationDtype::fp16: return 2;
    case ActivationDtype::fp32: return 4;
  }
  return 2;
}

std::vector<int> RankRange::ranks() const {
  std::vector<int> g(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) g[static_cast<size_t>(i)] = (*this)[i];
  return g;
}

RankRange Plan::attn_tp_ranks(int rank) const { return {rank - attn_tp_index(rank), 1, attention.tp}; }

RankRange Plan::moe_tp_ranks(int rank) const { return {rank - moe_tp_index(rank), 1, moe.tp}; }

RankRange Plan::ep_ranks(int rank) const {
  const int stage_base = stage_of(rank) * ranks_per_stage();
  const int offset = moe_dp_index(rank) * moe.tp * moe.ep + moe_tp_index(rank);
  return {stage_base + offset, moe.tp, moe.ep};
}

int64_t Plan::devices_used() const {
  if (!disaggregated.on()) return world_size();
  const WorkerLayout& l = disaggregated.prefill;
  return int64_t{disaggregated.prefill_workers} * l.pp * l.attention.tp * l.attention.dp +
         int64_t{disaggregated.decode_workers} * world_size();
}

Plan Plan::prefill_worker() const {
  Plan w = decode_worker();
  if (!disaggregated.on()) return w;
  const WorkerLayout& l = disaggregated.prefill;
  if (l.pp != pp) w.stage_layers.clear();  // the decode worker's split is for its own stages
  w.pp = l.pp;
  w.attention = l.attention;
  w.moe = l.moe;
  w.workload.batch = l.batch;
  w.speculative = {};
  return w;
}

Plan Plan::decode_worker() const {
  Plan w = *this;
  w.disaggregated = {};
  return w;
}

std::vector<int64_t> Plan::layers_per_stage(int64_t num_layers) const {
  if (!stage_layers.empty()) return stage_layers;
  std::vector<int64_t> out(static_cast<size_t>(pp), num_layers / pp);
  for (int64_t i = 0; i < num_layers % pp; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

}  // namespace dayzero::plan
