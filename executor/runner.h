#pragma once
// The executor's runner: one rank of a Plan. It checks the plan against the model
// and the world, joins the plan's groups (attention TP, the PP stage's ranks for
// expert dispatch, point-to-point between stages), reads only this rank's weights
// (memory-mapped), and runs chunked prefill, then greedy decode over the paged KV
// cache, timing every op and collective.
//
// Sequences go to attention-DP replicas round robin (sequence i to replica
// i % dp). A step of a replica carries its sequences' rows; PP stages pass the
// step's activations forward, and the last stage sends the chosen tokens back to
// the earlier stages. Prefill chunks stream through the stages one after another;
// decode splits a replica's sequences into min(pp, sequences) micro-batches that
// follow each other through the stages, as the simulator's decode step does.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "executor/batcher.h"
#include "executor/communicator.h"
#include "executor/forward.h"
#include "executor/measurements.h"
#include "executor/timed_communicator.h"
#include "executor/weight_store.h"
#include "model/model.h"
#include "plan/plan.h"

namespace dayzero::executor {

// Checks that `plan` fits `m` (simulate::validate_plan), a world of `world_size`
// ranks, and what this executor shards; throws core::InputError naming
// `plan_source` and the field.
void check_plan(const plan::Plan& plan, const model::Model& m, int world_size, const std::string& plan_source);

struct RunnerOptions {
  int timing_iterations = 0;         // timed repeats per distinct op (0: no per-op timing)
  std::string plan_source = "plan";  // the plan's file, for messages
  bool keep_logits = true;           // keep every row's logits (else only what picks the tokens)
  std::string backend = "cpu";       // executor/registry.h find_backend
  // Untimed passes (prefill of the same prompts and one decode step, their KV blocks
  // released) before the measured run, as the engines warm up before serving: a GPU
  // library's first call (cuBLASLt's algorithm choice, the allocator's first blocks)
  // is start-up, not a step. 0: the first call is measured.
  int warmup_passes = 0;
  // Called before each forward step with its index on this rank (0: the first
  // prefill chunk). For tests: `dayzero run`'s test-only hang hook (cli/test_hooks.h).
  std::function<void(int64_t step)> before_step = nullptr;
};

struct SequenceResult {
  int64_t index = 0;                  // in the run's prompts
  Tensor prefill_logits;              // [prompt, vocab] (last stage, keep_logits)
  std::vector<Tensor> decode_logits;  // one [1, vocab] per decode step (last stage, keep_logits)
  std::vector<int64_t> tokens;        // generated: argmax after prefill, then after each decode step
};

struct RunResult {
  std::vector<SequenceResult> sequences;  // this rank's replica's, in index order
  Measurements measurements;              // this rank's (one entry in `ranks`)
};

// Serving: requests through continuous batching (executor/batcher.h) over the
// paged KV cache, every sequence's blocks returned when it finishes.
struct ServeRequest {
  std::vector<int64_t> prompt;
  int64_t output_tokens = 1;  // greedy tokens generated
};
// The state after one step.
struct ServeSample {
  int64_t step = 0;
  int64_t rows = 0, sampled = 0;  // rows run; rows whose logits chose a token
  int64_t running = 0, waiting = 0, finished = 0;
  int64_t kv_blocks_used = 0, kv_blocks_allocated = 0;
  int64_t rss_bytes = 0;  // this process's resident set after the step (VmRSS)
  double step_s = 0;
};
struct ServeOptions {
  int64_t kv_tokens = 16384;  // the KV pool (rounded down to whole blocks of the plan's kv_block_tokens)
  int64_t token_budget = 0;   // rows per step; 0: the plan's prefill_chunk_tokens
  int64_t max_running = 256;  // sequences at once (vLLM's max_num_seqs default)
  // Called after every step; when set, the samples are not kept in the result
  // (a long soak's record would itself be memory growing with the run).
  std::function<void(const ServeSample&)> on_step;
};
struct ServeResult {
  std::vector<std::vector<int64_t>> tokens;  // per request, its generated tokens (room reserved up front)
  std::vector<ServeSample> samples;          // one per step, unless ServeOptions::on_step takes them
  double total_s = 0;
};

// The sequences (indices) attention-DP replica `replica` of `dp` serves.
std::vector<int64_t> replica_sequences(int64_t sequences, int dp, int replica);

class Runner {
 public:
  Runner(const model::Model& m, const plan::Plan& plan, Communicator& comm, const std::filesystem::path& weights,
         const RunnerOptions& options = {});
  ~Runner();

  // Prefill every prompt (chunked by the plan's prefill_chunk_tokens), then
  // `decode_steps` greedy steps (each feeds the previous token). Every rank must
  // pass the same prompts. A Runner runs once: its KV cache is filled by the run.
  RunResult run(const std::vector<std::vector<int64_t>>& prompts, int64_t decode_steps);
  RunResult run(std::span<const int64_t> prompt, int64_t decode_steps);  // one sequence
  // Serves `requests` by continuous batching until all finish (runner_serve.cpp):
  // one PP stage and one attention-DP replica (every rank runs the same steps).
  // Op timing is off (a serving loop's shapes never repeat); each step is sampled.
  // Like run, once per Runner.
  ServeResult serve(const std::vector<ServeRequest>& requests, const ServeOptions& options);

  const WeightStore& weights() const { return *weights_; }

 private:
  // This rank's replica during a run, by local sequence index (runner_run.cpp).
  struct Replica {
    std::vector<int64_t> sequences;  // indices in the run's prompts (replica_sequences)
    std::vector<int> kv_ids;         // each sequence's KV cache id
    std::vector<int64_t> next;       // each sequence's last chosen token: its next input
  };
  // The run's prompts and decode steps checked (std::runtime_error); returns the prefill chunks every replica runs.
  int64_t check_prompts(const std::vector<std::vector<int64_t>>& prompts, int64_t decode_steps) const;
  // Chunked prefill of the replica's prompts and its tokens' exchange; returns its seconds (timing excluded).
  double prefill(const std::vector<std::vector<int64_t>>& prompts, int64_t n_chunks, Replica& rep,
                 std::vector<SequenceResult>& out);
  // `decode_steps` greedy steps in micro-batches (`n_seq`: the run's sequences); each step's seconds (timing excluded).
  std::vector<double> decode(int64_t n_seq, int64_t decode_steps, Replica& rep, std::vector<SequenceResult>& out);
  // This rank's replica of the run's `n_seq` sequences, each a new KV cache sequence and an
  // empty result in `out`.
  Replica begin_replica(int64_t n_seq, std::vector<SequenceResult>& out);
  // Ops and collectives counted and timed (on) or passed through (off).
  void set_recording(bool on);
  // RunnerOptions::warmup_passes: the run's prefill and a decode step, unrecorded, on
  // sequences of their own that are released after.
  void warm_up(const std::vector<std::vector<int64_t>>& prompts, int64_t n_chunks, int64_t decode_steps);
  // This rank's Measurements of the finished run (one entry in `ranks`).
  Measurements measurements(const std::vector<std::vector<int64_t>>& prompts, const Replica& rep,
                            const std::vector<SequenceResult>& sequences, double prefill_s,
                            const std::vector<double>& decode_s) const;
  // Seconds taken out of the phases' wall times: timing (op repeats, collective
  // repeats) and placing weights on the device (placement_s).
  double excluded_s() const;
  // Seconds the backend spent placing this run's weights on the device (counted in load_s).
  double placement_s() const;
  // One step of this replica: `tokens` (first stage) at the next positions of
  // `seqs` (counts each); on the last stage the logits of the rows `keep` (all
  // when null; no head at all when empty).
  Tensor step(const std::vector<int>& seqs, const std::vector<int64_t>& counts, std::span<const int64_t> tokens,
              const std::vector<int64_t>* keep);
  // The last stage's chosen tokens to the earlier stages, and their receipt (no-ops when pp = 1).
  void send_tokens(std::span<const int64_t> tokens);
  void recv_tokens(std::span<int64_t> tokens);

  const model::Model& m_;
  plan::Plan plan_;
  Communicator& comm_;
  std::filesystem::path weights_dir_;
  RunnerOptions options_;
  ParallelContext par_;
  const Backend* backend_ = nullptr;
  int stage_ = 0;
  std::unique_ptr<Communicator> tp_group_, stage_group_;  // split from comm_
  std::unique_ptr<TimedCommunicator> timed_world_, timed_tp_, timed_stage_;
  std::unique_ptr<WeightStore> weights_;
  OpTimer timer_;
  std::unique_ptr<Forward> forward_;
  double load_s_ = 0;  // opening, paging in and sharding this rank's weights
  // Resident set as the OS sees it: the process before the run's own work (its
  // runtime: binary, libraries, threads, the MPI runtime), and what joining the
  // plan's communicator groups added (the communication library's buffers).
  int64_t runtime_bytes_ = 0, comm_buffer_bytes_ = 0;
  // The most tensor bytes one forward step held above what was live before it (its
  // activations, workspace and logits: executor/tensor.h TensorPeakScope).
  int64_t activation_peak_bytes_ = 0;
  bool ran_ = false;
  int64_t steps_ = 0;  // forward steps begun (RunnerOptions::before_step)
};

// The greedy choice: the first index of the largest value.
int64_t argmax(std::span<const float> row);

}  // namespace dayzero::executor
