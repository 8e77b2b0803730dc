#pragma once
// A latency split into what it is made of (the serving simulation's output beside
// each mean, and the features `calibrate --bench` fits).

#include "simulate/time_figure.h"

namespace dayzero::serve {

// Where a latency's seconds go: the step time by what sets it (simulate/time_figure.h),
// the engine's per-step overhead, and the number of steps — the features that
// `calibrate --bench` fits efficiencies and engine overheads to (serve/serving_fit.h).
// A disaggregated request's TTFT: the prefill replica's steps from its arrival to its
// prompt's end, the KV transfer, and the decode replica's steps to its first token.
// Closed loop: exactly the latency (requests arrive at step boundaries); open loop:
// from the first step that starts after the arrival (idle time and the rest of a
// running step are left out).
struct LatencyParts {
  simulate::FigureTimes figure_s{};
  double step_overhead_s = 0;     // the engine's host time per step not hidden behind the GPU's
  double request_overhead_s = 0;  // TTFT only: the engine's request overhead, both terms
  double kv_transfer_s = 0;       // TTFT only, disaggregated: the KV cache moved between the pools (link model)
  double handoff_s = 0;           // TTFT only, disaggregated: the engine's handoff time (EngineProfile::handoff_s)
  double handoffs = 0;            // TTFT only: handoffs between the pools in it (1 disaggregated; handoff_s's feature)
  double inflight = 0;            // TTFT only: requests in flight at arrival (the second term's feature)
  double steps = 0;
  // TTFT only: the engines that took the request up, each after its admission delay
  // (EngineProfile::admission_delay_steps): the decode pool's too when it was handed off.
  double admissions() const { return 1 + handoffs; }
  double total_s() const;
  LatencyParts& operator+=(const LatencyParts& o);
  LatencyParts operator-(const LatencyParts& o) const;
  LatencyParts operator*(double k) const;
};

}  // namespace dayzero::serve
