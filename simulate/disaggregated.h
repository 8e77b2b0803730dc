#pragma once
// The steady state of a disaggregated plan (plan::Disaggregation): a prefill pool and
// a decode pool, each worker simulated as a plan of its own, put together.
//
// - A prefill worker computes one prompt per attention-DP replica in prefill.ttft_s
//   (its Prediction's TTFT), so the pool serves
//       prefill_rate = prefill_workers x dp / ttft_s   requests/s
//   (no pipelining of successive prompts through PP stages: a step of one long
//   prompt's chunk has nothing to overlap with).
// - A decode worker holds its batch and emits one token per sequence every decode
//   step (tpot_s = its decode step over the tokens a step emits: no prompts there);
//   a request stays output_len tokens, so the pool serves
//       decode_rate = decode_workers x batch / (output_len x tpot_s)   requests/s.
// - With N = decode_workers x batch requests in flight, the deployment serves
//   X = min(prefill_rate, decode_rate) requests/s, output_len tokens each, over both
//   pools' devices. TTFT is at least the prompt, one KV transfer (kv_transfer_s) and
//   the decode worker's first step, which streams the first token; when the prefill
//   pool is the slower one, the requests queue in front of it and, by Little's law
//   (N = X x (TTFT + output_len x TPOT)), TTFT = N / X - output_len x TPOT. TPOT is
//   the decode step's at the worker's batch (an upper bound when the prefill pool
//   starves it).

#include <cstdint>

#include "plan/plan.h"
#include "simulate/prediction.h"
#include "topology/cluster.h"

namespace dayzero::simulate {

// The time to move `bytes` (one decode rank's shard of a request's KV cache: every
// decode rank receives its own at once) from the prefill pool's first device to the
// decode pool's first device, over the cluster's path between them (NVLink inside a
// node or NVLink domain, the NICs across).
double kv_transfer_s(const topology::Cluster& c, const plan::Plan& p, double bytes);

// The rates above, for the search to pair workers by (search/disaggregated.h):
// prompts per second of `replicas` prefill replicas, each prompt taking its share of
// a step (prefill.prompt_s: as many prompts as the token budget holds); a decode
// worker's step per output token (its own step over the tokens a step emits: no
// prompts, which its single-pool TPOT counts); requests per second of `in_flight`
// sequences decoding output_len tokens each at that step.
double prefill_prompts_per_s(int64_t replicas, const Prediction& prefill);
double decode_step_per_token_s(const plan::Plan& p, const Prediction& decode);
double decode_requests_per_s(double in_flight, const plan::Plan& p, const Prediction& decode);

// The deployment's latencies and throughput from its workers' (the formulas above;
// all 0 when a worker was not timed). combine_disaggregated's figures, without the
// ranks: what a search needs to tell whether the deployment is worth keeping.
struct DisaggregatedFigures {
  double ttft_s = 0, tpot_s = 0, request_latency_s = 0;
  double throughput_tokens_per_s = 0, throughput_tokens_per_s_per_device = 0;
};
DisaggregatedFigures disaggregated_figures(const plan::Plan& p, const Prediction& prefill, const Prediction& decode,
                                           double transfer_s);

// The deployment's prediction from its workers' (p must be disaggregated). Ranks: one
// prefill worker's, then one decode worker's, renumbered in that order on the devices
// the pools take first; it fits when both workers fit.
Prediction combine_disaggregated(const plan::Plan& p, const Prediction& prefill, const Prediction& decode,
                                 double transfer_s);

}  // namespace dayzero::simulate
