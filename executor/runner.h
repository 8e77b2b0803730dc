#pragma once
// The executor's runner: one rank of a Plan. It checks the plan against the model
// and the communicator, reads only this rank's weights (memory-mapped), and runs
// prefill, then greedy decode with the KV cache, timing every op.
//
// Now: one rank, or attention TP over the world (tp = world size, pp = ep = dp =
// 1) for dense GQA models (llama, qwen3 families); any other plan is refused with
// a clear message. Sharding enters through ParallelContext (executor/forward.h):
// per-op splits, the rank's expert range, the stage's layers, and communicator
// calls; the runner's flow below stays as it is.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "executor/communicator.h"
#include "executor/forward.h"
#include "executor/measurements.h"
#include "executor/timed_communicator.h"
#include "executor/weight_store.h"
#include "model/model.h"
#include "simulate/plan.h"

namespace dayzero::executor {

// Checks that `plan` fits `m` (simulate::validate_plan) and a world of
// `world_size` ranks; throws std::runtime_error (model::ConfigError) naming
// `plan_source` and the field.
void check_plan(const simulate::Plan& plan, const model::Model& m, int world_size, const std::string& plan_source);

struct RunnerOptions {
  int timing_iterations = 0;         // timed repeats per distinct op (0: no per-op timing)
  std::string plan_source = "plan";  // the plan's file, for messages
};

struct RunResult {
  Tensor prefill_logits;              // [prompt, vocab]
  std::vector<Tensor> decode_logits;  // one [1, vocab] per decode step
  std::vector<int64_t> tokens;        // generated: argmax of prefill's last row, then of each decode step
  Measurements measurements;
};

class Runner {
 public:
  Runner(const model::Model& m, const simulate::Plan& plan, Communicator& comm, const std::filesystem::path& weights,
         const RunnerOptions& options = {});
  ~Runner();

  // Prefill `prompt`, then `decode_steps` greedy steps (each feeds the previous
  // token). A Runner runs once: its KV cache is filled by the run.
  RunResult run(std::span<const int64_t> prompt, int64_t decode_steps);

  const WeightStore& weights() const { return *weights_; }

 private:
  Tensor step(std::span<const int64_t> tokens);  // tokens at the next positions: logits

  const model::Model& m_;
  simulate::Plan plan_;
  Communicator& comm_;
  std::filesystem::path weights_dir_;
  RunnerOptions options_;
  ParallelContext par_;
  std::unique_ptr<WeightStore> weights_;
  OpTimer timer_;
  std::unique_ptr<TimedCommunicator> timed_comm_;  // wraps comm_ on more than one rank: times the collectives
  std::unique_ptr<Forward> forward_;
  bool ran_ = false;
};

// The greedy choice: the first index of the largest value.
int64_t argmax(std::span<const float> row);

}  // namespace dayzero::executor
