#include "simulate/prediction.h"

#include <nlohmann/json.hpp>

namespace dayzero::simulate {

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
  j = {{"time_s", s.time_s},
       {"by_kind_s", s.by_kind_s},
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
       {"decode", p.decode},
       {"ranks", p.ranks}};
}

}  // namespace dayzero::simulate
