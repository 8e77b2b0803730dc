#pragma once
// The simulator: memory per rank and step times for any plan of a model on a
// cluster. Built once per (model, cluster); simulate() is then cheap enough for a
// search loop. Not thread-safe (it caches collective costs): one per thread.

#include <memory>

#include "model/model.h"
#include "plan/fp8_block_gemm.h"
#include "plan/plan.h"
#include "simulate/efficiency.h"
#include "simulate/engine_kernels.h"
#include "simulate/model_costs.h"
#include "simulate/prediction.h"
#include "simulate/step_batch.h"
#include "topology/cluster.h"
#include "topology/collective_model.h"

namespace dayzero::simulate {

// Named memory constants (bytes), each with where it comes from.
// CUDA context (~0.5 GiB on Hopper with CUDA 12, as nvidia-smi shows for an idle
// PyTorch process), cuBLAS/cuBLASLt workspaces and the caching allocator's reserve.
inline constexpr int64_t kRuntimeOverheadBytes = int64_t{1} << 30;
// NCCL buffers per communicator: NCCL_BUFFSIZE (4 MiB, NCCL docs) per channel and
// peer for the Simple protocol, 16 channels x 2 ring peers = 128 MiB, plus ~1/8
// for the LL and LL128 buffers.
inline constexpr int64_t kNcclBytesPerCommunicator = int64_t{144} << 20;
// Logits are kept in FP32 for sampling (vLLM / SGLang samplers).
inline constexpr int64_t kLogitBytes = 4;

// A plan made ready for many step costings (simulate/sim_internal.h): the plan,
// its routing distribution and its stages, owned together.
struct PreparedPlan;

struct SimulateOptions {
  bool per_rank = true;          // false: one entry per pipeline stage in Prediction::ranks (search loops)
  bool explain = true;           // false: leave Prediction::fullest_reason empty (search loops)
  bool time_if_not_fits = true;  // false: skip the time model for plans that do not fit
  bool time = true;              // false: memory only (a search's bound before costing)
  bool memory = true;            // false: times only, Prediction::ranks empty and fits false (a search's bound)
  // Set: the plan fits only when the KV cache a serving engine sizing its memory by
  // this rule leaves (kv_budget) holds the plan's batch at full length on every stage
  // (Prediction::engine_kv), as `serve` would need to run that batch without queueing.
  const KvMemoryRule* engine_memory = nullptr;
  // Set: a prediction of the same plan at another batch (the search's group), whose
  // prefill, prompts_per_step and prompt_s are taken as they are: no step of the
  // prompts depends on the batch, so they are what costing them again would give.
  const Prediction* prompts_of = nullptr;
  // The plan runs on DayZero's own CUDA executor (`validate` of a `run --backend
  // cuda`): the ledger holds what that executor stages beside its activations
  // (plan/cuda_staging.h; simulate/memory.cpp) and, as its runtime, the device's
  // measured executor_runtime where the catalog has one (else the engines' figure).
  bool cuda_executor = false;
  // With cuda_executor: how that run multiplied block-scaled FP8 weights
  // (Measurements::fp8_block_gemm); W8A8 stages the quantized activations where the
  // BF16 path widens a matrix.
  plan::Fp8BlockGemm cuda_fp8_block_gemm = plan::Fp8BlockGemm::bf16;
  // The serving engine's kernels (EngineKernels); none of them by default.
  EngineKernels kernels = {};
};

class Simulator {
 public:
  // Simulators of several threads over one cluster may share `tables` (each group of
  // devices is then routed once for them all; topology/collective_model.h).
  Simulator(const model::Model& m, const topology::Cluster& c, Efficiency eff = {},
            std::shared_ptr<topology::SharedCollectiveTables> tables = nullptr);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // The plan must have passed validate_plan for this model and cluster. A
  // disaggregated plan is its two workers put together (disaggregated.h).
  Prediction simulate(const plan::Plan& p, SimulateOptions opts = {});

  // Engine steps of one plan, costed many times (the serving simulation's inner
  // loop): prepare the plan once, then cost each step of one attention-DP replica
  // for exactly the tokens in it. With PP the step's sequences form min(pp,
  // sequences) micro-batches (every m-th sequence each), as the decode step does.
  std::shared_ptr<const PreparedPlan> prepare(const plan::Plan& p, EngineKernels kernels = {});
  StepTime step_time(const PreparedPlan& prepared, const StepBatch& batch);
  // Speculative decoding's drafting after the verify step `verify` (zero when the
  // plan does not draft), on the last stage: one forward of the draft layer over the
  // step's tokens (the verified positions and prompt chunks, as vLLM's EAGLE
  // proposer and SGLang's draft extend run it), then draft_tokens - 1 forwards of
  // one token per drafting sequence; each forward ends in the LM head for one row per
  // sequence that drafts (the decodes, and the prompts finished in this step). All
  // of it is CostKind::draft; the figures say what sets it.
  StepTime draft_time(const PreparedPlan& prepared, const StepBatch& verify);
  // What a replica's KV cache can hold under an engine's memory rule.
  KvBudget kv_budget(const PreparedPlan& prepared, const KvMemoryRule& rule) const;

  const ModelCosts& costs() const;
  const model::Model& model() const;
  const topology::Cluster& cluster() const;
  const Efficiency& efficiency() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dayzero::simulate
