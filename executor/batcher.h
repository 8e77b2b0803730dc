#pragma once
// Continuous batching for the executor's serving loop (Runner::serve): which
// rows each step carries. Pure bookkeeping, no model: unit-tested on its own.
//
// The policy is vLLM's chunked-prefill scheduler (vllm/v1/core/sched/scheduler.py,
// `schedule`): the running sequences first, in admission order, each its next
// tokens (one when decoding, the rest of its prompt up to the budget left when
// prefilling), then new requests admitted first come, first served while budget,
// sequence slots and KV room remain. Admission reserves a request's whole KV (prompt and
// every output token it will feed back) up front, so a running sequence is never
// preempted: TensorRT-LLM's GUARANTEED_NO_EVICT capacity policy. A request that
// does not fit waits, and so does every request behind it (no overtaking).

#include <cstdint>
#include <vector>

namespace dayzero::executor {

struct BatcherLimits {
  int64_t kv_blocks = 0;       // the KV pool, in blocks
  int64_t block_tokens = 16;   // positions per block
  int64_t token_budget = 512;  // rows per step (decode rows + prompt chunk rows)
  int64_t max_running = 256;   // sequences running at once
};

struct BatchRequest {
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 1;  // tokens generated (the first comes from the prompt's last row)
};

// One sequence's rows in a step.
struct StepRows {
  int64_t request = 0;  // index in the batcher's requests
  int64_t first = 0;    // first position fed (prompt index, or prompt + generated - 1 when decoding)
  int64_t count = 0;
  bool samples = false;  // its last row's logits choose the request's next token
};

class ContinuousBatcher {
 public:
  // Throws std::invalid_argument naming the request when one can never fit the pool.
  ContinuousBatcher(const BatcherLimits& limits, std::vector<BatchRequest> requests);

  bool done() const { return finished_ == static_cast<int64_t>(requests_.size()); }
  // The next step's rows (running sequences, then newly admitted ones); admits requests.
  // Sequences admitted by this call are listed in `admitted()` until the next call.
  std::vector<StepRows> next_step();
  const std::vector<int64_t>& admitted() const { return admitted_; }
  // Marks `step` as run: positions advance and every sampling row yields a token.
  // Returns the requests that finished (their KV reservation is returned).
  std::vector<int64_t> complete(const std::vector<StepRows>& step);

  // A request's KV reservation: its prompt plus every generated token fed back.
  int64_t blocks_of(int64_t request) const;
  int64_t reserved_blocks() const { return reserved_blocks_; }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  int64_t waiting() const { return static_cast<int64_t>(requests_.size()) - next_waiting_; }
  int64_t finished() const { return finished_; }

 private:
  struct State {
    int64_t prefilled = 0;  // prompt positions fed
    int64_t generated = 0;  // tokens chosen
  };
  // Admits waiting requests in order while they fit; returns the budget left.
  int64_t admit(int64_t budget, std::vector<StepRows>& rows);

  BatcherLimits limits_;
  std::vector<BatchRequest> requests_;
  std::vector<State> state_;
  std::vector<int64_t> running_;  // request indices, in admission order
  std::vector<int64_t> admitted_;
  int64_t next_waiting_ = 0;
  int64_t reserved_blocks_ = 0;
  int64_t finished_ = 0;
};

}  // namespace dayzero::executor
