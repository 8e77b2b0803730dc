#include "simulate/disaggregated.h"

#include <algorithm>

#include "topology/collective_model.h"

namespace dayzero::simulate {

double kv_transfer_s(const topology::Cluster& c, const plan::Plan& p, double bytes) {
  const int64_t first_decode = int64_t{p.disaggregated.prefill_workers} * p.prefill_worker().world_size();
  const topology::DeviceId pair[2] = {0, static_cast<topology::DeviceId>(first_decode)};
  topology::CollectiveModel links(c);
  return links.cost(core::Collective::send_recv, pair, bytes).time_s;
}

double prefill_prompts_per_s(int64_t replicas, const Prediction& prefill) {
  return static_cast<double>(replicas) / prefill.prompt_share_s();
}

double decode_step_per_token_s(const plan::Plan& p, const Prediction& decode) {
  return decode.decode.time_s / p.speculative.expected_tokens_per_step();
}

double decode_requests_per_s(double in_flight, const plan::Plan& p, const Prediction& decode) {
  return in_flight / (static_cast<double>(p.workload.output_len) * decode_step_per_token_s(p, decode));
}

Prediction combine_disaggregated(const plan::Plan& p, const Prediction& prefill, const Prediction& decode,
                                 double transfer_s) {
  const plan::Disaggregation& d = p.disaggregated;
  const plan::WorkerLayout& l = d.prefill;
  Prediction out;
  out.fits = prefill.fits && decode.fits;
  out.host_fits = prefill.host_fits && decode.host_fits;
  out.host_bytes_per_node = std::max(prefill.host_bytes_per_node, decode.host_bytes_per_node);
  // Rank ids (a Prediction may hold one rank per stage, so ids, not positions): the
  // prefill worker's, then the decode worker's after them.
  const int prefill_world = l.pp * l.attention.tp * l.attention.dp;
  const uint32_t first_decode_device = static_cast<uint32_t>(d.prefill_workers * prefill_world);
  out.ranks = prefill.ranks;
  for (RankMemory r : decode.ranks) {
    r.rank += prefill_world;
    r.device += first_decode_device;
    out.ranks.push_back(r);
  }
  const auto fullest_bytes = [](const Prediction& w) {
    int64_t most = 0;
    for (const RankMemory& r : w.ranks) most = std::max(most, r.total_bytes);
    return most;
  };
  const bool decode_fuller = fullest_bytes(decode) > fullest_bytes(prefill);
  out.fullest_rank = decode_fuller ? prefill_world + decode.fullest_rank : prefill.fullest_rank;
  out.fullest_reason = decode_fuller ? decode.fullest_reason : prefill.fullest_reason;
  out.prefill = prefill.prefill;
  out.prompts_per_step = prefill.prompts_per_step;  // the prefill workers'
  out.prompt_s = prefill.prompt_s;
  out.decode = decode.decode;
  const DisaggregatedFigures f = disaggregated_figures(p, prefill, decode, transfer_s);
  out.ttft_s = f.ttft_s;
  out.tpot_s = f.tpot_s;
  out.request_latency_s = f.request_latency_s;
  out.throughput_tokens_per_s = f.throughput_tokens_per_s;
  out.throughput_tokens_per_s_per_device = f.throughput_tokens_per_s_per_device;
  return out;
}

DisaggregatedFigures disaggregated_figures(const plan::Plan& p, const Prediction& prefill, const Prediction& decode,
                                           double transfer_s) {
  DisaggregatedFigures f;
  if (prefill.ttft_s <= 0 || decode.decode.time_s <= 0) return f;  // not timed (does not fit)
  const plan::Disaggregation& d = p.disaggregated;
  const double out_len = static_cast<double>(p.workload.output_len);
  const double in_flight = d.decode_workers * static_cast<double>(p.workload.batch);
  const double prefill_rate = prefill_prompts_per_s(int64_t{d.prefill_workers} * d.prefill.attention.dp, prefill);
  f.tpot_s = decode_step_per_token_s(p, decode);
  const double decode_rate = decode_requests_per_s(in_flight, p, decode);
  const double rate = std::min(prefill_rate, decode_rate);
  f.ttft_s = std::max(prefill.ttft_s + transfer_s + decode.decode.time_s, in_flight / rate - out_len * f.tpot_s);
  f.throughput_tokens_per_s = rate * out_len;
  f.throughput_tokens_per_s_per_device = f.throughput_tokens_per_s / static_cast<double>(p.devices_used());
  f.request_latency_s = f.ttft_s + out_len * f.tpot_s;
  return f;
}

}  // namespace dayzero::simulate
