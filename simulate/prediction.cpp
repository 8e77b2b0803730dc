#include "simulate/prediction.h"

#include <nlohmann/json.hpp>

#include "core/enum_names.h"

namespace dayzero::simulate {

std::string_view cost_kind_name(CostKind k) {
  switch (k) {
    case CostKind::attention: return "attention";
    case CostKind::draft: return "draft";
    case CostKind::elementwise: return "elementwise";
    case CostKind::embedding: return "embedding";
    case CostKind::ep_alltoall: return "ep_alltoall";
    case CostKind::experts: return "experts";
    case CostKind::gemm: return "gemm";
    case CostKind::kernel_overhead: return "kernel_overhead";
    case CostKind::lm_head: return "lm_head";
    case CostKind::offload_fetch: return "offload_fetch";
    case CostKind::pp_send: return "pp_send";
    case CostKind::router: return "router";
    case CostKind::tp_allreduce: return "tp_allreduce";
  }
  return "?";
}

std::string_view time_figure_name(TimeFigure f) {
  switch (f) {
    case TimeFigure::gemm_compute: return "gemm_compute";
    case TimeFigure::gemm_memory: return "gemm_memory";
    case TimeFigure::attention_compute: return "attention_compute";
    case TimeFigure::attention_memory: return "attention_memory";
    case TimeFigure::elementwise_memory: return "elementwise_memory";
    case TimeFigure::kernel_overhead: return "kernel_overhead";
    case TimeFigure::communication: return "communication";
    case TimeFigure::host_transfer: return "host_transfer";
  }
  return "?";
}

std::optional<TimeFigure> parse_time_figure(std::string_view s) {
  return core::parse_enum(s, kAllTimeFigures, time_figure_name);
}

void to_json(nlohmann::json& j, const RankMemory& r) {
  j = {{"rank", r.rank},
       {"stage", r.stage},
       {"device", r.device_name},
       {"device_index", r.device},
       {"weights_bytes", r.weights_bytes},
       {"kv_cache_bytes", r.kv_cache_bytes},
       {"activation_bytes", r.activation_bytes},
       {"buffer_bytes", r.buffer_bytes},
       {"overhead_bytes", r.overhead_bytes},
       {"total_bytes", r.total_bytes},
       {"capacity_bytes", r.capacity_bytes},
       {"host_bytes", r.host_bytes},
       {"fits", r.fits()}};
}

void to_json(nlohmann::json& j, const StepTime& s) {
  nlohmann::json by_kind = nlohmann::json::object();
  for (const auto& [k, v] : s.by_kind_s) by_kind[std::string(cost_kind_name(k))] = v;
  j = {{"time_s", s.time_s},
       {"by_kind_s", by_kind},
       {"bubble_s", s.bubble_s},
       {"micro_batches", s.micro_batches},
       {"tokens_per_replica", s.tokens}};
}

void to_json(nlohmann::json& j, const Prediction& p) {
  j = {{"fits", p.fits},
       {"host_fits", p.host_fits},
       {"host_bytes_per_node", p.host_bytes_per_node},
       {"ttft_s", p.ttft_s},
       {"tpot_s", p.tpot_s},
       {"throughput_tokens_per_s", p.throughput_tokens_per_s},
       {"throughput_tokens_per_s_per_device", p.throughput_tokens_per_s_per_device},
       {"request_latency_s", p.request_latency_s},
       {"fullest_rank", p.fullest_rank},
       {"fullest_reason", p.fullest_reason},
       {"prefill", p.prefill},
       {"prompts_per_step", p.prompts_per_step},
       {"prompt_s", p.prompt_s},
       {"decode", p.decode},
       {"ranks", p.ranks}};
  if (p.engine_kv.checked)
    j["engine_kv"] = {{"fits", p.engine_kv.fits},
                      {"memory_fraction", p.engine_kv.memory_fraction},
                      {"share_of_free", p.engine_kv.share_of_free},
                      {"stage", p.engine_kv.stage},
                      {"free_bytes", p.engine_kv.free_bytes},
                      {"needed_bytes", p.engine_kv.needed_bytes}};
}

}  // namespace dayzero::simulate
