#pragma once
// What a collective costs on a cluster: an alpha-beta model over the real graph.
//   time = launch + sum over phases of steps x (slowest route latency [+ Simple's
//          per-step overhead]) + size x sum over phases of max over channels
//          (bytes on the channel per byte of size / channel bandwidth)
// for each candidate algorithm (ring, tree, hierarchical, direct) and protocol (LL,
// Simple); the fastest is reported unless one is asked for. Bytes follow the actual
// shortest paths, so flows that share a link (two rings leaving through one NIC, an
// all-to-all funnelled into a leaf uplink) share its bandwidth.
//
// Per (collective, group) the alpha and beta of every candidate are computed once and
// cached, keyed by the group's sorted device list; any size is then one multiply-add.
// Not thread-safe: use one CollectiveModel per thread over a shared Cluster.

#include <memory>
#include <span>
#include <vector>

#include "topology/cluster.h"
#include "topology/collective.h"

namespace dayzero::topology {

struct CollectiveCall {
  Collective collective;
  std::span<const DeviceId> group;
  double size_bytes;
};

class CollectiveModel {
 public:
  explicit CollectiveModel(const Cluster& cluster, CostParams params = {});
  ~CollectiveModel();
  CollectiveModel(const CollectiveModel&) = delete;
  CollectiveModel& operator=(const CollectiveModel&) = delete;

  // The cost of one collective over `group` (any order; send_recv: {src, dst}) moving
  // `size_bytes` (nccl-tests' size convention, see collective.h). Throws core::InputError
  // for an empty group, a device out of range, or a device listed twice.
  CollectiveCost cost(Collective c, std::span<const DeviceId> group, double size_bytes,
                      Algorithm algorithm = Algorithm::automatic);

  // All-to-all with per-pair sizes: bytes[i * n + j] go from group[i] to group[j].
  // Reported size_bytes is the largest per-rank send volume. Not cached.
  CollectiveCost all_to_allv(std::span<const DeviceId> group, std::span<const double> bytes);

  // Collectives running at the same time: each keeps the algorithm it would pick alone,
  // and every channel's bandwidth is shared by all the bytes that cross it. Conservative:
  // another call's bytes count against every phase of this one that uses the channel.
  std::vector<CollectiveCost> cost_concurrent(std::span<const CollectiveCall> calls);

  const CostParams& params() const { return params_; }
  std::size_t cache_entries() const;
  std::size_t cache_hits() const { return hits_; }
  std::size_t cache_misses() const { return misses_; }
  std::size_t paths_computed() const;  // shortest-path trees built so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  const Cluster& cluster_;
  CostParams params_;
  std::size_t hits_ = 0, misses_ = 0;
};

}  // namespace dayzero::topology
