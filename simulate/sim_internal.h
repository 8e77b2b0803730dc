#pragma once
// Internal to simulate/: the state a simulation shares between the memory model
// (memory.cpp), the time model (step_time.cpp) and the driver (simulator.cpp).

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "simulate/roofline.h"
#include "simulate/routing.h"
#include "simulate/simulator.h"
#include "topology/collective_model.h"

namespace dayzero::simulate::detail {

// Layers of each ModelCosts class in a stage: held inline up to kInline classes (so
// that a search building millions of stages allocates nothing), on the heap beyond.
class ClassCounts {
 public:
  void assign(size_t n, int64_t v) {
    n_ = n;
    heap_.clear();
    if (n > kInline) heap_.assign(n, v);
    else std::fill_n(inline_.begin(), n, v);
  }
  size_t size() const { return n_; }
  int64_t& operator[](size_t i) { return n_ > kInline ? heap_[i] : inline_[i]; }
  int64_t operator[](size_t i) const { return n_ > kInline ? heap_[i] : inline_[i]; }
  bool operator==(const ClassCounts& o) const {
    if (n_ != o.n_) return false;
    for (size_t i = 0; i < n_; ++i)
      if ((*this)[i] != o[i]) return false;
    return true;
  }

 private:
  static constexpr size_t kInline = 8;
  size_t n_ = 0;
  std::array<int64_t, kInline> inline_{};
  std::vector<int64_t> heap_;
};

// One pipeline stage of a plan: its layers by class.
struct Stage {
  int index = 0;
  int first_rank = 0;
  ClassCounts class_counts;  // layers of each ModelCosts class in the stage
  bool first = false, last = false;
};

// Stages with the same layers and ends: they hold the same, and take the same time
// but for their collectives.
inline bool alike(const Stage& a, const Stage& b) {
  return a.first == b.first && a.last == b.last && a.class_counts == b.class_counts;
}

// Everything derived from the plan that both models use.
struct PlanContext {
  PlanContext(const plan::Plan& p, const ModelCosts& m, const Efficiency& e, const Routing& r)
      : plan(p), mc(m), eff(e), routing(r) {}
  const plan::Plan& plan;
  const ModelCosts& mc;
  const Efficiency& eff;
  const Routing& routing;
  size_t p_attn = 0, p_dense = 0, p_experts = 0, p_embed = 0;  // WeightPrecision indices
  int64_t kv_elem_bytes = 2;
  int64_t act_bytes = 2;
  int64_t seqs_per_replica = 0;  // sequences per attention-DP replica
  int64_t resident_experts = 0;  // per layer
  double kv_frac = 1;            // share of GQA k/v weights and KV heads on one rank
  // The device's runtime and per-communicator buffers (topology::DeviceSpec; the GPU
  // engines' figures when it gives none).
  int64_t runtime_overhead_bytes = kRuntimeOverheadBytes;
  int64_t comm_buffer_bytes = kNcclBytesPerCommunicator;
  int64_t comm_library_bytes = 0;  // per process of the plan's world (topology::DeviceSpec)
  bool cuda_executor = false;      // SimulateOptions::cuda_executor
  plan::Fp8BlockGemm cuda_fp8_block_gemm = plan::Fp8BlockGemm::bf16;  // SimulateOptions::cuda_fp8_block_gemm
  bool separate_activation_quant = false;                             // EngineKernels::separate_activation_quant
  std::vector<Stage> stages;
  // Speculative decoding's draft layer (the model's MTP layer, or an EAGLE head of its
  // first layer's shape) as a one-layer stage beside the last stage; none when off.
  std::optional<Stage> draft;
};

PlanContext make_context(const plan::Plan& p, const ModelCosts& mc, const Efficiency& eff, const Routing& r,
                         const topology::DeviceSpec& device, bool cuda_executor = false,
                         plan::Fp8BlockGemm cuda_fp8_block_gemm = plan::Fp8BlockGemm::bf16, EngineKernels kernels = {});

// Memory of a representative rank of a stage (all ranks of a stage hold the same).
RankMemory stage_memory(const PlanContext& ctx, const Stage& s, double capacity_bytes);
// The memory part of a Prediction: every rank (per_rank) or one per stage, whether
// the plan fits the devices and the nodes' host memory, and the fullest rank.
// engine_memory: SimulateOptions::engine_memory (Prediction::engine_kv).
Prediction plan_memory(const PlanContext& ctx, const topology::Cluster& cluster, bool per_rank,
                       const KvMemoryRule* engine_memory = nullptr);

// Time of one stage for one step of `tokens` per replica (`seqs` sequences).
struct StepInputs {
  bool prefill = false;
  int64_t tokens = 0;       // per replica, this step (a prefill chunk)
  int64_t seqs = 0;         // per replica
  int64_t chunks = 1;       // prefill chunks the step stands for
  int64_t new_per_seq = 0;  // prefill: new prompt tokens per sequence
  int64_t prefix_per_seq = 0;
  double decode_ctx = 0;  // decode: mean context per sequence
  // A serving step: exactly these decoding sequences and prefill chunks (tokens,
  // seqs and the fields above are then unused but for `tokens`).
  const StepBatch* batch = nullptr;
};
struct Collectives {  // costs of the stage's collectives, per call
  double tp_allreduce_s = 0;
  double ep_alltoall_s = 0;
  double moe_tp_allreduce_s = 0;
  bool operator==(const Collectives&) const = default;
};
// `rf` is the device's roofline with ctx.eff.
StepTime stage_time(const PlanContext& ctx, const Stage& s, const StepInputs& in, const Collectives& coll,
                    const Roofline& rf, double host_bw_Bps);
// The stage `s` with the draft layer too, when it is the last and the plan drafts
// (what its ranks hold).
struct HeldStages {
  std::array<const Stage*, 2> stages{};
  size_t n = 0;
  const Stage* const* begin() const { return stages.data(); }
  const Stage* const* end() const { return stages.data() + n; }
};
HeldStages held_stages(const PlanContext& ctx, const Stage& s);

// The KV budget of a replica (memory.cpp): see Simulator::kv_budget.
KvBudget kv_budget(const PlanContext& ctx, double capacity_bytes, const KvMemoryRule& rule);

// The serving formula (steady_state.cpp): the step TTFT stands for (one new
// request's prompt per replica, chunked, its cached prefix skipped; or `prompts` of
// them in one step), the step TPOT stands for (one token for every sequence of a
// replica at the mean context, as min(pp, sequences) micro-batches), and the steady
// state they imply.
StepInputs prefill_inputs(const plan::Plan& p, int64_t prompts = 1);
// Prompts one step of the plan's token budget holds: budget / new tokens of a prompt,
// at least 1 (a longer prompt is chunked over several steps), rounded down to a power
// of two. Rounded so, a larger budget never charges a prompt more (a step of 2k
// prompts costs at most twice one of k: whole tiles, weights read once, experts
// touched and collectives all sub-additive), which the search's bounds rely on
// (search/bounds.h: a unit's fastest group bounds the others).
int64_t prompts_per_step(const plan::Plan& p);
std::pair<StepInputs, int> decode_inputs(const plan::Plan& p, int64_t seqs_per_replica);  // inputs, micro-batches
// Fills ttft_s, tpot_s, throughput and request latency from pred.prefill and pred.decode.
void steady_state(const plan::Plan& p, int64_t seqs_per_replica, Prediction& pred);

}  // namespace dayzero::simulate::detail

namespace dayzero::simulate {

// A plan, its routing distribution and its stages, owned together: the context's
// references point into this object, so it never moves (held by shared_ptr).
struct PreparedPlan {
  PreparedPlan(const plan::Plan& p, const ModelCosts& mc, const Efficiency& eff, const topology::DeviceSpec& device,
               EngineKernels kernels = {})
      : plan(p),
        routing(mc.experts, p.workload),
        ctx(detail::make_context(plan, mc, eff, routing, device, false, plan::Fp8BlockGemm::bf16, kernels)) {}
  PreparedPlan(const PreparedPlan&) = delete;
  PreparedPlan& operator=(const PreparedPlan&) = delete;
  plan::Plan plan;
  Routing routing;
  detail::PlanContext ctx;
};

}  // namespace dayzero::simulate
