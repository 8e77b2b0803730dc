#pragma once
// Routes between devices: the minimum-latency path in the cluster graph (Boost's
// Dijkstra), which prefers NVLink over PCIe over the network and finds PXN-style
// detours where they are shorter. One shortest-path tree per source device is computed
// on first use and cached (bounded by a byte budget, oldest dropped first), so a route
// afterwards costs one walk up the tree.
//
// Not thread-safe (it caches); use one PathOracle per thread over a shared Cluster.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/units.h"
#include "topology/cluster.h"

namespace dayzero::topology {

// Memory the cached shortest-path trees may use before the oldest are dropped.
// A tree costs 4 bytes per graph vertex: ~46 KB for a 4,096-device HGX cluster, so the
// default holds a tree for every device of such a cluster.
inline constexpr std::size_t kDefaultPathCacheBytes = static_cast<std::size_t>(256 * core::kMiB);

struct Route {
  double latency_s = 0;            // sum of the link latencies on the path
  double bottleneck_bw_Bps = 0;    // the slowest link on the path (per direction)
  std::vector<uint32_t> channels;  // directed channels crossed, source to destination
};

// Bytes (or bytes per unit of message size) per directed channel, with the list of
// channels touched so that clearing and scanning cost what was used, not the graph size.
class LoadMap {
 public:
  explicit LoadMap(std::size_t channels) : load_(channels, 0.0), used_(channels, 0) {}
  void add(uint32_t channel, double bytes) {
    if (!used_[channel]) {
      used_[channel] = 1;
      touched_.push_back(channel);
    }
    load_[channel] += bytes;
  }
  double operator[](uint32_t channel) const { return load_[channel]; }
  const std::vector<uint32_t>& touched() const { return touched_; }
  void clear() {
    for (uint32_t c : touched_) {
      load_[c] = 0.0;
      used_[c] = 0;
    }
    touched_.clear();
  }

 private:
  std::vector<double> load_;
  std::vector<uint8_t> used_;
  std::vector<uint32_t> touched_;
};

// Shortest-path trees that the PathOracles of several threads over one cluster share,
// so that each is computed once. Thread-safe; an oracle asks only when its own cache
// misses. Holds at most `cache_bytes` of trees (later ones are not kept).
class SharedPathTrees {
 public:
  explicit SharedPathTrees(const Cluster& cluster, std::size_t cache_bytes = kDefaultPathCacheBytes);
  ~SharedPathTrees();
  SharedPathTrees(const SharedPathTrees&) = delete;
  SharedPathTrees& operator=(const SharedPathTrees&) = delete;
  std::size_t size() const;  // trees held

 private:
  friend class PathOracle;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class PathOracle {
 public:
  // With `shared`, trees another oracle over the same cluster computed are not
  // computed again (throws std::invalid_argument when it belongs to another cluster).
  explicit PathOracle(const Cluster& cluster, std::size_t cache_bytes = kDefaultPathCacheBytes,
                      std::shared_ptr<SharedPathTrees> shared = nullptr);
  ~PathOracle();
  PathOracle(const PathOracle&) = delete;
  PathOracle& operator=(const PathOracle&) = delete;

  const Cluster& cluster() const { return cluster_; }

  Route route(DeviceId src, DeviceId dst);
  // Adds `bytes` to every channel on src -> dst; returns the route's latency.
  double add_route_load(DeviceId src, DeviceId dst, double bytes, LoadMap& loads);
  // Adds bytes[i] to every channel on src -> dsts[i]; returns the largest route latency
  // among the dsts that receive bytes.
  double add_tree_loads(DeviceId src, std::span<const DeviceId> dsts, std::span<const double> bytes, LoadMap& loads);

  std::size_t trees_built() const { return trees_built_; }  // by this oracle
  std::size_t trees_cached() const { return trees_.size(); }

  struct Tree;  // one source's shortest-path tree (paths.cpp)

 private:
  const Tree& tree(DeviceId src);
  uint32_t parent_of(uint32_t channel) const;
  // Calls visit(channel) for each channel of src -> dst on src's tree `t` (destination
  // first); returns the route latency.
  template <class Visit>
  double walk(const Tree& t, DeviceId src, DeviceId dst, Visit&& visit) const;

  std::shared_ptr<const Tree> compute(DeviceId src);  // Dijkstra from src

  const Cluster& cluster_;
  std::shared_ptr<SharedPathTrees> shared_;
  std::size_t max_trees_;
  std::unordered_map<DeviceId, std::shared_ptr<const Tree>> trees_;
  std::deque<DeviceId> fifo_;
  std::size_t trees_built_ = 0;
  std::vector<double> dist_;  // Dijkstra's distance map, reused between runs
};

}  // namespace dayzero::topology
