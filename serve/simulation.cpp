// The serving simulation of one attention-DP replica (simulation.h): a Replica
// (replica.h) fed by the client's share of requests.
#include "serve/simulation.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/arith.h"
#include "serve/arrivals.h"
#include "serve/replica.h"

namespace dayzero::serve {

namespace detail {

ServeResult summarize(const std::vector<const ReplicaStats*>& replicas, double scale, size_t max_points) {
  ReplicaStats all;
  for (const ReplicaStats* r : replicas) {
    all.ttft_s.insert(all.ttft_s.end(), r->ttft_s.begin(), r->ttft_s.end());
    all.tpot_s.insert(all.tpot_s.end(), r->tpot_s.begin(), r->tpot_s.end());
    all.e2e_s.insert(all.e2e_s.end(), r->e2e_s.begin(), r->e2e_s.end());
    all.itl_s.insert(all.itl_s.end(), r->itl_s.begin(), r->itl_s.end());
    all.ttft_parts += r->ttft_parts;
    all.tpot_parts += r->tpot_parts;
    all.done += r->done;
    all.steps += r->steps;
    all.eager_steps += r->eager_steps;
    all.preemptions += r->preemptions;
    all.max_running = std::max(all.max_running, r->max_running);
    all.out_tokens += r->out_tokens;
    all.in_tokens += r->in_tokens;
    all.decodes += r->decodes;
    all.decoded_tokens += r->decoded_tokens;
    if (r->first_arrival_s >= 0 && (all.first_arrival_s < 0 || r->first_arrival_s < all.first_arrival_s))
      all.first_arrival_s = r->first_arrival_s;
    all.last_finish_s = std::max(all.last_finish_s, r->last_finish_s);
    all.window_start_s = std::max(all.window_start_s, r->window_start_s);
  }
  ServeResult out;
  out.ttft_s = latency_stats(std::move(all.ttft_s));
  out.tpot_s = latency_stats(std::move(all.tpot_s));
  out.e2e_s = latency_stats(std::move(all.e2e_s));
  out.itl_s = weighted_latency_stats(std::move(all.itl_s));
  out.duration_s =
      all.last_finish_s - (all.window_start_s >= 0 ? all.window_start_s : std::max(0.0, all.first_arrival_s));
  if (out.duration_s > 0) {
    out.output_tokens_per_s = scale * static_cast<double>(all.out_tokens) / out.duration_s;
    out.total_tokens_per_s = scale * static_cast<double>(all.out_tokens + all.in_tokens) / out.duration_s;
    out.requests_per_s = scale * static_cast<double>(out.e2e_s.count) / out.duration_s;
  }
  if (out.ttft_s.count > 0) out.ttft_parts = all.ttft_parts * (1.0 / static_cast<double>(out.ttft_s.count));
  if (out.tpot_s.count > 0) out.tpot_parts = all.tpot_parts * (1.0 / static_cast<double>(out.tpot_s.count));
  out.requests = all.done;
  out.steps = all.steps;
  out.eager_steps = all.eager_steps;
  out.preemptions = all.preemptions;
  out.max_running = all.max_running;
  out.tokens_per_decode =
      all.decodes > 0 ? static_cast<double>(all.decoded_tokens) / static_cast<double>(all.decodes) : 0;
  if (replicas.size() == 1) {  // the time series of one replica, thinned to max_points
    const auto& series = replicas.front()->series;
    const size_t stride = std::max<size_t>(1, (series.size() + max_points - 1) / std::max<size_t>(1, max_points));
    for (size_t i = 0; i < series.size(); i += stride) out.series.push_back(series[i]);
  }
  return out;
}

}  // namespace detail

namespace {

// The replica's share of the client: its requests in, its finishes back to the client
// (a closed loop sends the next), its share of the first `warmup` finishes left out
// (the replica stands for each of the dp replicas, each seeing 1/dp of the requests;
// in a closed loop with fewer in flight than replicas, for each of the busy ones).
class ClientShare : public detail::Inbox, public detail::Outlet {
 public:
  ClientShare(const Client& c, int dp)
      : arrivals_(c, dp),
        warmup_(core::ceil_div(c.warmup, c.kind == ClientKind::closed_loop
                                             ? std::clamp<int64_t>(c.concurrency, 1, int64_t{dp})
                                             : int64_t{dp})) {}
  bool empty() const override { return arrivals_.empty(); }
  double next_time() const override { return arrivals_.next_time(); }
  std::unique_ptr<detail::Seq> pop() override { return detail::new_seq(arrivals_.pop()); }
  void handoff(std::unique_ptr<detail::Seq>, double) override {
    throw std::logic_error("serving simulation: a replica serving whole requests handed one off");
  }
  bool finished(double now) override {
    arrivals_.on_finish(now);
    return finished_++ >= warmup_;
  }
  int64_t total() const { return arrivals_.total(); }
  int64_t finished_count() const { return finished_; }

 private:
  detail::Arrivals arrivals_;
  int64_t warmup_;
  int64_t finished_ = 0;
};

}  // namespace

namespace detail {

void check_serving(const Client& c, const EngineProfile& e, bool prompts) {
  if (c.kind == ClientKind::closed_loop && c.concurrency < 1)
    throw std::invalid_argument("concurrency must be at least 1, not " + std::to_string(c.concurrency));
  if (c.kind == ClientKind::open_loop && c.trace.empty() && !(c.rate_per_s > 0))
    throw std::invalid_argument("a request rate must be positive");
  if (c.requests < 1 && c.trace.empty()) throw std::invalid_argument("no requests to send");
  if (c.shape.input_len < 1 || c.shape.output_len < 1)
    throw std::invalid_argument("requests need at least one prompt and one output token");
  if (!(c.range_ratio > 0 && c.range_ratio <= 1))
    throw std::invalid_argument("the random range ratio must be in (0, 1], not " + std::to_string(c.range_ratio));
  if (e.token_budget < 1 || e.max_running < 1) throw std::invalid_argument("the engine's step budget is empty");
  if (e.recv_interval_steps < 1)
    throw std::invalid_argument("the scheduler's receive interval must be at least 1 step");
  if (prompts && !e.chunked_prefill && c.shape.input_len > e.token_budget)
    throw std::invalid_argument("without chunked prefill a prompt of " + std::to_string(c.shape.input_len) +
                                " tokens does not fit a step of " + std::to_string(e.token_budget) + " tokens");
}

PreparedPool prepare_pool(simulate::Simulator& sim, const plan::Plan& p, const EngineProfile& e, int64_t longest) {
  plan::Plan run = p;
  run.kv_block_tokens = e.kv_block_tokens;
  PreparedPool pool;
  pool.prepared = sim.prepare(run, engine_kernels(e));
  pool.kv = sim.kv_budget(*pool.prepared, e.memory);
  if (pool.kv.sequence_bytes(longest) > pool.kv.free_bytes) {
    char gb[32];
    std::snprintf(gb, sizeof gb, "%.2f", pool.kv.free_bytes / 1e9);
    throw std::invalid_argument(pool.kv.free_bytes > 0
                                    ? "the KV cache (" + std::string(gb) + " GB per rank) cannot hold one request of " +
                                          std::to_string(longest) + " tokens"
                                    : std::string("the weights, activations and runtime leave no "
                                                  "memory for a KV cache"));
  }
  return pool;
}

int64_t longest_request(const Client& c) {
  int64_t longest = c.shape.input_len + c.shape.output_len;
  for (const Request& r : c.trace) longest = std::max(longest, r.shape.input_len + r.shape.output_len);
  return longest;
}

}  // namespace detail

ServeResult simulate_serving(simulate::Simulator& sim, const plan::Plan& p, const ServeOptions& o) {
  const Client& c = o.client;
  const EngineProfile& e = o.engine;
  detail::check_serving(c, e);
  const detail::PreparedPool pool = detail::prepare_pool(sim, p, e, detail::longest_request(c));
  ClientShare client(c, p.attention.dp);
  detail::Replica replica(sim, *pool.prepared, e, pool.kv, p.speculative, detail::Role::both, client, client,
                          p.attention.dp, c.seed);
  while (client.finished_count() < client.total() && replica.next_event() < std::numeric_limits<double>::infinity())
    replica.step();
  // The replica stands for the others: dp of them, or in a closed loop the busy ones
  // (concurrency / its share: 1 request in flight keeps one replica busy, not dp).
  double replicas = p.attention.dp;
  if (c.kind == ClientKind::closed_loop)
    replicas = static_cast<double>(c.concurrency) /
               static_cast<double>(core::ceil_div(c.concurrency, int64_t{p.attention.dp}));
  ServeResult r = detail::summarize({&replica.stats()}, replicas, o.max_points);
  r.kv = pool.kv;
  return r;
}

}  // namespace dayzero::serve
