#pragma once
// One engine instance's scheduler, step by step (internal to serve/): iteration-level
// continuous batching of one attention-DP replica (simulation.h says what it does). A
// replica serves whole requests (Role::both), or only their prompts, handing each
// sequence on once its first token is sampled (Role::prefill), or only their decoding,
// taking in sequences whose prompt is already in its cache (Role::decode): the pools of
// a disaggregated deployment (disaggregated.h). Requests come from an Inbox and leave
// through an Outlet, so that one driver can run one replica or many side by side.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "plan/speculative.h"
#include "serve/engine.h"
#include "serve/latency_parts.h"
#include "serve/simulation.h"
#include "serve/workload.h"
#include "simulate/simulator.h"

namespace dayzero::serve::detail {

struct Seq {
  Request req;
  int64_t target = 0;        // tokens to have in the KV cache before decoding: the prompt (after a preemption:
                             // the prompt and the tokens generated so far, recomputed)
  int64_t kv_tokens = 0;     // tokens in its KV cache
  int64_t generated = 0;     // output tokens produced (the first comes with the end of the prompt)
  int64_t decode_steps = 0;  // steps that decoded it (output tokens - 1 unless drafts were accepted)
  double first_token_s = -1, last_token_s = 0;
  bool first_token_pending = false;  // cached by a prefill pool: its first token reaches the client with the next step
  double kv_bytes = 0;               // reserved in the replica's budget
  LatencyParts at_arrival, at_first_token;  // the replica's running totals then
  // Disaggregated: its TTFT's parts before this replica (the prefill replica's steps
  // since its arrival, the KV transfer); at_arrival is set back by them on arrival here.
  LatencyParts carried;
  double inflight = 0;  // requests in flight in the whole plan when it arrived
  bool prefilled() const { return kv_tokens >= target; }
};

// Fresh from the client: nothing cached, its prompt to prefill.
std::unique_ptr<Seq> new_seq(const Request& r);

enum class Role {
  both,     // prompts and decoding (aggregated serving)
  prefill,  // prompts only: a sequence leaves with its first token
  decode,   // decoding only: sequences arrive with their prompt cached and first token out
};

// The sequences that reach a replica, in the order of their times.
class Inbox {
 public:
  virtual ~Inbox() = default;
  virtual bool empty() const = 0;
  virtual double next_time() const = 0;
  virtual std::unique_ptr<Seq> pop() = 0;
};

// Where sequences go when a replica is done with them.
class Outlet {
 public:
  virtual ~Outlet() = default;
  // Role::prefill: `s`'s prompt is cached and its first token sampled, at `now`.
  virtual void handoff(std::unique_ptr<Seq> s, double now) = 0;
  // A request's last token, at `now`; false while the client is still warming up (its
  // statistics leave the request out).
  virtual bool finished(double now) = 0;
};

// What a replica measured, for the driver to summarize.
struct ReplicaStats {
  std::vector<double> ttft_s, tpot_s, e2e_s;
  std::vector<std::pair<double, int64_t>> itl_s;  // gap, and how many sequences saw it
  LatencyParts ttft_parts, tpot_parts;            // sums over the measured requests
  int64_t done = 0, steps = 0, preemptions = 0, max_running = 0, out_tokens = 0, in_tokens = 0, eager_steps = 0;
  int64_t decodes = 0, decoded_tokens = 0;  // decodes run and the tokens they emitted
  double first_arrival_s = -1, last_finish_s = 0, window_start_s = -1;
  std::vector<ServePoint> series;
};

class Replica {
 public:
  Replica(simulate::Simulator& sim, const simulate::PreparedPlan& prepared, const EngineProfile& engine,
          const simulate::KvBudget& kv, const plan::SpeculativeDecoding& spec, Role role, Inbox& in, Outlet& out,
          int dp, uint64_t seed);
  bool busy() const { return !running_.empty() || !waiting_.empty(); }
  // When it acts next: now while it holds requests, else at the next arrival (not
  // before now); infinity when nothing is on its way.
  double next_event() const;
  // One engine step, or while idle the wait for the next arrival.
  void step();
  double now() const { return now_; }
  const ReplicaStats& stats() const { return st_; }

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
  void admit_arrived(double cutoff, bool strict);
  void schedule_mixed();
  void schedule_prefill_first();
  void schedule();  // the engine's policy: one of the two above
  void add_decodes(int64_t budget_each);
  int64_t tokens_accepted(const Seq& s);
  bool add_prefill(Seq& s);
  void admit_waiting();
  bool adp_releases_prompts();         // prompt_gates.cpp
  bool batch_wait_releases_prompts();  // prompt_gates.cpp
  bool estimate_admits(const Seq& s) const;
  void decay_ratio();
  bool has_prefill() const {
    return std::any_of(step_.begin(), step_.end(), [](const Scheduled& e) { return !e.decode; });
  }
  simulate::StepBatch batch() const;
  void apply_step(double step_s);
  void release(Seq& s);
  void finish(Seq& s);
  void record();
  LatencyParts elapsed_at(double t) const;

  simulate::Simulator& sim_;
  const simulate::PreparedPlan& prepared_;
  const EngineProfile& eng_;
  simulate::KvBudget kv_;
  Role role_;
  Inbox& in_;
  Outlet& out_;
  int dp_;
  double now_ = 0, kv_used_ = 0;
  // When the last step started: under overlap scheduling the host formed the next
  // step's batch then, so a request that arrived after it waits a step more.
  double last_step_start_s_ = 0;
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
  // TensorRT-LLM's attention-DP balancing (EngineProfile::adp_balance): whether this
  // step holds new prompts back, the steps since the last release and of the batching
  // wait, how many of the other dp - 1 ranks hold a prompt (each receives one in a step
  // with this replica's arrival rate so far, drawn from its own stream; -1 after a
  // release: as many as this replica, all or none), the arrivals.
  static constexpr uint64_t kAdpSeed = 0x9e3779b9;
  bool hold_prompts_ = false;
  int64_t adp_wait_ = 0, adp_batching_ = 0, adp_others_ = 0, arrivals_ = 0;
  std::mt19937_64 adp_rng_;
  // Whether the replica is one rank of an engine's attention DP (a MoE plan with dp > 1;
  // a dense model's replicas are engines of their own), and TensorRT-LLM's batch waiting
  // (EngineProfile::batch_waiting): the steps held in a row so far.
  bool attention_dp_;
  int64_t batch_wait_ = 0;
  // The running totals at the end of each step whose end a request not yet taken in
  // may have arrived by (with their times): the steps since the scheduler last took in
  // arrivals, and under overlap scheduling the step that ended as the last one started,
  // so that a request's parts count from its arrival, not from its admission.
  std::deque<std::pair<double, LatencyParts>> step_ends_;
  LatencyParts elapsed_;  // every step so far, by part
  ReplicaStats st_;
};

// The result of replicas run side by side: their samples pooled, throughput over the
// span from the first arrival (or the end of the warm-up) to the last finish, times
// `scale` (the replicas a symmetric plan has per one simulated); a time series when
// there is one replica.
ServeResult summarize(const std::vector<const ReplicaStats*>& replicas, double scale, size_t max_points);

// Throws std::invalid_argument when the client or the engine profile is unusable
// (`prompts`: the engine computes the client's prompts, so a whole one must fit a step
// unless it chunks them).
void check_serving(const Client& c, const EngineProfile& e, bool prompts = true);

// A plan prepared for an engine: its KV budget (block size and memory rule of the
// engine); throws std::invalid_argument when the cache cannot hold one request of
// `longest` tokens.
struct PreparedPool {
  std::shared_ptr<const simulate::PreparedPlan> prepared;
  simulate::KvBudget kv;
};
PreparedPool prepare_pool(simulate::Simulator& sim, const plan::Plan& p, const EngineProfile& e, int64_t longest);
// The longest request a client sends: prompt and output tokens.
int64_t longest_request(const Client& c);

}  // namespace dayzero::serve::detail
