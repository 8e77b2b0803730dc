#pragma once
// Collectives, their algorithms, and results reported the way nccl-tests reports them
// (doc/PERFORMANCE.md in NVIDIA/nccl-tests): time, algbw = size / time, and
// busbw = algbw x bus factor, so that predicted and measured numbers compare one to one.
// `size_bytes` follows nccl-tests too: the whole buffer (all_gather: the gathered output;
// reduce_scatter: the full input; alltoall: one rank's send buffer).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/collective.h"

namespace dayzero::topology {

// The collectives themselves, their names and bus factors are core's (one
// definition for the topology, the executor and Measurements).
using core::bus_factor;
using core::Collective;
using core::collective_name;
using core::kAllCollectives;
using core::parse_collective;

// ring: NCCL-style rings (several, rotated or strided, where that spreads load);
// tree: double binary tree; hierarchical: inside nodes, then across, then inside;
// direct: every flow at once (all-to-all, send/recv).
enum class Algorithm : uint8_t { automatic, ring, tree, hierarchical, direct };
// LL: low-latency protocol (flag per 8-byte line); simple: full-bandwidth protocol.
enum class Protocol : uint8_t { ll, simple };

std::string_view algorithm_name(Algorithm a);
std::string_view protocol_name(Protocol p);

// Protocol and launch constants of the alpha-beta model. Defaults from NCCL's own tuning
// model (NVIDIA/nccl src/graph/tuning.cc, baseLat and hwLat tables, ring column); the
// calibration step may replace them with measured values.
struct CostParams {
  // Fixed cost of launching one collective (baseLat, ring: LL 3.6 us, Simple 8.4 us, as
  // NCCL 2.12-2.17 set them; 2.18 and later launch LL at 6.6, taken below for collectives
  // across a network, where the engines call NCCL rather than their own in-node kernels).
  double launch_latency_ll_s = 3.6e-6;
  double launch_latency_simple_s = 8.4e-6;
  // Extra per-step cost of the Simple protocol over LL (hwLat NVLink ring: Simple 3.4 us
  // vs LL 0.47 us). Per-step link latency itself comes from the cluster graph.
  double simple_step_overhead_s = 2.9e-6;
  // Share of link bandwidth the LL protocol gets (tuning.cc: ring LL busBw *= 1.0/4.0:
  // half of each 8-byte line is a flag, and LL runs fewer threads).
  double ll_bandwidth_fraction = 0.25;
  // A ring, tree or hierarchical collective whose routes cross a network link runs in
  // NCCL's inter-node form (the engines' own all-reduce kernels work inside an NVLink
  // domain only), priced as NCCL's tuning model prices it (src/graph/tuning.cc,
  // unchanged from NCCL 2.21 to 2.30): launch at baseLat (ring LL 6.6 us, tree LL 6.8,
  // Simple 8.4); a tree level across nodes at hwLat NET tree (LL 5.0 us, Simple 14);
  // a ring hop across nodes at the route's latency (hwLat NET ring LL 2.7 us: the
  // cluster's network route) or, Simple, 14 us; and each of a ring's hops inside a node
  // at least the network proxy's overhead per step (getNetOverhead: 1 us on x86, three
  // times that for Simple).
  double net_launch_latency_ring_ll_s = 6.6e-6;
  double net_launch_latency_tree_ll_s = 6.8e-6;
  double net_launch_latency_simple_s = 8.4e-6;
  double net_tree_level_latency_ll_s = 5.0e-6;
  double net_step_latency_simple_s = 14e-6;
  double net_step_overhead_s = 1.0e-6;
  // Byte budget of the shortest-path tree cache (kDefaultPathCacheBytes in paths.h).
  std::size_t path_cache_bytes = static_cast<std::size_t>(256) << 20;
};

struct CollectiveCost {
  Collective collective = Collective::all_reduce;
  Algorithm algorithm = Algorithm::automatic;  // the one chosen
  Protocol protocol = Protocol::simple;
  uint32_t ranks = 0;
  double size_bytes = 0;
  double time_s = 0;
  double algbw_Bps = 0;  // size_bytes / time_s (0 when nothing moves)
  double busbw_Bps = 0;  // algbw_Bps * bus_factor
  double latency_s = 0;  // the alpha part of time_s
};

}  // namespace dayzero::topology
