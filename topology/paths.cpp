#include "topology/paths.h"

#include <algorithm>
#include <limits>
#include <mutex>
#include <stdexcept>

#include <boost/graph/dijkstra_shortest_paths_no_color_map.hpp>

#include "topology/graph.h"

namespace dayzero::topology {

// A shortest-path tree is only the channel entering each vertex (-1 at the source): a
// route is read by walking up it, latency and all, so a tree costs 4 bytes per vertex.
struct PathOracle::Tree {
  std::vector<int32_t> parent_channel;
};

namespace {

using detail::BoostGraph;
using Edge = boost::graph_traits<BoostGraph>::edge_descriptor;
using Vertex = boost::graph_traits<BoostGraph>::vertex_descriptor;

// Records, for each vertex, the directed channel of the edge that last relaxed it.
class TreeRecorder : public boost::default_dijkstra_visitor {
 public:
  TreeRecorder(const std::vector<LinkInfo>& links, std::vector<int32_t>& parent) : links_(&links), parent_(&parent) {}
  void edge_relaxed(Edge e, const BoostGraph& g) {
    const auto u = static_cast<uint32_t>(boost::source(e, g));
    const uint32_t link = g[e].link;
    const uint32_t dir = (*links_)[link].a == u ? 0u : 1u;
    (*parent_)[boost::target(e, g)] = static_cast<int32_t>(2 * link + dir);
  }

 private:
  const std::vector<LinkInfo>* links_;
  std::vector<int32_t>* parent_;
};

}  // namespace

namespace {
std::size_t max_trees(const Cluster& cluster, std::size_t cache_bytes) {
  const std::size_t per_tree = cluster.vertices().size() * sizeof(int32_t);
  return std::max<std::size_t>(2, cache_bytes / std::max<std::size_t>(per_tree, 1));
}
}  // namespace

struct SharedPathTrees::Impl {
  const Cluster* cluster;
  std::size_t max_trees;
  mutable std::mutex mutex;
  std::unordered_map<DeviceId, std::shared_ptr<const PathOracle::Tree>> trees;
};

SharedPathTrees::SharedPathTrees(const Cluster& cluster, std::size_t cache_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->cluster = &cluster;
  impl_->max_trees = max_trees(cluster, cache_bytes);
}
SharedPathTrees::~SharedPathTrees() = default;

std::size_t SharedPathTrees::size() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->trees.size();
}

PathOracle::PathOracle(const Cluster& cluster, std::size_t cache_bytes, std::shared_ptr<SharedPathTrees> shared)
    : cluster_(cluster),
      shared_(std::move(shared)),
      max_trees_(max_trees(cluster, cache_bytes)),
      dist_(cluster.vertices().size()) {
  if (shared_ && shared_->impl_->cluster != &cluster)
    throw std::invalid_argument("PathOracle: the shared trees belong to another cluster");
}

PathOracle::~PathOracle() = default;

uint32_t PathOracle::parent_of(uint32_t channel) const {
  const LinkInfo& l = cluster_.links()[channel / 2];
  return channel % 2 == 0 ? l.a : l.b;  // channel 2k runs a -> b, so its tail is a
}

std::shared_ptr<const PathOracle::Tree> PathOracle::compute(DeviceId src) {
  const auto& g = cluster_.graph().g;
  auto t = std::make_shared<Tree>();
  t->parent_channel.assign(boost::num_vertices(g), -1);
  TreeRecorder rec(cluster_.links(), t->parent_channel);
  boost::dijkstra_shortest_paths_no_color_map(
      g, static_cast<Vertex>(src),
      boost::weight_map(boost::get(&detail::EdgeProps::latency_s, g))
          .distance_map(boost::make_iterator_property_map(dist_.begin(), boost::get(boost::vertex_index, g)))
          .visitor(rec));
  ++trees_built_;
  return t;
}

const PathOracle::Tree& PathOracle::tree(DeviceId src) {
  if (auto it = trees_.find(src); it != trees_.end()) return *it->second;
  if (trees_.size() >= max_trees_) {
    trees_.erase(fifo_.front());
    fifo_.pop_front();
  }
  std::shared_ptr<const Tree> t;
  if (shared_) {
    std::lock_guard lock(shared_->impl_->mutex);
    if (auto it = shared_->impl_->trees.find(src); it != shared_->impl_->trees.end()) t = it->second;
  }
  if (!t) {
    t = compute(src);  // outside the lock; two oracles may compute one tree, the first is kept
    if (shared_) {
      std::lock_guard lock(shared_->impl_->mutex);
      auto& trees = shared_->impl_->trees;
      if (auto it = trees.find(src); it != trees.end()) t = it->second;
      else if (trees.size() < shared_->impl_->max_trees) trees.emplace(src, t);
    }
  }
  fifo_.push_back(src);
  return *trees_.emplace(src, std::move(t)).first->second;
}

template <class Visit>
double PathOracle::walk(const Tree& t, DeviceId src, DeviceId dst, Visit&& visit) const {
  double latency_s = 0;
  for (uint32_t v = dst; v != src;) {
    const auto ch = static_cast<uint32_t>(t.parent_channel[v]);
    latency_s += cluster_.links()[ch / 2].latency_s;
    visit(ch);
    v = parent_of(ch);
  }
  return latency_s;
}

Route PathOracle::route(DeviceId src, DeviceId dst) {
  Route r;
  r.bottleneck_bw_Bps = std::numeric_limits<double>::infinity();
  r.latency_s = walk(tree(src), src, dst, [&](uint32_t ch) {
    r.channels.push_back(ch);
    r.bottleneck_bw_Bps = std::min(r.bottleneck_bw_Bps, cluster_.channel_bw_Bps(ch));
  });
  std::reverse(r.channels.begin(), r.channels.end());
  if (r.channels.empty()) r.bottleneck_bw_Bps = 0;
  return r;
}

double PathOracle::add_route_load(DeviceId src, DeviceId dst, double bytes, LoadMap& loads) {
  return walk(tree(src), src, dst, [&](uint32_t ch) { loads.add(ch, bytes); });
}

double PathOracle::add_tree_loads(DeviceId src, std::span<const DeviceId> dsts, std::span<const double> bytes,
                                  LoadMap& loads) {
  double max_latency_s = 0;
  const Tree& t = tree(src);  // one lookup for every destination
  for (std::size_t i = 0; i < dsts.size(); ++i) {
    if (dsts[i] == src || bytes[i] <= 0.0) continue;
    const double b = bytes[i];
    max_latency_s = std::max(max_latency_s, walk(t, src, dsts[i], [&](uint32_t ch) { loads.add(ch, b); }));
  }
  return max_latency_s;
}

}  // namespace dayzero::topology
