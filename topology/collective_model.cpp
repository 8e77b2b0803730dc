#include "topology/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "topology/collective_key.h"
#include "topology/paths.h"
#include "topology/schedules.h"

namespace dayzero::topology {

namespace {

using detail::Phase;
using detail::Schedule;

struct PhaseEval {
  uint32_t steps = 0;
  uint32_t net_steps = 0;                          // Phase::net_steps
  double latency_s = 0;                            // slowest route of the phase
  double intra_latency_s = 0;                      // slowest route that stays inside a node
  bool network = false;                            // some route crosses a network link
  double beta_s_per_byte = 0;                      // max over channels of load / bandwidth
  std::vector<std::pair<uint32_t, double>> loads;  // channel -> bytes per byte of size
};

struct Option {
  Algorithm algorithm;
  Protocol protocol;
  double alpha_s;
  double beta_s_per_byte;
  uint32_t schedule;
};

}  // namespace

// A group's candidate schedules, routed: what does not depend on CostParams.
struct detail::RoutedGroup {
  std::vector<Algorithm> algorithms;
  std::vector<std::vector<PhaseEval>> schedules;
};
using Routed = detail::RoutedGroup;

struct detail::CollectiveEntry {
  std::vector<Option> options;
  std::shared_ptr<const Routed> routed;
};

namespace {

using detail::key_devices;
using detail::KeyHash;
using detail::make_key;
using Entry = detail::CollectiveEntry;

const Option& pick(const std::vector<Option>& opts, Algorithm want, double size_bytes) {
  const Option* best = nullptr;
  double best_t = std::numeric_limits<double>::infinity();
  for (const Option& o : opts) {
    if (want != Algorithm::automatic && o.algorithm != want) continue;
    const double t = o.alpha_s + o.beta_s_per_byte * size_bytes;
    if (t < best_t) {
      best_t = t;
      best = &o;
    }
  }
  return *best;  // callers check that `want` exists first
}

// What a collective that moves nothing, or stays on one device, reports.
constexpr Option kNone{Algorithm::direct, Protocol::simple, 0, 0, 0};

CollectiveCost make_cost(Collective c, uint32_t ranks, double size_bytes, const Option& o, double time_s) {
  CollectiveCost r;
  r.collective = c;
  r.algorithm = o.algorithm;
  r.protocol = o.protocol;
  r.ranks = ranks;
  r.size_bytes = size_bytes;
  r.time_s = time_s;
  r.latency_s = o.alpha_s;
  r.algbw_Bps = time_s > 0 ? size_bytes / time_s : 0.0;
  r.busbw_Bps = r.algbw_Bps * bus_factor(c, ranks);
  return r;
}

// A collective on one device: nothing leaves it.
CollectiveCost lone(Collective c, double size_bytes) {
  CollectiveCost r;
  r.collective = c;
  r.ranks = 1;
  r.size_bytes = size_bytes;
  return r;
}

}  // namespace

struct CollectiveModel::Impl {
  Impl(const Cluster& cl, std::size_t cache_bytes, std::shared_ptr<SharedPathTrees> trees)
      : paths(cl, cache_bytes, std::move(trees)), loads(cl.num_channels()), own(cl.num_channels()) {}
  PathOracle paths;
  LoadMap loads, own;
  std::unordered_map<std::vector<uint32_t>, Entry, KeyHash> cache;
  std::vector<uint32_t> key;  // scratch, reused so that a cache hit allocates nothing

  PhaseEval evaluate(const Phase& p, const Cluster& cl, bool keep_loads) {
    loads.clear();
    PhaseEval e;
    e.steps = p.steps;
    e.net_steps = p.net_steps;
    for (const auto& f : p.flows) {
      const double lat_s = paths.add_route_load(f.src, f.dst, f.bytes_per_byte, loads);
      e.latency_s = std::max(e.latency_s, lat_s);
      if (cl.node_of(f.src) == cl.node_of(f.dst)) e.intra_latency_s = std::max(e.intra_latency_s, lat_s);
    }
    const std::size_t n = p.all_pairs.size();
    std::vector<double> row(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j)
        row[j] = i == j ? 0.0 : (p.pair_bytes.empty() ? p.uniform_pair_bytes : p.pair_bytes[i * n + j]);
      e.latency_s = std::max(e.latency_s, paths.add_tree_loads(p.all_pairs[i], p.all_pairs, row, loads));
    }
    for (uint32_t ch : loads.touched()) {
      if (cl.links()[ch / 2].kind == LinkKind::network) e.network = true;
      e.beta_s_per_byte = std::max(e.beta_s_per_byte, loads[ch] / cl.channel_bw_Bps(ch));
      if (keep_loads) e.loads.emplace_back(ch, loads[ch]);
    }
    return e;
  }

  Routed route(Collective c, std::span<const DeviceId> group, const Cluster& cl) {
    Routed r;
    for (const Schedule& s : detail::build_schedules(c, group, cl)) {
      std::vector<PhaseEval> evals;
      for (const Phase& p : s.phases) evals.push_back(evaluate(p, cl, true));
      r.algorithms.push_back(s.algorithm);
      r.schedules.push_back(std::move(evals));
    }
    return r;
  }
};

namespace {

// The latency of one phase's steps under LL and under Simple (launch excluded). Inside
// a node (or an NVLink domain): each step at the slowest route, Simple adding its per-step
// overhead. Across a network, NCCL's tuning model (CostParams): the node-crossing steps at
// hwLat NET, and a ring's other steps at least the network proxy's overhead.
std::pair<double, double> phase_latency_s(const PhaseEval& e, Algorithm a, const CostParams& prm) {
  const double simple_step_s = e.latency_s + prm.simple_step_overhead_s;
  if (!e.network || a == Algorithm::direct) return {e.steps * e.latency_s, e.steps * simple_step_s};
  const double inside = e.steps - e.net_steps, across = e.net_steps;
  const double in_ll_s = e.intra_latency_s, in_simple_s = e.intra_latency_s + prm.simple_step_overhead_s;
  if (a == Algorithm::tree)
    return {inside * in_ll_s + across * prm.net_tree_level_latency_ll_s,
            inside * in_simple_s + across * prm.net_step_latency_simple_s};
  return {inside * std::max(in_ll_s, prm.net_step_overhead_s) + across * e.latency_s,
          inside * std::max(in_simple_s, 3 * prm.net_step_overhead_s) + across * prm.net_step_latency_simple_s};
}

// Each schedule under both protocols, with this model's parameters.
Entry make_entry(std::shared_ptr<const Routed> routed, const CostParams& prm) {
  Entry entry;
  for (uint32_t idx = 0; idx < routed->schedules.size(); ++idx) {
    const Algorithm a = routed->algorithms[idx];
    double ll_s = 0, simple_s = 0, beta = 0;
    bool network = false;
    for (const PhaseEval& e : routed->schedules[idx]) {
      const auto [phase_ll_s, phase_simple_s] = phase_latency_s(e, a, prm);
      ll_s += phase_ll_s;
      simple_s += phase_simple_s;
      beta += e.beta_s_per_byte;
      network = network || e.network;
    }
    double launch_ll_s = prm.launch_latency_ll_s, launch_simple_s = prm.launch_latency_simple_s;
    if (network && a != Algorithm::direct) {
      launch_ll_s = a == Algorithm::tree ? prm.net_launch_latency_tree_ll_s : prm.net_launch_latency_ring_ll_s;
      launch_simple_s = prm.net_launch_latency_simple_s;
    }
    entry.options.push_back({a, Protocol::simple, launch_simple_s + simple_s, beta, idx});
    // Across a network the hierarchical schedule stands for NCCL's NVLS tree (or
    // CollNet), which runs the Simple protocol only (tuning.cc).
    if (network && a == Algorithm::hierarchical) continue;
    entry.options.push_back({a, Protocol::ll, launch_ll_s + ll_s, beta / prm.ll_bandwidth_fraction, idx});
  }
  entry.routed = std::move(routed);
  return entry;
}

}  // namespace

struct SharedCollectiveTables::Impl {
  const Cluster* cluster;
  std::shared_ptr<SharedPathTrees> trees;  // what the models' routes walk
  mutable std::mutex mutex;
  std::unordered_map<std::vector<uint32_t>, std::shared_ptr<const Routed>, KeyHash> tables;
};

SharedCollectiveTables::SharedCollectiveTables(const Cluster& cluster) : impl_(std::make_unique<Impl>()) {
  impl_->cluster = &cluster;
  impl_->trees = std::make_shared<SharedPathTrees>(cluster);
}
SharedCollectiveTables::~SharedCollectiveTables() = default;

std::size_t SharedCollectiveTables::size() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->tables.size();
}

CollectiveModel::CollectiveModel(const Cluster& cluster, CostParams params,
                                 std::shared_ptr<SharedCollectiveTables> shared)
    : impl_(std::make_unique<Impl>(cluster, params.path_cache_bytes,
                                   shared && shared->impl_->cluster == &cluster ? shared->impl_->trees : nullptr)),
      shared_(std::move(shared)),
      cluster_(cluster),
      params_(params) {
  if (shared_ && shared_->impl_->cluster != &cluster)
    throw std::invalid_argument("CollectiveModel: the shared tables belong to another cluster");
  if (!(params_.ll_bandwidth_fraction > 0.0 && params_.ll_bandwidth_fraction <= 1.0))
    throw core::InputError("", "ll_bandwidth_fraction", std::to_string(params_.ll_bandwidth_fraction),
                           "must be in (0, 1]");
}

CollectiveModel::~CollectiveModel() = default;

std::size_t CollectiveModel::cache_entries() const { return impl_->cache.size(); }
std::size_t CollectiveModel::paths_computed() const { return impl_->paths.trees_built(); }

namespace {

void check_size(double size_bytes) {
  if (!(size_bytes >= 0.0 && size_bytes <= std::numeric_limits<double>::max())) [[unlikely]]
    throw core::InputError("", "size_bytes", std::to_string(size_bytes), "must be a finite number >= 0");
}

}  // namespace

// The routed tables of impl_->key: from the shared tables when another model routed the
// group, else routed here (outside the lock: two threads may route one group at once,
// and the first to finish is kept; both tables are equal).
std::shared_ptr<const Routed> CollectiveModel::routed() {
  const auto& key = impl_->key;
  if (shared_) {
    std::lock_guard lock(shared_->impl_->mutex);
    if (auto it = shared_->impl_->tables.find(key); it != shared_->impl_->tables.end()) return it->second;
  }
  std::vector<DeviceId> ordered;
  const Collective c = key_devices(key, ordered);
  auto made = std::make_shared<const Routed>(impl_->route(c, ordered, cluster_));
  if (!shared_) return made;
  std::lock_guard lock(shared_->impl_->mutex);
  return shared_->impl_->tables.emplace(key, std::move(made)).first->second;
}

const Entry& CollectiveModel::lookup() {
  auto it = impl_->cache.find(impl_->key);
  if (it == impl_->cache.end()) {
    ++misses_;
    it = impl_->cache.emplace(impl_->key, make_entry(routed(), params_)).first;
  } else {
    ++hits_;
  }
  return it->second;
}

CollectiveCost CollectiveModel::cost(Collective c, std::span<const DeviceId> group, double size_bytes,
                                     Algorithm algorithm) {
  check_size(size_bytes);
  make_key(c, group, cluster_, impl_->key);
  const auto ranks = static_cast<uint32_t>(group.size());
  if (ranks == 1) return lone(c, size_bytes);
  const auto& opts = lookup().options;
  if (algorithm != Algorithm::automatic &&
      std::none_of(opts.begin(), opts.end(), [&](const Option& o) { return o.algorithm == algorithm; }))
    throw core::InputError("", "algorithm", std::string(algorithm_name(algorithm)),
                           "not available for " + std::string(collective_name(c)) + " over this group of " +
                               std::to_string(ranks) + " devices");
  const Option& o = pick(opts, algorithm, size_bytes);
  return make_cost(c, ranks, size_bytes, o, o.alpha_s + o.beta_s_per_byte * size_bytes);
}

CollectiveModel::Group CollectiveModel::prepare(Collective c, std::span<const DeviceId> group) {
  make_key(c, group, cluster_, impl_->key);
  Group g;
  g.collective_ = c;
  g.ranks_ = static_cast<uint32_t>(group.size());
  if (g.ranks_ > 1) g.entry_ = &lookup();
  return g;
}

double CollectiveModel::time_s(const Group& group, double size_bytes) const {
  check_size(size_bytes);
  if (!group.entry_) return 0.0;
  const Option& o = pick(group.entry_->options, Algorithm::automatic, size_bytes);
  return o.alpha_s + o.beta_s_per_byte * size_bytes;
}

CollectiveCost CollectiveModel::cost(const Group& group, double size_bytes) {
  check_size(size_bytes);
  if (!group.entry_) return lone(group.collective_, size_bytes);
  const Option& o = pick(group.entry_->options, Algorithm::automatic, size_bytes);
  return make_cost(group.collective_, group.ranks_, size_bytes, o, o.alpha_s + o.beta_s_per_byte * size_bytes);
}

CollectiveCost CollectiveModel::all_to_allv(std::span<const DeviceId> group, std::span<const double> bytes) {
  auto& key = impl_->key;
  make_key(Collective::all_to_all, group, cluster_, key);
  const std::size_t n = group.size();
  if (bytes.size() != n * n)
    throw core::InputError("", "bytes", std::to_string(bytes.size()) + " entries",
                           "expected n x n = " + std::to_string(n * n) + " per-pair sizes");
  double max_send = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double row = 0;
    for (std::size_t j = 0; j < n; ++j) {
      check_size(bytes[i * n + j]);
      if (i != j) row += bytes[i * n + j];
    }
    max_send = std::max(max_send, row);
  }
  if (n == 1 || max_send == 0.0) return make_cost(Collective::all_to_all, static_cast<uint32_t>(n), 0.0, kNone, 0.0);
  Phase p;
  p.all_pairs.assign(group.begin(), group.end());
  p.pair_bytes.assign(bytes.begin(), bytes.end());
  const PhaseEval e = impl_->evaluate(p, cluster_, false);
  const Option simple{Algorithm::direct, Protocol::simple,
                      params_.launch_latency_simple_s + e.latency_s + params_.simple_step_overhead_s, e.beta_s_per_byte,
                      0};
  const Option ll{Algorithm::direct, Protocol::ll, params_.launch_latency_ll_s + e.latency_s,
                  e.beta_s_per_byte / params_.ll_bandwidth_fraction, 0};
  // Here beta is per byte already moved (pair sizes are absolute), so time = alpha + beta.
  const double t_simple = simple.alpha_s + simple.beta_s_per_byte, t_ll = ll.alpha_s + ll.beta_s_per_byte;
  const Option& o = t_ll < t_simple ? ll : simple;
  return make_cost(Collective::all_to_all, static_cast<uint32_t>(n), max_send, o, std::min(t_simple, t_ll));
}

std::vector<CollectiveCost> CollectiveModel::cost_concurrent(std::span<const CollectiveCall> calls) {
  // Each call alone first: this fills the cache and fixes its algorithm and protocol.
  struct Chosen {
    const Entry* entry = nullptr;
    Option option{};
    double scale = 1.0;  // bandwidth-time per byte: 1 for Simple, 1/fraction for LL
  };
  std::vector<Chosen> chosen(calls.size());
  std::vector<CollectiveCost> out;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto& call = calls[i];
    out.push_back(cost(call.collective, call.group, call.size_bytes));
    if (call.group.size() < 2) continue;
    make_key(call.collective, call.group, cluster_, impl_->key);
    const Entry& e = impl_->cache.at(impl_->key);
    chosen[i].entry = &e;
    chosen[i].option = pick(e.options, Algorithm::automatic, call.size_bytes);
    chosen[i].scale = chosen[i].option.protocol == Protocol::ll ? 1.0 / params_.ll_bandwidth_fraction : 1.0;
  }
  // Bytes (in Simple-protocol equivalents) every channel carries over all calls.
  auto add_all = [&](LoadMap& m, std::size_t i) {
    const auto& phases = chosen[i].entry->routed->schedules[chosen[i].option.schedule];
    for (const auto& ph : phases)
      for (auto [ch, l] : ph.loads) m.add(ch, l * calls[i].size_bytes * chosen[i].scale);
  };
  LoadMap& total = impl_->loads;
  LoadMap& own = impl_->own;
  total.clear();
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (chosen[i].entry) add_all(total, i);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!chosen[i].entry) continue;
    own.clear();
    add_all(own, i);
    const double s = calls[i].size_bytes * chosen[i].scale;
    double bw_time_s = 0;
    for (const auto& ph : chosen[i].entry->routed->schedules[chosen[i].option.schedule]) {
      double phase_s = 0;
      for (auto [ch, l] : ph.loads)
        phase_s = std::max(phase_s, (l * s + (total[ch] - own[ch])) / cluster_.channel_bw_Bps(ch));
      bw_time_s += phase_s;
    }
    out[i] = make_cost(calls[i].collective, static_cast<uint32_t>(calls[i].group.size()), calls[i].size_bytes,
                       chosen[i].option, chosen[i].option.alpha_s + bw_time_s);
  }
  total.clear();
  own.clear();
  return out;
}

}  // namespace dayzero::topology
