// One engine instance's scheduler, step by step (replica.h).
#include "serve/replica.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "serve/two_batch_overlap.h"

namespace dayzero::serve::detail {

namespace {

// The draft's forwards follow the verify step's on the same GPUs.
void add_draft(simulate::StepTime& step, const simulate::StepTime& draft) {
  step.time_s += draft.time_s;
  for (const auto& [kind, s] : draft.by_kind_s) step.by_kind_s[kind] += s;
  for (size_t f = 0; f < simulate::kTimeFigures; ++f) step.by_figure_s[f] += draft.by_figure_s[f];
}

}  // namespace

std::unique_ptr<Seq> new_seq(const Request& r) {
  auto s = std::make_unique<Seq>();
  s->req = r;
  s->target = r.shape.input_len;
  return s;
}

Replica::Replica(simulate::Simulator& sim, const simulate::PreparedPlan& prepared, const EngineProfile& engine,
                 const simulate::KvBudget& kv, const plan::SpeculativeDecoding& spec, Role role, Inbox& in, Outlet& out,
                 int dp, uint64_t seed)
    : sim_(sim),
      prepared_(prepared),
      eng_(engine),
      kv_(kv),
      role_(role),
      in_(in),
      out_(out),
      dp_(dp),
      ratio_(engine.future_tokens.init),
      spec_(spec),
      width_(spec.verify_width()),
      accept_rng_(seed ^ kAcceptSeed),
      adp_rng_(seed ^ kAdpSeed),
      attention_dp_(dp >= 2 && sim.model().config.is_moe()) {}

double Replica::next_event() const {
  if (busy()) return now_;
  return in_.empty() ? std::numeric_limits<double>::infinity() : std::max(now_, in_.next_time());
}

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
  ++st_.preemptions;
  ratio_ = eng_.future_tokens.init;  // a retraction: back to the cautious estimate
  waiting_.push_front(std::move(s));
}

// The running totals at the end of the first step that ended at or after `t` (now's,
// when none did): a request waits from there, though the scheduler took it in later.
LatencyParts Replica::elapsed_at(double t) const {
  for (const auto& [end_s, parts] : step_ends_)
    if (end_s >= t) return parts;
  return elapsed_;
}

// Arrivals up to `cutoff` (before it, when `strict`) join the queue; each counts the
// requests in flight once every arrival admitted with it is in (the plan's: the
// replica's times dp).
// A sequence that arrives with its request complete (Role::decode, a single output
// token) finishes at once.
void Replica::admit_arrived(double cutoff, bool strict) {
  const size_t first_new = waiting_.size();
  while (!in_.empty() && (strict ? in_.next_time() < cutoff : in_.next_time() <= cutoff)) {
    std::unique_ptr<Seq> s = in_.pop();
    s->at_arrival = role_ == Role::decode ? elapsed_ - s->carried : elapsed_at(s->req.arrival_s);
    if (role_ == Role::decode) s->at_first_token = elapsed_;  // its first token came from the prefill pool
    if (s->generated >= s->req.shape.output_len) {
      if (s->first_token_pending) s->first_token_s = now_;
      finish(*s);
      continue;
    }
    if (st_.first_arrival_s < 0 || s->req.arrival_s < st_.first_arrival_s) st_.first_arrival_s = s->req.arrival_s;
    waiting_.push_back(std::move(s));
    ++arrivals_;
  }
  if (role_ != Role::both) return;  // in a disaggregated deployment the client counts them
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
  if (role_ == Role::decode) admit_waiting();  // arrivals with their prompt cached join this step's decodes
  add_decodes(width_);                         // vLLM counts the drafts in the token budget
  if (hold_prompts_) return;
  for (size_t i = 0; i < running_.size() && budget_ > 0; ++i)
    if (!running_[i]->prefilled()) add_prefill(*running_[i]);
  admit_waiting();
}

// SGLang: a step of prompt chunks (the unfinished one first, then new requests)
// whenever there is one to run; otherwise every running sequence decodes.
void Replica::schedule_prefill_first() {
  budget_ = eng_.token_budget;
  for (size_t i = 0; i < running_.size() && budget_ > 0 && !hold_prompts_; ++i)
    if (!running_[i]->prefilled()) add_prefill(*running_[i]);
  if (!hold_prompts_) admit_waiting();
  if (!step_.empty()) return;
  budget_ = eng_.max_running;
  add_decodes(1);
}

void Replica::schedule() {
  if (eng_.policy == PrefillPolicy::mixed) schedule_mixed();
  else schedule_prefill_first();
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

// Its cache blocks go back to the budget.
void Replica::release(Seq& s) {
  kv_used_ -= s.kv_bytes;
  s.kv_bytes = 0;
}

void Replica::finish(Seq& s) {
  st_.last_finish_s = now_;
  release(s);
  ++st_.done;
  if (!out_.finished(now_)) {
    st_.window_start_s = now_;  // throughput counts from the last warm-up request's end
    return;
  }
  const int64_t out = s.req.shape.output_len;
  // The admission delay is counted in the request's own decode steps (not tokens: a
  // speculative step emits several), once for each engine that takes the request up: a
  // disaggregated request reaches the decode pool's engine as a new request of its own.
  const double own_step_s = s.decode_steps > 0 ? (now_ - s.first_token_s) / static_cast<double>(s.decode_steps) : 0;
  const double overhead = eng_.request_overhead_s + eng_.request_overhead_per_inflight_s * s.inflight +
                          eng_.admission_delay_steps * own_step_s * s.carried.admissions();
  st_.ttft_s.push_back(s.first_token_s - s.req.arrival_s + overhead);
  st_.e2e_s.push_back(now_ - s.req.arrival_s + overhead);
  LatencyParts ttft = s.at_first_token - s.at_arrival;
  ttft.request_overhead_s = overhead;
  ttft.inflight = s.inflight;
  st_.ttft_parts += ttft;
  if (out > 1) {
    st_.tpot_s.push_back((now_ - s.first_token_s) / static_cast<double>(out - 1));
    st_.tpot_parts += (elapsed_ - s.at_first_token) * (1.0 / static_cast<double>(out - 1));
  }
  st_.out_tokens += out;
  st_.in_tokens += s.req.shape.input_len;
}

// The step's tokens: each decode (and each prompt's last chunk) samples one.
void Replica::apply_step(double step_s) {
  const double start = now_;
  now_ += step_s;
  ++st_.steps;
  int64_t same_gap = 0;  // sequences whose previous token came at the step's start
  for (const auto& e : step_) {
    Seq& s = *e.seq;
    const int64_t emitted = e.decode ? tokens_accepted(s) : 1;
    if (e.decode) {
      ++s.decode_steps;
      ++st_.decodes;
      st_.decoded_tokens += emitted;
    }
    s.kv_tokens += e.decode ? emitted : e.tokens;  // rejected drafts leave the cache
    if (!e.decode && !s.prefilled()) continue;     // a chunk before the prompt's last: no token
    if (s.generated == 0 || s.first_token_pending) {
      s.first_token_s = now_;
      s.at_first_token = elapsed_;
      s.first_token_pending = false;
    } else if (s.last_token_s == start) ++same_gap;
    else st_.itl_s.push_back({now_ - s.last_token_s, 1});
    s.last_token_s = now_;
    s.generated += emitted;  // several at once after a speculative verify: one gap for the client
  }
  if (same_gap > 0) st_.itl_s.push_back({step_s, same_gap});
  for (size_t i = 0; i < running_.size();) {
    Seq& s = *running_[i];
    if (s.generated >= s.req.shape.output_len) {
      finish(s);
    } else if (role_ == Role::prefill && s.generated > 0) {  // its prompt is done: on to a decode replica
      release(s);
      s.carried += elapsed_ - s.at_arrival;
      out_.handoff(std::move(running_[i]), now_);
    } else {
      ++i;
      continue;
    }
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void Replica::record() {
  st_.series.push_back({now_, static_cast<int64_t>(waiting_.size()), static_cast<int64_t>(running_.size()),
                        kv_.free_bytes > 0 ? kv_used_ / kv_.free_bytes : 0});
}

void Replica::step() {
  const bool idle = running_.empty() && waiting_.empty();
  if (idle || recv_counter_ >= eng_.recv_interval_steps) {
    // Overlapped, the batch of the step about to run was formed as the last one started
    // (TensorRT-LLM's _executor_loop_overlap, SGLang's event_loop_overlap): what arrived
    // during the last step joins the one after, and so does a closed loop's next request,
    // sent as its predecessor's last token came out at that step's start (the client's
    // round trip is longer than the host's turn from one batch to the next). An idle
    // engine takes a request in as it comes.
    const bool overlapped = eng_.overlap_scheduling && !idle;
    const double cutoff = overlapped ? last_step_start_s_ : now_;
    admit_arrived(cutoff, overlapped);
    recv_counter_ = 0;
    // Arrivals still to come (at or after the cutoff) count from a step ending after it.
    while (!step_ends_.empty() && step_ends_.front().first < cutoff) step_ends_.pop_front();
  }
  if (running_.empty() && waiting_.empty()) {
    ratio_ = eng_.future_tokens.init;  // an idle engine starts cautious again
    if (!in_.empty()) now_ = std::max(now_, in_.next_time());
    return;
  }
  step_.clear();
  hold_prompts_ = !adp_releases_prompts() || !batch_wait_releases_prompts();
  schedule();
  if (step_.empty() && hold_prompts_) {  // nothing could decode (no cache room): the prompts run
    hold_prompts_ = false;
    schedule();
  }
  if (step_.empty())
    throw std::logic_error("serving simulation: nothing to schedule with " + std::to_string(running_.size()) +
                           " running and " + std::to_string(waiting_.size()) + " waiting");
  st_.max_running = std::max(st_.max_running, static_cast<int64_t>(running_.size()));
  const int64_t preempted_before = st_.preemptions;
  // SchedulerRecvSkipper's weights: a decode step counts 1, any other reaches the interval.
  recv_counter_ += has_prefill() ? eng_.recv_interval_steps : 1;
  const simulate::StepBatch b = batch();
  if (runs_eagerly(eng_, b)) ++st_.eager_steps;
  simulate::StepTime st = engine_step_time(sim_, prepared_, b, eng_);
  if (width_ > 1) add_draft(st, sim_.draft_time(prepared_, b));
  // The host's time per step: after the GPU's, or beside it when scheduling overlaps.
  const double host_s =
      eng_.overlap_scheduling ? std::max(0.0, eng_.step_overhead_s - st.time_s) : eng_.step_overhead_s;
  for (size_t f = 0; f < simulate::kTimeFigures; ++f) elapsed_.figure_s[f] += st.by_figure_s[f];
  elapsed_.step_overhead_s += host_s;
  elapsed_.steps += 1;
  last_step_start_s_ = now_;
  apply_step(st.time_s + host_s);
  step_ends_.push_back({now_, elapsed_});
  if (st_.preemptions == preempted_before) decay_ratio();
  record();
}

}  // namespace dayzero::serve::detail
