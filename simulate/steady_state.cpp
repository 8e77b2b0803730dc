// The serving formula: which steps TTFT and TPOT are, and the steady-state
// throughput of a plan serving `batch` sequences. One request's prefill and one
// decode step, run one after the other (no continuous batching): the seam the
// request-level serving simulation replaces.
#include <algorithm>
#include <cmath>

#include "simulate/sim_internal.h"

namespace dayzero::simulate::detail {

namespace {

int64_t cached_prefix(const plan::Workload& w) {
  return static_cast<int64_t>(std::floor(static_cast<double>(w.input_len) * w.prefix_hit_rate));
}
int64_t new_tokens(const plan::Workload& w) { return std::max<int64_t>(1, w.input_len - cached_prefix(w)); }

}  // namespace

int64_t prompts_per_step(const plan::Plan& p) {
  const int64_t fit = p.prefill_chunk_tokens / new_tokens(p.workload);
  int64_t k = 1;
  while (k * 2 <= fit) k *= 2;
  return k;
}

StepInputs prefill_inputs(const plan::Plan& p, int64_t prompts) {
  const int64_t new_per_seq = new_tokens(p.workload);
  StepInputs in;
  in.prefill = true;
  in.seqs = std::max<int64_t>(1, prompts);
  in.new_per_seq = new_per_seq;
  in.prefix_per_seq = cached_prefix(p.workload);
  if (in.seqs > 1) {  // whole prompts, one step (prompts_per_step: they fit the budget)
    in.tokens = in.seqs * new_per_seq;
    return in;
  }
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
  // every sequence is prefilled once, each prompt charged its share of a step that
  // computes as many as the token budget holds (Prediction::prompt_s).
  const double out = static_cast<double>(p.workload.output_len);
  const double seqs = static_cast<double>(seqs_per_replica);
  const double prompt_s = pred.prompt_share_s();
  const double cycle_s = out * step_per_token_s + seqs * prompt_s;
  pred.throughput_tokens_per_s = seqs * p.attention.dp * out / cycle_s;
  pred.throughput_tokens_per_s_per_device = pred.throughput_tokens_per_s / p.world_size();
  // While a sequence decodes, the replica's other seqs - 1 sequences each have a
  // prompt computed (inside the decode steps with chunked prefill, or between them):
  // that time is the sequence's too, so TPOT = step + (seqs - 1) x prompt / output_len,
  // and a request's latency, TTFT + output_len x TPOT, is about the cycle (Little's
  // law: seqs in flight, seqs / cycle requests/s). One sequence alone: the step.
  pred.tpot_s = step_per_token_s + (seqs - 1) * prompt_s / out;
  pred.request_latency_s = pred.ttft_s + out * pred.tpot_s;
}

}  // namespace dayzero::simulate::detail
