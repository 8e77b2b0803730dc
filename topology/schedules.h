#pragma once
// Internal to topology/: what each collective algorithm sends where. A Schedule is a
// sequence of phases; inside a phase all flows run at once, so the phase's bandwidth
// time is set by its most loaded channel, and its latency by `steps` times its slowest
// route (across a network, NCCL's per-step latencies: CostParams). Flow sizes are per
// byte of the collective's size (nccl-tests' S), so one evaluated schedule serves every
// message size.

#include <span>
#include <vector>

#include "topology/cluster.h"
#include "topology/collective.h"

namespace dayzero::topology::detail {

struct Flow {
  DeviceId src, dst;
  double bytes_per_byte;  // bytes this flow carries per byte of S
};

struct Phase {
  uint32_t steps = 1;
  // Of `steps`, those that cross between nodes as NCCL's tuning model counts them
  // (tuning.cc nInterSteps: 2 (N - 1) for a ring all-reduce over N nodes, N - 1 for the
  // other rings; 2 per tree level). Priced apart only where a route crosses the network.
  uint32_t net_steps = 0;
  std::vector<Flow> flows;
  // All-to-all: every ordered pair (i, j), i != j, of `all_pairs` carries
  // pair_bytes[i * n + j] (or uniform_pair_bytes when pair_bytes is empty).
  std::vector<DeviceId> all_pairs;
  std::vector<double> pair_bytes;
  double uniform_pair_bytes = 0;
};

struct Schedule {
  Algorithm algorithm = Algorithm::ring;
  std::vector<Phase> phases;
};

// The candidate schedules of a collective over `group` (sorted by DeviceId, except for
// send_recv where group = {src, dst}); the caller keeps the fastest.
std::vector<Schedule> build_schedules(Collective c, std::span<const DeviceId> group, const Cluster& cluster);

}  // namespace dayzero::topology::detail
