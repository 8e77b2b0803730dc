// The serving formula: which steps TTFT and TPOT are, and the steady-state
// throughput of a plan serving `batch` sequences. One request's prefill and one
// decode step, run one after the other (no continuous batching): the seam the
// request-level serving simulation replaces.
#include <algorithm>
#include <cmath>

#include "simulate/sim_internal.h"

namespace dayzero::simulate::detail {

StepInputs prefill_inputs(const plan::Plan& p) {
  const auto& w = p.workload;
  const int64_t prefix = static_cast<int64_t>(std::floor(static_cast<double>(w.input_len) * w.prefix_hit_rate));
  const int64_t new_per_seq = std::max<int64_t>(1, w.input_len - prefix);
  StepInputs in;
  in.prefill = true;
  in.seqs = 1;
  in.new_per_seq = new_per_seq;
  in.prefix_per_seq = prefix;
  in.chunks = (new_per_seq + p.prefill_chunk_tokens - 1) / p.prefill_chunk_tokens;
  in.tokens = (new_per_seq + in.chunks - 1) / in.chunks;
  return in;
}

std::pair<StepInputs, int> decode_inputs(const plan::Plan& p, int64_t seqs_per_replica) {
  const int micro = static_cast<int>(std::min<int64_t>(p.pp, seqs_per_replica));
  StepInputs in;
  in.seqs = (seqs_per_replica + micro - 1) / micro;
  in.tokens = in.seqs;
  in.decode_ctx = static_cast<double>(p.workload.input_len) + static_cast<double>(p.workload.output_len) / 2;
  return {in, micro};
}

void steady_state(const plan::Plan& p, int64_t seqs_per_replica, Prediction& pred) {
  pred.ttft_s = pred.prefill.time_s;
  // With speculative decoding a decode step (verify and drafts) emits on average
  // expected_tokens_per_step tokens per sequence.
  const double step_per_token_s = pred.decode.time_s / p.speculative.expected_tokens_per_step();
  // A replica's `seqs` requests each need a prefill and output_len decode steps,
  // run one after the other (no overlap of prefill and decode): a cycle in which
  // every sequence is prefilled once.
  const double out = static_cast<double>(p.workload.output_len);
  const double seqs = static_cast<double>(seqs_per_replica);
  const double cycle_s = out * step_per_token_s + seqs * pred.ttft_s;
  pred.throughput_tokens_per_s = seqs * p.attention.dp * out / cycle_s;
  pred.throughput_tokens_per_s_per_device = pred.throughput_tokens_per_s / p.world_size();
  // While a sequence decodes, the replica's other seqs - 1 sequences each have a
  // prompt computed (inside the decode steps with chunked prefill, or between them):
  // that time is the sequence's too, so TPOT = step + (seqs - 1) x TTFT / output_len,
  // and a request's latency, TTFT + output_len x TPOT, is the cycle (Little's law:
  // seqs in flight, seqs / cycle requests/s). One sequence alone: the step.
  pred.tpot_s = step_per_token_s + (seqs - 1) * pred.ttft_s / out;
  pred.request_latency_s = pred.ttft_s + out * pred.tpot_s;
}

}  // namespace dayzero::simulate::detail
