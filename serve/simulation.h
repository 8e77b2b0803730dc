#pragma once
// The request-level serving simulation: iteration-level continuous batching as the
// engines run it. Each engine step is built by the engine profile's scheduler
// (running sequences, prompt chunks within the token budget, admission while the
// KV cache has room, preemption by recompute when it does not) and costed by the
// step model for exactly the tokens in it (simulate::Simulator::step_time).
//
// One attention-DP replica is simulated, with its share of the clients (the
// busiest: ceil(concurrency / dp), ceil(requests / dp), rate / dp); the plan's
// replicas are symmetric, so the plan's throughput is dp times the replica's.

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "serve/engine.h"
#include "serve/latency_parts.h"
#include "serve/stats.h"
#include "serve/workload.h"
#include "simulate/simulator.h"

namespace dayzero::serve {

// The replica's state after a step.
struct ServePoint {
  double time_s = 0;
  int64_t waiting = 0;  // arrived, not running (queued or preempted)
  int64_t running = 0;
  double kv_used = 0;  // share of the KV budget in use
};

struct ServeResult {
  LatencyStats ttft_s;             // arrival to first token, queueing included
  LatencyStats tpot_s;             // per request: (last token - first token) / (output tokens - 1)
  LatencyStats itl_s;              // every gap between two tokens of a sequence
  LatencyStats e2e_s;              // arrival to last token
  double output_tokens_per_s = 0;  // the whole plan (every replica)
  double total_tokens_per_s = 0;   // prompt and output tokens
  double requests_per_s = 0;
  double duration_s = 0;  // first arrival (or the end of the warm-up) to the last token
  int64_t requests = 0;   // completed, per replica (warm-up included)
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t max_running = 0;
  // Of `steps`, those past the engine's CUDA graphs (runs_eagerly): priced as graph
  // steps, reported so that a user sees the engine would run them eagerly.
  int64_t eager_steps = 0;
  double tokens_per_decode = 0;    // tokens a sequence's decode emits on average (> 1: speculative)
  double kv_transfer_s = 0;        // disaggregated: a request's KV cache moved between the pools, mean
  simulate::KvBudget kv;           // the replica's KV cache
  std::vector<ServePoint> series;  // at most ServeOptions::max_points, evenly over the steps
  LatencyParts ttft_parts;         // the mean TTFT's parts
  LatencyParts tpot_parts;         // the mean TPOT's parts
};

struct ServeOptions {
  EngineProfile engine;
  Client client;
  size_t max_points = 500;
};

// Throws std::invalid_argument when the client or the engine profile is unusable
// (no requests, a rate of 0, a KV cache that cannot hold one request).
ServeResult simulate_serving(simulate::Simulator& sim, const plan::Plan& p, const ServeOptions& o);

}  // namespace dayzero::serve
