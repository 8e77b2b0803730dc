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

namespace detail {
struct CollectiveEntry;  // a group's candidates (collective_model.cpp)
struct RoutedGroup;      // a group's schedules, routed (collective_model.cpp)
}  // namespace detail

struct CollectiveCall {
  Collective collective;
  std::span<const DeviceId> group;
  double size_bytes;
};

// The routed tables of the groups seen so far (each candidate schedule's phases: steps,
// slowest route, bytes per channel), shared by the CollectiveModels of several threads
// over one cluster, so that a group is routed once rather than once per thread.
// Thread-safe; a CollectiveModel asks it only on a miss of its own cache, so the lock
// is taken once per new group, never per cost.
class SharedCollectiveTables {
 public:
  explicit SharedCollectiveTables(const Cluster& cluster);
  ~SharedCollectiveTables();
  SharedCollectiveTables(const SharedCollectiveTables&) = delete;
  SharedCollectiveTables& operator=(const SharedCollectiveTables&) = delete;
  std::size_t size() const;  // groups routed so far

 private:
  friend class CollectiveModel;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CollectiveModel {
 public:
  // With `shared`, groups another model over the same cluster routed are not routed
  // again (throws std::invalid_argument when `shared` belongs to another cluster).
  explicit CollectiveModel(const Cluster& cluster, CostParams params = {},
                           std::shared_ptr<SharedCollectiveTables> shared = nullptr);
  ~CollectiveModel();
  CollectiveModel(const CollectiveModel&) = delete;
  CollectiveModel& operator=(const CollectiveModel&) = delete;

  // The cost of one collective over `group` (any order; send_recv: {src, dst}) moving
  // `size_bytes` (nccl-tests' size convention, see collective.h). Throws core::InputError
  // for an empty group, a device out of range, or a device listed twice.
  CollectiveCost cost(Collective c, std::span<const DeviceId> group, double size_bytes,
                      Algorithm algorithm = Algorithm::automatic);

  // A group whose cost table is looked up (or built) once: cost(group, size) is then
  // one multiply-add per candidate, with no key to hash or compare. Valid while this
  // model lives (the cache never drops an entry). A default Group is a lone device.
  class Group {
   public:
    Group() = default;

   private:
    friend class CollectiveModel;
    const detail::CollectiveEntry* entry_ = nullptr;
    Collective collective_ = Collective::all_reduce;
    uint32_t ranks_ = 1;
  };
  // Checks `group` as cost() does.
  Group prepare(Collective c, std::span<const DeviceId> group);
  // The fastest algorithm and protocol, as cost(c, group, size_bytes) would give.
  CollectiveCost cost(const Group& group, double size_bytes);
  // cost(group, size_bytes).time_s alone (a simulator's inner loop).
  double time_s(const Group& group, double size_bytes) const;

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
  const detail::CollectiveEntry& lookup();  // the entry for impl_->key (built on a miss)
  std::shared_ptr<const detail::RoutedGroup> routed();
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<SharedCollectiveTables> shared_;
  const Cluster& cluster_;
  CostParams params_;
  std::size_t hits_ = 0, misses_ = 0;
};

}  // namespace dayzero::topology
