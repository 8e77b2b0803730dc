// Algorithms as flows. Rings follow NCCL: the group is ordered node by node, so a ring
// crosses each node boundary once; several rings run side by side where that spreads
// load (rotated per node, so each ring leaves a node from a different device and NIC;
// or strided inside a node, so a point-to-point mesh uses more than one link per device).
#include "topology/schedules.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace dayzero::topology::detail {

namespace {

// Upper bound on rings built side by side inside one node (strided rings).
constexpr uint32_t kMaxStridedRings = 16;

using Ring = std::vector<DeviceId>;

// Flows of one pass around each ring: member i sends to member i+1 (closing the loop
// when `closed`, a pipeline chain otherwise). Each ring carries 1/rings of the data.
void add_ring_flows(Phase& p, const std::vector<Ring>& rings, double bytes_per_byte, bool closed) {
  const double share = bytes_per_byte / static_cast<double>(rings.size());
  for (const Ring& r : rings) {
    const std::size_t n = r.size();
    for (std::size_t i = 0; i + (closed ? 0 : 1) < n; ++i) p.flows.push_back({r[i], r[(i + 1) % n], share});
  }
}

// Consecutive runs of the (sorted) group that share a node.
std::vector<std::vector<DeviceId>> node_segments(std::span<const DeviceId> group, const Cluster& cl) {
  std::vector<std::vector<DeviceId>> segs;
  for (DeviceId d : group) {
    if (segs.empty() || cl.node_of(segs.back().front()) != cl.node_of(d)) segs.emplace_back();
    segs.back().push_back(d);
  }
  return segs;
}

bool uniform_segments(const std::vector<std::vector<DeviceId>>& segs) {
  return std::all_of(segs.begin(), segs.end(), [&](const auto& s) { return s.size() == segs.front().size(); });
}

// Ring sets worth trying for a flat ring over `group`.
std::vector<std::vector<Ring>> ring_sets(std::span<const DeviceId> group, const Cluster& cl) {
  std::vector<std::vector<Ring>> sets;
  sets.push_back({Ring(group.begin(), group.end())});
  const auto n = static_cast<uint32_t>(group.size());
  const auto segs = node_segments(group, cl);
  if (segs.size() == 1 && n >= 3) {
    std::vector<Ring> strided;
    for (uint32_t s = 1; s < n && strided.size() < kMaxStridedRings; ++s) {
      if (std::gcd(s, n) != 1) continue;
      Ring r(n);
      for (uint32_t i = 0; i < n; ++i) r[i] = group[(static_cast<uint64_t>(i) * s) % n];
      strided.push_back(std::move(r));
    }
    if (strided.size() > 1) sets.push_back(std::move(strided));
  } else if (segs.size() > 1 && uniform_segments(segs) && segs.front().size() > 1) {
    const std::size_t m = segs.front().size();
    std::vector<Ring> rotated;
    for (std::size_t k = 0; k < m; ++k) {
      Ring r;
      r.reserve(n);
      for (const auto& seg : segs)
        for (std::size_t i = 0; i < m; ++i) r.push_back(seg[(k + i) % m]);
      rotated.push_back(std::move(r));
    }
    sets.push_back(std::move(rotated));
  }
  return sets;
}

// One ring phase per ring set: `bytes_per_byte` per flow, `steps` ring steps.
// `hops_per_node_boundary`: 2 for an all-reduce (reduce, then gather), else 1.
void add_ring_schedules(std::vector<Schedule>& out, std::span<const DeviceId> group, const Cluster& cl,
                        double bytes_per_byte, uint32_t steps, bool closed, uint32_t hops_per_node_boundary) {
  const auto nodes = static_cast<uint32_t>(node_segments(group, cl).size());
  for (auto& rings : ring_sets(group, cl)) {
    Schedule s{Algorithm::ring, {Phase{}}};
    s.phases[0].steps = steps;
    s.phases[0].net_steps = std::min(steps, hops_per_node_boundary * (nodes - 1));
    add_ring_flows(s.phases[0], rings, bytes_per_byte, closed);
    out.push_back(std::move(s));
  }
}

// NCCL's tree all-reduce: inside each node a chain through its members; across nodes a
// double binary tree, the second over the nodes in reverse order so that the inner
// nodes of one are leaves of the other, each entered at the other end of the node's
// chain (so the two trees leave a node through different devices and NICs). Each tree
// carries half the data up (reduce) and down (broadcast), both at once, pipelined.
// Latency: 2 x (m - 1 chain steps + floor(log2 N) tree levels), as in NCCL's tuning model.
Schedule tree_all_reduce(const std::vector<std::vector<DeviceId>>& segs) {
  Schedule s{Algorithm::tree, {Phase{}}};
  Phase& p = s.phases[0];
  auto edge = [&](DeviceId a, DeviceId b) {
    p.flows.push_back({a, b, 0.5});
    p.flows.push_back({b, a, 0.5});
  };
  const std::size_t N = segs.size();
  std::size_t max_m = 1;
  for (int mirrored = 0; mirrored < 2; ++mirrored) {
    auto head = [&](std::size_t i) { return mirrored ? segs[N - 1 - i].back() : segs[i].front(); };
    for (const auto& seg : segs) {
      for (std::size_t i = 1; i < seg.size(); ++i) edge(seg[i - 1], seg[i]);
      max_m = std::max(max_m, seg.size());
    }
    for (std::size_t i = 1; i < N; ++i) edge(head(i), head((i - 1) / 2));
  }
  const auto levels = static_cast<uint32_t>(std::bit_width(N)) - 1;
  p.steps = 2 * (static_cast<uint32_t>(max_m) - 1 + levels);
  p.net_steps = 2 * levels;
  return s;
}

// Inside-node ring phase over every segment at once (each segment its own ring).
Phase intra_phase(const std::vector<std::vector<DeviceId>>& segs, double bytes_per_byte, uint32_t steps) {
  Phase p;
  p.steps = steps;
  for (const auto& seg : segs) add_ring_flows(p, {seg}, bytes_per_byte, true);
  return p;
}

// Across-node phase: one ring per local slot j through the j-th member of every node.
Phase inter_phase(const std::vector<std::vector<DeviceId>>& segs, double bytes_per_byte, uint32_t steps) {
  Phase p;
  p.steps = steps;
  p.net_steps = steps;
  for (std::size_t j = 0; j < segs.front().size(); ++j) {
    Ring r;
    for (const auto& seg : segs) r.push_back(seg[j]);
    add_ring_flows(p, {r}, bytes_per_byte, true);
  }
  return p;
}

// Hierarchical variants for N nodes of m members each (N, m >= 2):
//   all_reduce     = reduce_scatter inside (m-1)/m . S, all_reduce across 2(N-1)/N . S/m,
//                    all_gather inside (m-1)/m . S;
//   all_gather     = all_gather across (N-1)/N . S/m, then inside (m-1)/m . S;
//   reduce_scatter = reduce_scatter inside, then across (the reverse).
void add_hierarchical(std::vector<Schedule>& out, Collective c, std::span<const DeviceId> group, const Cluster& cl) {
  const auto segs = node_segments(group, cl);
  if (segs.size() < 2 || !uniform_segments(segs) || segs.front().size() < 2) return;
  const double N = static_cast<double>(segs.size()), m = static_cast<double>(segs.front().size());
  const auto Ns = static_cast<uint32_t>(segs.size()), ms = static_cast<uint32_t>(segs.front().size());
  Schedule s{Algorithm::hierarchical, {}};
  const Phase inside = intra_phase(segs, (m - 1) / m, ms - 1);
  if (c == Collective::all_reduce) {
    s.phases = {inside, inter_phase(segs, 2 * (N - 1) / N / m, 2 * (Ns - 1)), inside};
  } else if (c == Collective::all_gather) {
    s.phases = {inter_phase(segs, (N - 1) / N / m, Ns - 1), inside};
  } else if (c == Collective::reduce_scatter) {
    s.phases = {inside, inter_phase(segs, (N - 1) / N / m, Ns - 1)};
  } else {
    return;
  }
  out.push_back(std::move(s));
}

}  // namespace

std::vector<Schedule> build_schedules(Collective c, std::span<const DeviceId> group, const Cluster& cl) {
  const auto n = static_cast<uint32_t>(group.size());
  const double nd = n;
  std::vector<Schedule> out;
  switch (c) {
    case Collective::all_reduce:
      add_ring_schedules(out, group, cl, 2 * (nd - 1) / nd, 2 * (n - 1), true, 2);
      out.push_back(tree_all_reduce(node_segments(group, cl)));
      add_hierarchical(out, c, group, cl);
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
      add_ring_schedules(out, group, cl, (nd - 1) / nd, n - 1, true, 1);
      add_hierarchical(out, c, group, cl);
      break;
    case Collective::broadcast:
      // Pipelined chain from the root: every rank but the last forwards the whole buffer.
      add_ring_schedules(out, group, cl, 1.0, n - 1, false, 1);
      break;
    case Collective::all_to_all: {
      Schedule s{Algorithm::direct, {Phase{}}};
      s.phases[0].all_pairs.assign(group.begin(), group.end());
      s.phases[0].uniform_pair_bytes = 1.0 / nd;  // each rank sends S/n to every peer
      out.push_back(std::move(s));
      break;
    }
    case Collective::send_recv: {
      Schedule s{Algorithm::direct, {Phase{}}};
      s.phases[0].flows.push_back({group[0], group[1], 1.0});
      out.push_back(std::move(s));
      break;
    }
  }
  return out;
}

}  // namespace dayzero::topology::detail
