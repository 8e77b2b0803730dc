// Disaggregated serving (disaggregated.h): the client, the router and the KV transfer
// between the pools around prefill and decode replicas run side by side.
#include "serve/disaggregated.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "serve/arrivals.h"
#include "serve/replica.h"
#include "simulate/disaggregated.h"

namespace dayzero::serve {

namespace {

using detail::Seq;

// Sequences that reach one replica, in the order of their times.
class TimedQueue : public detail::Inbox {
 public:
  bool empty() const override { return items_.empty(); }
  double next_time() const override { return items_.front().first; }
  std::unique_ptr<Seq> pop() override {
    std::unique_ptr<Seq> s = std::move(items_.front().second);
    items_.pop_front();
    return s;
  }
  void push(double t, std::unique_ptr<Seq> s) {
    auto it = items_.end();
    while (it != items_.begin() && std::prev(it)->first > t) --it;
    items_.insert(it, {t, std::move(s)});
  }

 private:
  std::deque<std::pair<double, std::unique_ptr<Seq>>> items_;
};

// The client, the router over both pools' replicas and the KV transfer between them.
class Fabric : public detail::Outlet {
 public:
  Fabric(const Client& c, size_t prefill_replicas, size_t decode_replicas, std::function<double(int64_t)> transfer_s,
         double handoff_s)
      : arrivals_(c, 1),
        warmup_(c.warmup),
        prefill_in_(prefill_replicas),
        decode_in_(decode_replicas),
        transfer_s_(std::move(transfer_s)),
        handoff_s_(handoff_s) {
    route_arrivals();
  }
  TimedQueue& prefill_inbox(size_t i) { return prefill_in_[i]; }
  TimedQueue& decode_inbox(size_t i) { return decode_in_[i]; }

  // The prompt is cached and the first token sampled: after the engine's handoff time
  // the cache moves to the next decode replica, which streams the first token with its
  // first step of the sequence.
  void handoff(std::unique_ptr<Seq> s, double now) override {
    const double moved_s = transfer_s_(s->kv_tokens);
    transfer_sum_s_ += moved_s;
    ++transfers_;
    const double at_s = now + handoff_s_ + moved_s;
    s->last_token_s = at_s;
    s->carried.kv_transfer_s += moved_s;
    s->carried.handoff_s += handoff_s_;
    s->carried.handoffs += 1;
    s->first_token_pending = true;
    TimedQueue& q = decode_in_[next_decode_++ % decode_in_.size()];
    q.push(at_s, std::move(s));
  }
  bool finished(double now) override {
    arrivals_.on_finish(now);
    route_arrivals();
    return finished_++ >= warmup_;
  }
  int64_t total() const { return arrivals_.total(); }
  int64_t finished_count() const { return finished_; }
  double mean_transfer_s() const { return transfers_ > 0 ? transfer_sum_s_ / static_cast<double>(transfers_) : 0; }

 private:
  void route_arrivals() {
    while (!arrivals_.empty()) {
      const Request r = arrivals_.pop();
      const int64_t in_flight = arrivals_sent_++ - finished_ + 1;
      std::unique_ptr<Seq> s = detail::new_seq(r);
      s->inflight = static_cast<double>(in_flight);
      prefill_in_[next_prefill_++ % prefill_in_.size()].push(r.arrival_s, std::move(s));
    }
  }

  detail::Arrivals arrivals_;
  int64_t warmup_;
  std::vector<TimedQueue> prefill_in_, decode_in_;
  std::function<double(int64_t)> transfer_s_;
  double handoff_s_;
  size_t next_prefill_ = 0, next_decode_ = 0;
  int64_t arrivals_sent_ = 0, finished_ = 0, transfers_ = 0;
  double transfer_sum_s_ = 0;
};

void check_pool(const Pool& p, const char* name) {
  if (p.workers < 1)
    throw std::invalid_argument(std::string("the ") + name + " pool needs at least one worker, not " +
                                std::to_string(p.workers));
}

}  // namespace

int disaggregated_devices(const DisaggOptions& o) {
  return o.prefill.workers * o.prefill.plan.world_size() + o.decode.workers * o.decode.plan.world_size();
}

double kv_transfer_s(const topology::Cluster& c, const DisaggOptions& o, const simulate::KvBudget& decode_kv,
                     int64_t tokens) {
  plan::Plan p = o.decode.plan;
  p.disaggregated.prefill_workers = o.prefill.workers;
  p.disaggregated.decode_workers = o.decode.workers;
  const plan::Plan& w = o.prefill.plan;
  p.disaggregated.prefill = {w.pp, w.attention, w.moe, w.workload.batch};
  return simulate::kv_transfer_s(c, p, decode_kv.sequence_bytes(tokens));
}

ServeResult simulate_disaggregated(simulate::Simulator& sim, const DisaggOptions& o) {
  detail::check_serving(o.client, o.prefill.engine);
  detail::check_serving(o.client, o.decode.engine, false);
  check_pool(o.prefill, "prefill");
  check_pool(o.decode, "decode");
  const topology::Cluster& cluster = sim.cluster();
  if (disaggregated_devices(o) > static_cast<int>(cluster.num_devices()))
    throw std::invalid_argument("the pools need " + std::to_string(disaggregated_devices(o)) +
                                " devices, the cluster has " + std::to_string(cluster.num_devices()));
  const int64_t longest = detail::longest_request(o.client);
  const detail::PreparedPool prefill = detail::prepare_pool(sim, o.prefill.plan, o.prefill.engine, longest);
  const detail::PreparedPool decode = detail::prepare_pool(sim, o.decode.plan, o.decode.engine, longest);
  // Transfer times by prompt length, computed once per length.
  std::map<int64_t, double> transfer_by_tokens;
  auto transfer = [&](int64_t tokens) {
    auto [it, fresh] = transfer_by_tokens.try_emplace(tokens, 0.0);
    if (fresh) it->second = kv_transfer_s(cluster, o, decode.kv, tokens);
    return it->second;
  };
  const auto replicas = [](const Pool& p) {
    return static_cast<size_t>(p.workers) * static_cast<size_t>(p.plan.attention.dp);
  };
  Fabric fabric(o.client, replicas(o.prefill), replicas(o.decode), transfer, o.decode.engine.handoff_s);
  std::vector<std::unique_ptr<detail::Replica>> all;
  for (size_t i = 0; i < replicas(o.prefill); ++i)
    all.push_back(std::make_unique<detail::Replica>(
        sim, *prefill.prepared, o.prefill.engine, prefill.kv, o.prefill.plan.speculative, detail::Role::prefill,
        fabric.prefill_inbox(i), fabric, o.prefill.plan.attention.dp, o.client.seed + i));
  for (size_t i = 0; i < replicas(o.decode); ++i)
    all.push_back(std::make_unique<detail::Replica>(
        sim, *decode.prepared, o.decode.engine, decode.kv, o.decode.plan.speculative, detail::Role::decode,
        fabric.decode_inbox(i), fabric, o.decode.plan.attention.dp, o.client.seed + 7919 * (i + 1)));
  // The replica whose clock is earliest moves on, one step at a time. What it hands on
  // is timed at the end of its step; a replica whose clock is already past that time
  // takes it in at its next step, as an engine busy with a step does.
  while (fabric.finished_count() < fabric.total()) {
    detail::Replica* next = nullptr;
    double when = std::numeric_limits<double>::infinity();
    for (const auto& r : all)
      if (const double t = r->next_event(); t < when) when = t, next = r.get();
    if (!next) break;
    next->step();
  }
  std::vector<const detail::ReplicaStats*> stats;
  for (const auto& r : all) stats.push_back(&r->stats());
  ServeResult r = detail::summarize(stats, 1.0, 0);
  r.kv = decode.kv;
  r.steps = 0;  // per replica, as for one replica: the busiest's
  for (const auto& rep : all) r.steps = std::max(r.steps, rep->stats().steps);
  r.kv_transfer_s = fabric.mean_transfer_s();
  return r;
}

ServeResult serve_plan(simulate::Simulator& sim, const plan::Plan& p, const ProfileOf& profile_of,
                       const Client& client) {
  if (!p.disaggregated.on()) {
    ServeOptions o;
    o.engine = profile_of(p);
    o.client = client;
    o.max_points = 0;
    return simulate_serving(sim, p, o);
  }
  DisaggOptions d;
  d.prefill = {p.prefill_worker(), p.disaggregated.prefill_workers, {}};
  d.decode = {p.decode_worker(), p.disaggregated.decode_workers, {}};
  d.prefill.engine = profile_of(d.prefill.plan);
  d.decode.engine = profile_of(d.decode.plan);
  d.client = client;
  return simulate_disaggregated(sim, d);
}

}  // namespace dayzero::serve
