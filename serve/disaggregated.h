#pragma once
// Disaggregated serving: a prefill pool and a decode pool of workers, each with its
// own layout, worker count and engine settings, on one cluster (the prefill workers
// on its first devices, the decode workers after them). A request is routed to a
// prefill replica (round robin over every worker's attention-DP replicas), queues
// there for prefill capacity, has its prompt computed and its first token sampled,
// then its KV cache moves to a decode replica (round robin) over the topology's path
// between the pools (NVLink inside a node or an NVLink domain, the NICs across),
// each decode rank receiving its own shard at once. The decode replica admits the
// sequence when its cache has room and decodes the rest; the client gets the first
// token from the decode side with the decode replica's first step of the sequence
// (SGLang's decode server outputs a transferred request's token when its event loop
// next takes it in; Dynamo streams from the decode worker), so TTFT is the prefill
// queue, the prompt, one KV transfer and that step. Every replica of both pools is simulated, side by side
// in time (serve/replica.h); the engines' transfer overlaps the prefill worker's next
// prompts, so it delays the request, not the pool.

#include <functional>

#include "plan/plan.h"
#include "serve/engine.h"
#include "serve/simulation.h"
#include "serve/workload.h"
#include "simulate/simulator.h"

namespace dayzero::serve {

struct Pool {
  plan::Plan plan;  // one worker: its layout, precisions, speculative decoding
  int workers = 1;
  EngineProfile engine;
};

struct DisaggOptions {
  Pool prefill, decode;
  Client client;  // across the whole deployment
};

// Devices the deployment needs: both pools' workers.
int disaggregated_devices(const DisaggOptions& o);

// The time to move `tokens` of one request's KV cache from the prefill pool to the
// decode pool: one decode rank's shard (the decode pool's KV budget per rank) over the
// path from the prefill pool's first device to the decode pool's.
double kv_transfer_s(const topology::Cluster& c, const DisaggOptions& o, const simulate::KvBudget& decode_kv,
                     int64_t tokens);

// Throws std::invalid_argument when the client, an engine or a pool is unusable
// (more devices than the cluster has, a cache that cannot hold one request).
ServeResult simulate_disaggregated(simulate::Simulator& sim, const DisaggOptions& o);

// A plan served to `client`: one pool (simulate_serving), or a disaggregated plan's
// pools, each worker with the engine profile profile_of(its worker plan). No time
// series. Throws std::invalid_argument as the two do.
using ProfileOf = std::function<EngineProfile(const plan::Plan&)>;
ServeResult serve_plan(simulate::Simulator& sim, const plan::Plan& p, const ProfileOf& profile_of,
                       const Client& client);

}  // namespace dayzero::serve
