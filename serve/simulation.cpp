// The serving simulation of one attention-DP replica (simulation.h).
#include "serve/simulation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "serve/arrivals.h"
#include "serve/two_batch_overlap.h"

namespace dayzero::serve {

namespace {

using detail::Arrivals;

struct Seq {
  Request req;
  int64_t target = 0;        // tokens to have in the KV cache before decoding: the prompt (after a preemption:
                             // the prompt and the tokens generated so far, recomputed)
  int64_t kv_tokens = 0;     // tokens in its KV cache
  int64_t generated = 0;     // output tokens produced (the first comes with the end of the prompt)
  int64_t decode_steps = 0;  // steps that decoded it (output tokens - 1 unless drafts were accepted)
  double first_token_s = -1, last_token_s = 0;
  double kv_bytes = 0;                      // reserved in the replica's budget
  LatencyParts at_arrival, at_first_token;  // the replica's running totals then
  double inflight = 0;                      // requests in flight in the whole plan when it arrived
  bool prefilled() const { return kv_tokens >= target; }
};

class Replica {
 public:
  Replica(simulate::Simulator& sim, const simulate::PreparedPlan& prepared, const ServeOptions& o,
          const simulate::KvBudget& kv, const plan::Plan& p)
      : sim_(sim),
        prepared_(prepared),
        eng_(o.engine),
        kv_(kv),
        dp_(p.attention.dp),
        arrivals_(o.client, p.attention.dp),
        warmup_(o.client.warmup),
        ratio_(o.engine.future_tokens.init),
        spec_(p.speculative),
        width_(spec_.verify_width()),
        accept_rng_(o.client.seed ^ kAcceptSeed) {}

  ServeResult run(size_t max_points);

 private:
  // A sequence scheduled in the step being built: one decode token, or a prompt chunk.
  struct Scheduled {
    Seq* seq;
    int64_t tokens;
    bool decode;
    int64_t budget;  // of the step's budget
  };

  bool reserve(Seq& s, int64_t tokens);
  void preempt_last();
  void admit_arrived();
  void schedule_mixed();
  void schedule_prefill_first();
  void add_decodes(int64_t budget_each);
  int64_t tokens_accepted(const Seq& s);
  bool add_prefill(Seq& s);
  void admit_waiting();
  bool estimate_admits(const Seq& s) const;
  void decay_ratio();
  bool has_prefill() const {
    return std::any_of(step_.begin(), step_.end(), [](const Scheduled& e) { return !e.decode; });
  }
  simulate::StepBatch batch() const;
  void apply_step(double step_s);
  void finish(Seq& s);
  void record();
  LatencyParts elapsed_at(double t) const;

  simulate::Simulator& sim_;
  const simulate::PreparedPlan& prepared_;
  const EngineProfile& eng_;
  simulate::KvBudget kv_;
  int dp_;
  Arrivals arrivals_;
  int64_t warmup_;
  double now_ = 0, kv_used_ = 0, first_arrival_ = -1, last_finish_ = 0, window_start_ = -1;
  std::deque<std::unique_ptr<Seq>> waiting_;   // FCFS; preempted sequences go back to the front
  std::vector<std::unique_ptr<Seq>> running_;  // in admission order: the last admitted is preempted first
  std::vector<Scheduled> step_;                // the step being built
  int64_t budget_ = 0;                         // its tokens left
  double ratio_ = 0;                           // SGLang's new-token ratio (FutureTokenEstimate)
  // Speculative decoding: each decode verifies width_ tokens; the drafts are accepted
  // position by position with the plan's rates, drawn from their own stream.
  static constexpr uint64_t kAcceptSeed = 0x5bd1e995;
  plan::SpeculativeDecoding spec_;
  int64_t width_;
  std::mt19937_64 accept_rng_;
  int64_t recv_counter_ = 0;  // decode steps since the scheduler last took in arrivals
  // The running totals at the end of the steps since the scheduler last took in
  // arrivals (with their times), so that a request's parts count from its arrival.
  std::deque<std::pair<double, LatencyParts>> since_recv_;
  int64_t decodes_ = 0, decoded_tokens_ = 0;  // decodes run and the tokens they emitted
  int64_t done_ = 0, preemptions_ = 0, steps_ = 0, max_running_ = 0, out_tokens_ = 0, in_tokens_ = 0;
  std::vector<double> ttft_, tpot_, e2e_;
  LatencyParts elapsed_;                  // every step so far, by part
  LatencyParts ttft_parts_, tpot_parts_;  // sums over the measured requests
  std::vector<std::pair<double, int64_t>> itl_;
  std::vector<ServePoint> series_;
};

// Makes room in the budget for `s` to hold `tokens`; false when even preempting
// every later-admitted sequence cannot.
bool Replica::reserve(Seq& s, int64_t tokens) {
  const double need = std::max(0.0, kv_.sequence_bytes(tokens) - s.kv_bytes);
  while (kv_used_ + need > kv_.free_bytes) {
    if (running_.empty() || running_.back().get() == &s) return false;
    preempt_last();
  }
  kv_used_ += need;
  s.kv_bytes += need;
  return true;
}

// Recompute preemption (vLLM V1's and SGLang's default): the last admitted running
// sequence frees its KV cache and goes back to the front of the queue; it will
// prefill its prompt and the tokens it generated again.
void Replica::preempt_last() {
  std::unique_ptr<Seq> s = std::move(running_.back());
  running_.pop_back();
  for (auto it = step_.begin(); it != step_.end(); ++it)
    if (it->seq == s.get()) {  // scheduled already in this step: it leaves it, its tokens go back to the budget
      budget_ += it->budget;
      step_.erase(it);
      break;
    }
  kv_used_ -= s->kv_bytes;
  s->kv_bytes = 0;
  s->kv_tokens = 0;
  s->target = s->req.shape.input_len + s->generated;
  ++preemptions_;
  ratio_ = eng_.future_tokens.init;  // a retraction: back to the cautious estimate
  waiting_.push_front(std::move(s));
}

// The running totals at the end of the first step that ended at or after `t`
// (now's, when none did since the last receive).
LatencyParts Replica::elapsed_at(double t) const {
  for (const auto& [end_s, parts] : since_recv_)
    if (end_s >= t) return parts;
  return elapsed_;
}

// Arrivals up to now join the queue; each counts the requests in flight once every
// arrival of the same instant is in (the plan's: the replica's times dp).
void Replica::admit_arrived() {
  const size_t first_new = waiting_.size();
  while (!arrivals_.empty() && arrivals_.next_time() <= now_) {
    auto s = std::make_unique<Seq>();
    s->req = arrivals_.pop();
    s->at_arrival = elapsed_at(s->req.arrival_s);
    if (first_arrival_ < 0) first_arrival_ = s->req.arrival_s;
    s->target = s->req.shape.input_len;
    waiting_.push_back(std::move(s));
  }
  const auto inflight = static_cast<double>((waiting_.size() + running_.size()) * static_cast<size_t>(dp_));
  for (size_t i = first_new; i < waiting_.size(); ++i) waiting_[i]->inflight = inflight;
}

// A decode for every running sequence whose prompt is in its cache: one token, or the
// verify step's drafts + 1 (their cache slots held until the step is done); each
// takes `budget_each` of the step's budget.
void Replica::add_decodes(int64_t budget_each) {
  for (size_t i = 0; i < running_.size() && budget_ > 0; ++i) {
    Seq& s = *running_[i];
    if (!s.prefilled()) continue;
    if (!reserve(s, s.kv_tokens + width_)) return;  // s itself was the last: it waits for room
    const int64_t used = std::min(budget_, budget_each);
    step_.push_back({&s, width_, true, used});
    budget_ -= used;
  }
}

// Tokens a decode of `s` emits: 1 without drafts; with them, 1 + the drafts accepted
// in order until the first rejection, never past the request's output length.
int64_t Replica::tokens_accepted(const Seq& s) {
  int64_t n = 1;
  for (int i = 0; i < spec_.draft_tokens && width_ > 1; ++i, ++n)
    if (std::uniform_real_distribution<double>(0, 1)(accept_rng_) >= spec_.acceptance_at(i)) break;
  return std::min(n, s.req.shape.output_len - s.generated);
}

// The next chunk of `s`'s prompt, as much as the budget and the cache allow.
bool Replica::add_prefill(Seq& s) {
  const int64_t remaining = s.target - s.kv_tokens, chunk = std::min(remaining, budget_);
  if (chunk <= 0 || (!eng_.chunked_prefill && chunk < remaining)) return false;
  if (!reserve(s, s.kv_tokens + chunk)) return false;
  step_.push_back({&s, chunk, false, chunk});
  budget_ -= chunk;
  return true;
}

// New sequences, first come first served, while the step and the cache have room.
void Replica::admit_waiting() {
  while (!waiting_.empty() && budget_ > 0 && static_cast<int64_t>(running_.size()) < eng_.max_running) {
    Seq& s = *waiting_.front();
    if (s.generated == 0 && s.kv_tokens == 0 && eng_.prefix_caching)
      s.kv_tokens = std::min(s.req.shape.cached_prefix, s.target - 1);  // hits are not recomputed
    const int64_t remaining = s.target - s.kv_tokens, chunk = std::min(remaining, budget_);
    const bool whole_only = !eng_.chunked_prefill || (eng_.chunk_first_prompt_only && has_prefill());
    if (whole_only && chunk < remaining) return;  // a whole prompt or none: the head waits
    // Room for the first chunk, or (no eviction) for the request to its last token.
    const int64_t hold =
        eng_.reserve_whole_request ? s.req.shape.input_len + s.req.shape.output_len : s.kv_tokens + chunk;
    if (kv_used_ + kv_.sequence_bytes(hold) > kv_.free_bytes) return;  // the head waits for room
    if (eng_.future_tokens.on && !estimate_admits(s)) return;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    reserve(*running_.back(), hold);
    add_prefill(*running_.back());
  }
}

// Whether the cache holds what every running request and `s` are estimated to still
// need (FutureTokenEstimate): the tokens each holds or will hold for its prompt, and
// ratio x its output left, capped.
bool Replica::estimate_admits(const Seq& s) const {
  const FutureTokenEstimate& f = eng_.future_tokens;
  const auto need = [&](const Seq& q) {
    const int64_t left = std::min(q.req.shape.output_len - q.generated, f.clip_tokens);
    return kv_.sequence_bytes(std::max(q.kv_tokens, q.target) +
                              static_cast<int64_t>(std::ceil(ratio_ * static_cast<double>(left))));
  };
  double total = need(s);
  for (const auto& r : running_) total += need(*r);
  return total <= kv_.free_bytes;
}

// After a step without a retraction the estimate grows bolder, down to its floor.
void Replica::decay_ratio() {
  const FutureTokenEstimate& f = eng_.future_tokens;
  const double floor = f.init * f.min_factor;
  ratio_ = std::max(floor, ratio_ - (f.init - floor) / static_cast<double>(std::max<int64_t>(1, f.decay_steps)));
}

// vLLM V1 / TensorRT-LLM: running sequences first (decodes, then unfinished prompt
// chunks), new requests in the rest of the token budget.
void Replica::schedule_mixed() {
  budget_ = eng_.token_budget;
  add_decodes(width_);  // vLLM counts the drafts in the token budget
  for (size_t i = 0; i < running_.size() && budget_ > 0; ++i)
    if (!running_[i]->prefilled()) add_prefill(*running_[i]);
  admit_waiting();
}

// SGLang: a step of prompt chunks (the unfinished one first, then new requests)
// whenever there is one to run; otherwise every running sequence decodes.
void Replica::schedule_prefill_first() {
  budget_ = eng_.token_budget;
  for (size_t i = 0; i < running_.size() && budget_ > 0; ++i)
    if (!running_[i]->prefilled()) add_prefill(*running_[i]);
  admit_waiting();
  if (!step_.empty()) return;
  budget_ = eng_.max_running;
  add_decodes(1);
}

simulate::StepBatch Replica::batch() const {
  simulate::StepBatch b;
  b.decode_width = width_;
  for (const auto& e : step_) {
    if (e.decode) b.decode_contexts.push_back(e.seq->kv_tokens);
    else b.prefills.push_back({e.tokens, e.seq->kv_tokens, e.seq->kv_tokens + e.tokens == e.seq->target});
  }
  return b;
}

void Replica::finish(Seq& s) {
  last_finish_ = now_;
  kv_used_ -= s.kv_bytes;
  s.kv_bytes = 0;
  arrivals_.on_finish(now_);
  if (done_++ < warmup_) {
    window_start_ = now_;  // throughput counts from the last warm-up request's end
    return;
  }
  const int64_t out = s.req.shape.output_len;
  // The admission delay is counted in the request's own decode steps (not tokens: a
  // speculative step emits several).
  const double own_step_s = s.decode_steps > 0 ? (now_ - s.first_token_s) / static_cast<double>(s.decode_steps) : 0;
  const double overhead = eng_.request_overhead_s + eng_.request_overhead_per_inflight_s * s.inflight +
                          eng_.admission_delay_steps * own_step_s;
  ttft_.push_back(s.first_token_s - s.req.arrival_s + overhead);
  e2e_.push_back(now_ - s.req.arrival_s + overhead);
  LatencyParts ttft = s.at_first_token - s.at_arrival;
  ttft.request_overhead_s = overhead;
  ttft.inflight = s.inflight;
  ttft_parts_ += ttft;
  if (out > 1) {
    tpot_.push_back((now_ - s.first_token_s) / static_cast<double>(out - 1));
    tpot_parts_ += (elapsed_ - s.at_first_token) * (1.0 / static_cast<double>(out - 1));
  }
  out_tokens_ += out;
  in_tokens_ += s.req.shape.input_len;
}

// The step's tokens: each decode (and each prompt's last chunk) samples one.
void Replica::apply_step(double step_s) {
  const double start = now_;
  now_ += step_s;
  ++steps_;
  int64_t same_gap = 0;  // sequences whose previous token came at the step's start
  for (const auto& e : step_) {
    Seq& s = *e.seq;
    const int64_t emitted = e.decode ? tokens_accepted(s) : 1;
    if (e.decode) {
      ++s.decode_steps;
      ++decodes_;
      decoded_tokens_ += emitted;
    }
    s.kv_tokens += e.decode ? emitted : e.tokens;  // rejected drafts leave the cache
    if (!e.decode && !s.prefilled()) continue;     // a chunk before the prompt's last: no token
    if (s.generated == 0) {
      s.first_token_s = now_;
      s.at_first_token = elapsed_;
    } else if (s.last_token_s == start) ++same_gap;
    else itl_.push_back({now_ - s.last_token_s, 1});
    s.last_token_s = now_;
    s.generated += emitted;  // several at once after a speculative verify: one gap for the client
  }
  if (same_gap > 0) itl_.push_back({step_s, same_gap});
  for (size_t i = 0; i < running_.size();) {
    if (running_[i]->generated >= running_[i]->req.shape.output_len) {
      finish(*running_[i]);
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void Replica::record() {
  series_.push_back({now_, static_cast<int64_t>(waiting_.size()), static_cast<int64_t>(running_.size()),
                     kv_.free_bytes > 0 ? kv_used_ / kv_.free_bytes : 0});
}

// The draft's forwards follow the verify step's on the same GPUs.
void add_draft(simulate::StepTime& step, const simulate::StepTime& draft) {
  step.time_s += draft.time_s;
  for (const auto& [kind, s] : draft.by_kind_s) step.by_kind_s[kind] += s;
  for (size_t f = 0; f < simulate::kTimeFigures; ++f) step.by_figure_s[f] += draft.by_figure_s[f];
}

ServeResult Replica::run(size_t max_points) {
  while (done_ < arrivals_.total()) {
    const bool idle = running_.empty() && waiting_.empty();
    if (idle || recv_counter_ >= eng_.recv_interval_steps) {
      admit_arrived();
      recv_counter_ = 0;
      since_recv_.clear();
    }
    if (running_.empty() && waiting_.empty()) {
      ratio_ = eng_.future_tokens.init;  // an idle engine starts cautious again
      if (arrivals_.empty()) break;
      now_ = std::max(now_, arrivals_.next_time());
      continue;
    }
    step_.clear();
    if (eng_.policy == PrefillPolicy::mixed) schedule_mixed();
    else schedule_prefill_first();
    if (step_.empty())
      throw std::logic_error("serving simulation: nothing to schedule with " + std::to_string(running_.size()) +
                             " running and " + std::to_string(waiting_.size()) + " waiting");
    max_running_ = std::max(max_running_, static_cast<int64_t>(running_.size()));
    const int64_t preempted_before = preemptions_;
    // SchedulerRecvSkipper's weights: a decode step counts 1, any other reaches the interval.
    recv_counter_ += has_prefill() ? eng_.recv_interval_steps : 1;
    const simulate::StepBatch b = batch();
    simulate::StepTime st = engine_step_time(sim_, prepared_, b, eng_);
    if (width_ > 1) add_draft(st, sim_.draft_time(prepared_, b));
    // The host's time per step: after the GPU's, or beside it when scheduling overlaps.
    const double host_s =
        eng_.overlap_scheduling ? std::max(0.0, eng_.step_overhead_s - st.time_s) : eng_.step_overhead_s;
    for (size_t f = 0; f < simulate::kTimeFigures; ++f) elapsed_.figure_s[f] += st.by_figure_s[f];
    elapsed_.step_overhead_s += host_s;
    elapsed_.steps += 1;
    apply_step(st.time_s + host_s);
    if (eng_.recv_interval_steps > 1) since_recv_.push_back({now_, elapsed_});
    if (preemptions_ == preempted_before) decay_ratio();
    record();
  }
  ServeResult r;
  r.ttft_s = latency_stats(std::move(ttft_));
  r.tpot_s = latency_stats(std::move(tpot_));
  r.e2e_s = latency_stats(std::move(e2e_));
  r.itl_s = weighted_latency_stats(std::move(itl_));
  r.duration_s = last_finish_ - (window_start_ >= 0 ? window_start_ : std::max(0.0, first_arrival_));
  if (r.duration_s > 0) {
    r.output_tokens_per_s = static_cast<double>(dp_) * static_cast<double>(out_tokens_) / r.duration_s;
    r.total_tokens_per_s = static_cast<double>(dp_) * static_cast<double>(out_tokens_ + in_tokens_) / r.duration_s;
    r.requests_per_s = static_cast<double>(dp_) * static_cast<double>(r.e2e_s.count) / r.duration_s;
  }
  if (r.ttft_s.count > 0) r.ttft_parts = ttft_parts_ * (1.0 / static_cast<double>(r.ttft_s.count));
  if (r.tpot_s.count > 0) r.tpot_parts = tpot_parts_ * (1.0 / static_cast<double>(r.tpot_s.count));
  r.requests = done_;
  r.steps = steps_;
  r.preemptions = preemptions_;
  r.max_running = max_running_;
  r.tokens_per_decode = decodes_ > 0 ? static_cast<double>(decoded_tokens_) / static_cast<double>(decodes_) : 0;
  r.kv = kv_;
  const size_t stride = std::max<size_t>(1, (series_.size() + max_points - 1) / std::max<size_t>(1, max_points));
  for (size_t i = 0; i < series_.size(); i += stride) r.series.push_back(series_[i]);
  return r;
}

}  // namespace

ServeResult simulate_serving(simulate::Simulator& sim, const plan::Plan& p, const ServeOptions& o) {
  const Client& c = o.client;
  const EngineProfile& e = o.engine;
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
  if (!e.chunked_prefill && c.shape.input_len > e.token_budget)
    throw std::invalid_argument("without chunked prefill a prompt of " + std::to_string(c.shape.input_len) +
                                " tokens does not fit a step of " + std::to_string(e.token_budget) + " tokens");
  plan::Plan run = p;
  run.kv_block_tokens = e.kv_block_tokens;
  const auto prepared = sim.prepare(run);
  const simulate::KvBudget kv = sim.kv_budget(*prepared, e.memory);
  int64_t longest = c.shape.input_len + c.shape.output_len;
  for (const Request& r : c.trace) longest = std::max(longest, r.shape.input_len + r.shape.output_len);
  if (kv.sequence_bytes(longest) > kv.free_bytes) {
    char gb[32];
    std::snprintf(gb, sizeof gb, "%.2f", kv.free_bytes / 1e9);
    throw std::invalid_argument(kv.free_bytes > 0
                                    ? "the KV cache (" + std::string(gb) + " GB per rank) cannot hold one request of " +
                                          std::to_string(longest) + " tokens"
                                    : std::string("the weights, activations and runtime leave no "
                                                  "memory for a KV cache"));
  }
  Replica replica(sim, *prepared, o, kv, p);
  return replica.run(o.max_points);
}

}  // namespace dayzero::serve
