#pragma once
// What simulating a plan predicts: memory per rank with its breakdown, step times
// per op kind for prefill and decode, and the headline TTFT / TPOT / throughput.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "simulate/kind_times.h"
#include "simulate/time_figure.h"

namespace dayzero::simulate {

struct RankMemory {
  int rank = 0;
  int stage = 0;
  uint32_t device = 0;
  std::string device_name;
  int64_t weights_bytes = 0;     // resident weights, quantization scales included
  int64_t kv_cache_bytes = 0;    // KV cache for the rank's sequences at full length
  int64_t activation_bytes = 0;  // activations and workspace of the largest step
  int64_t buffer_bytes = 0;      // communication buffers (NCCL, MoE dispatch)
  int64_t overhead_bytes = 0;    // runtime: CUDA context, library workspaces
  int64_t total_bytes = 0;
  int64_t capacity_bytes = 0;
  int64_t host_bytes = 0;  // offloaded experts kept in host memory for this rank
  bool fits() const { return total_bytes <= capacity_bytes; }
};

std::string_view cost_kind_name(CostKind k);

// Time of one step, and by kind (the kinds the step has; a kind may be 0).
struct StepTime {
  double time_s = 0;
  KindTimes by_kind_s;
  // time_s split by what sets each part (time_figure.h): the parts add up to time_s,
  // the pipeline's bubble included (a stage's parts count once per micro-batch it
  // sets the period for).
  FigureTimes by_figure_s{};
  double bubble_s = 0;  // pipeline bubble inside time_s
  int micro_batches = 1;
  int64_t tokens = 0;  // tokens per data-parallel replica in the step
};

// A serving engine's KV room against what a plan's batch needs (Prediction::engine_kv,
// when SimulateOptions::engine_memory is given), on the stage where the room is
// shortest relative to the need.
struct EngineKvCheck {
  bool checked = false;
  bool fits = true;            // the room holds every sequence of the batch at full length
  double memory_fraction = 0;  // the engine's rule it was checked with
  bool share_of_free = false;  // ... a share of the memory left free (TensorRT-LLM's)
  int stage = 0;
  int64_t free_bytes = 0;    // the engine's KV room per rank of that stage
  int64_t needed_bytes = 0;  // the batch's KV cache per rank there (RankMemory::kv_cache_bytes)
};

struct Prediction {
  bool fits = false;  // every rank's device memory, host memory per node, and the engine's KV room when checked
  bool host_fits = true;
  EngineKvCheck engine_kv;
  double host_bytes_per_node = 0;  // offloaded experts on the busiest node
  std::vector<RankMemory> ranks;   // one per rank
  int fullest_rank = 0;
  std::string fullest_reason;  // what dominates the fullest rank
  StepTime prefill;            // one request's prompt per replica (TTFT)
  StepTime decode;             // one token for every sequence (TPOT)
  // A prompt's share of the replica's time in steady state: a step computing
  // prompts_per_step prompts (as many whole prompts as the token budget holds, as the
  // engines batch them), over their number; the prefill's time when one fills it.
  // The step's weight reads, expert fetches, launches and collectives' latencies are
  // paid once for them all.
  int64_t prompts_per_step = 1;
  double prompt_s = 0;
  double ttft_s = 0;
  // What the steady state charges a prompt: prompt_s, or TTFT where a prediction was
  // put together without it (a test's hand-made figures).
  double prompt_share_s() const { return prompt_s > 0 ? prompt_s : ttft_s; }
  double tpot_s = 0;
  // Output tokens/s of the whole plan in steady state: per replica, seqs x output_len
  // tokens every output_len x step + seqs x prompt_s (prefills between decode steps).
  double throughput_tokens_per_s = 0;
  double throughput_tokens_per_s_per_device = 0;
  double request_latency_s = 0;  // TTFT + output_len x TPOT
};

void to_json(nlohmann::json& j, const RankMemory& r);
void to_json(nlohmann::json& j, const StepTime& s);
void to_json(nlohmann::json& j, const Prediction& p);

}  // namespace dayzero::simulate
