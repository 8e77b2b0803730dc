#pragma once
// The op registry (ggml-style): each backend has one table of the kernels it
// implements, keyed by (op kind, variant). The same table dispatches the kernels
// and lists what the backend supports, so coverage (`dayzero check`) and
// execution cannot disagree. A model's needs come from its op inventory.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "executor/kernels.h"
#include "model/model.h"
#include "plan/fp8_block_gemm.h"

namespace dayzero::executor {

// An op kind with the variant that selects its kernel, e.g. attention "gqa+sinks",
// rope "yarn", gemm "fp8_block" (gemm / expert_gemm variants are weight storages).
struct OpVariant {
  model::OpKind kind = model::OpKind::gemm;
  std::string variant;
  auto operator<=>(const OpVariant&) const = default;
  std::string to_string() const;  // "attention:gqa+sinks"
};

// FLOPs and bytes one call of a kernel costs. `bytes`: weights read (as stored,
// scales included), activations read and written, KV cache read.
struct OpCost {
  int64_t flops = 0;
  int64_t bytes = 0;
};
struct CostShape {
  int64_t tokens = 1;          // rows processed (queries for attention)
  int64_t context = 0;         // attention: cached tokens each query sees
  int64_t act_elem_bytes = 4;  // activations and KV cache (float32 on the CPU backend)
};
// The op inventory's formulas (model::Op, AttentionShape) applied to a call.
OpCost op_cost(const model::Op& op, const CostShape& s);
// MLA as the CPU kernel runs it: expanding the context's latent with kv_b_proj, or
// the absorbed form when cheaper (mla_absorbed: decode).
OpCost mla_cost(const model::Op& op, const CostShape& s);
// MLA always in the expanded form (the context's latents through kv_b into per-head
// keys and values, then attention): the CUDA backend's first stage, at any shape.
OpCost mla_expanded_cost(const model::Op& op, const CostShape& s);
// Gated delta-net: the op's FLOPs and activations, plus one sequence's recurrent
// state read and written once per call (CostShape::context unused).
OpCost linear_attention_cost(const model::Op& op, const CostShape& s);
// The sparse-attention indexer: every query scores every token it sees (the op's
// per-context FLOPs), reading each cached key once; MLA over at most top-k tokens.
OpCost indexer_cost(const model::Op& op, const CostShape& s);
OpCost sparse_mla_cost(const model::Op& op, const CostShape& s);
using CostFn = OpCost (*)(const model::Op&, const CostShape&);

using EmbeddingFn = Tensor (*)(const StoredWeight&, std::span<const int64_t>);
using NormFn = void (*)(Tensor&, std::span<const float>, double);
using GemmFn = Tensor (*)(const Tensor&, const StoredWeight&, int64_t, std::span<const float>);
using AttentionFn = Tensor (*)(const Tensor&, std::span<const int64_t>, const KvPages&, const AttentionParams&);
using MlaFn = Tensor (*)(const Tensor&, std::span<const int64_t>, const KvPages&, const StoredWeight&,
                         const MlaParams&);
using ActivationFn = Tensor (*)(const Tensor&, const Tensor&, const ActivationParams&);
using RouterFn = Routing (*)(const Tensor&, const RouterParams&);
using CombineFn = void (*)(Tensor&, const Tensor&, std::span<const int64_t>, std::span<const float>);
using LinearAttentionFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                     const LinearAttentionWeights&, LinearState&, const LinearAttentionParams&);
using LayerNormFn = void (*)(Tensor&, std::span<const float>, std::span<const float>, double);
using RmsGivenMeanFn = void (*)(Tensor&, std::span<const float>, double, std::span<const float>);
using IndexerFn = Tensor (*)(const Tensor&, const Tensor&, std::span<const int64_t>, const KvPages&,
                             const IndexerParams&);
using KernelFn = std::variant<EmbeddingFn, NormFn, GemmFn, RopeTableFn, AttentionFn, MlaFn, ActivationFn, RouterFn,
                              CombineFn, LinearAttentionFn, LayerNormFn, IndexerFn, RmsGivenMeanFn>;

struct KernelEntry {
  model::OpKind kind;
  std::string_view variant;
  KernelFn fn;
  CostFn cost;
};

// The CPU backend's kernel table.
std::span<const KernelEntry> cpu_kernel_table();

// The table's entry for (kind, variant); throws std::runtime_error naming the
// backend and op when it has none.
const KernelEntry& find_kernel(std::span<const KernelEntry> table, std::string_view backend, model::OpKind kind,
                               std::string_view variant);

// A backend the forward runs on: a name and the one kernel table that both
// dispatches and lists what it supports. The forward and the runner reach kernels
// only through it; a device backend (CUDA) adds a table of its own.
struct Backend {
  std::string_view name;
  std::span<const KernelEntry> kernels;
  // Called when a run begins (Runner's constructor), or null: a backend's per-run
  // state goes (the CUDA backend's device copies of the last run's weights), and a
  // backend that cannot run here (no device) fails before any weight is read.
  void (*begin_run)() = nullptr;
  // The op clock, or null for the host's: seconds the device spent in this thread's
  // kernels since the last call (the CUDA backend's events around its launches, so an
  // op's time leaves out its host staging). The OpTimer reads it around each repeat.
  double (*device_seconds)() = nullptr;
  // What the device holds for this thread's run, or null (the CPU): read at the run's end.
  struct DeviceMemory {
    int64_t pool_peak_bytes = 0;       // the most the backend's pool held at once
    int64_t weights_bytes = 0;         // of it, the run's weights on the device (held for the run)
    int64_t workspace_peak_bytes = 0;  // the most the kernels' inputs, outputs and workspace held at once
    int64_t kv_cache_peak_bytes = 0;   // the most the KV cache's pools held at once (Backend::make_kv_store)
    int64_t used_bytes = 0;            // the device's memory in use (every process's, contexts included)
    int64_t cached_bytes = 0;          // freed kernel buffers the pool keeps for reuse
    // In use beyond the pool's live and cached blocks: the CUDA context, the libraries'
    // kernels and handles (the run's runtime on the device).
    int64_t runtime_bytes = 0;
  };
  DeviceMemory (*device_memory)() = nullptr;
  // Rotary embedding in place, apply_rope's contract (executor/rope.h) for every rope
  // variant (they differ in the table only): the host's for the CPU, the device's for
  // a device backend.
  using RopeApplyFn = void (*)(Tensor&, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t>,
                               const RopeTable&, RopeLayout);
  RopeApplyFn rope = &apply_rope;
  // Seconds this thread has spent since begin_run placing the run's weights on the
  // device, or null (the CPU reads them in place): the CUDA backend uploads a weight at
  // its first use. The runner leaves them out of the step times and counts them in
  // load_s, as an engine loads its weights before it serves.
  double (*weight_placement_seconds)() = nullptr;
  // x += y in place (the residual adds): the host's for the CPU, the device's for a
  // device backend, so that the residual stream stays where the kernels left it.
  using AddFn = void (*)(Tensor&, const Tensor&);
  AddFn add = &add_in_place;
  // executor::columns' contract: on the device for a device backend (the split stays there).
  using ColumnsFn = Tensor (*)(const Tensor&, int64_t, int64_t);
  ColumnsFn columns = &executor::columns;
  // Makes the KV cache's stores (executor/kv_store.h), or null: the host's. A device
  // backend keeps the cache where its attention kernels read it.
  KvStoreMaker make_kv_store = nullptr;
  // Turns the op clock on and off for this thread, or null: timing waits for each
  // kernel, so a run keeps it off but for the timer's repeats (the device's kernels run
  // asynchronously, the host queueing the next while one runs).
  void (*device_clock)(bool on) = nullptr;
  // executor::rows' and stack_rows' contracts: a batch's per-sequence slices where they
  // lie (on the device for a device backend: a multi-sequence step brought q back
  // for every sequence's attention before, and sent the stacked result up again).
  using RowsFn = Tensor (*)(const Tensor&, int64_t, int64_t);
  RowsFn rows = &executor::rows;
  using StackRowsFn = Tensor (*)(std::span<const Tensor>);
  StackRowsFn stack_rows = &executor::stack_rows;
  using GatherRowsFn = Tensor (*)(const Tensor&, std::span<const int64_t>);
  GatherRowsFn gather_rows = &executor::gather_rows;
  // executor::zeros: made where the kernels that add into it run (a device backend's
  // memory set to zero there; uploading the host's zeros sent a prefill's whole hidden
  // state up for each MoE layer's combine).
  using ZerosFn = Tensor (*)(std::vector<int64_t>);
  ZerosFn zeros = &executor::zeros;
  // The same for a sequence's state that its kernel updates in place from step to step
  // (the gated delta-net's): a device backend counts it with the KV cache, as the
  // simulator's ledger does.
  ZerosFn cache_zeros = &executor::zeros;
  // executor::row_sum_squares where x lies (only the rows' sums come back).
  using RowSumSquaresFn = std::vector<float> (*)(const Tensor&);
  RowSumSquaresFn row_sum_squares = &executor::row_sum_squares;
  // Back-to-back op timing, or nulls (OpTimer::set_device_span): a mark in the device's
  // queue, then the seconds from it to the end of what is queued (waiting for it).
  void (*device_span_begin)() = nullptr;
  double (*device_span_end)() = nullptr;
  // How this process multiplied block-scaled FP8 weights past the GEMV, read at a run's
  // end, with in `note` why an asked-for W8A8 did not run; or null (the CPU: bf16).
  plan::Fp8BlockGemm (*fp8_block_gemm)(std::string& note) = nullptr;
  const KernelEntry& kernel(model::OpKind kind, std::string_view variant) const {
    return find_kernel(kernels, name, kind, variant);
  }
  template <class Fn>
  Fn fn(model::OpKind kind, std::string_view variant) const {
    const KernelEntry& e = kernel(kind, variant);
    if (const Fn* f = std::get_if<Fn>(&e.fn)) return *f;
    throw std::logic_error(std::string(name) + " kernel " + OpVariant{kind, std::string(variant)}.to_string() +
                           " has another signature than asked for");
  }
};
// The backend called `name` built into this binary ("cpu", and those registered);
// throws naming the built ones when it is unknown or not built (e.g. "cuda"
// without CUDA, or in a binary that did not register it).
const Backend& find_backend(std::string_view name);
// Adds a backend implemented in a library above the executor (cuda/
// register_cuda_backend): the executor never includes it, the binary's main
// registers it before the first run. `b`'s name and table must outlive the
// process (static storage); registering a name twice keeps the first.
// Not thread-safe against concurrent lookups: register before running.
void register_backend(const Backend& b);
// The CPU kernel of (kind, variant) as its function type.
template <class Fn>
Fn cpu_kernel(model::OpKind kind, std::string_view variant) {
  return find_backend("cpu").fn<Fn>(kind, variant);
}

struct BackendInfo {
  std::string name;
  bool available = false;      // built into this binary
  std::vector<OpVariant> ops;  // from its kernel table
  bool supports(const OpVariant& op) const;
};
// All backends DayZero knows: "cpu" (built) and "cuda" (available, with its
// table's ops, once registered; else listed as not built, with no ops).
const std::vector<BackendInfo>& backend_registry();

// Variant names of the model's ops.
std::string storage_variant(const model::StorageFormat& f);     // "f32", "bf16", "fp8_block", "mxfp4", ...
std::string attention_variant(const model::AttentionShape& a);  // "gqa", "gqa+sliding+sinks", "mla"
std::string router_variant(const model::ModelConfig& c);
// The op variant of one op of the model (throws if a gemm's weight is unknown).
OpVariant op_variant(const model::Model& m, const model::Op& op);
// Every op variant the model needs (pre ops, layers incl. MTP, post ops), in kind
// order, each once.
std::vector<OpVariant> required_ops(const model::Model& m);

struct OpCoverage {
  OpVariant op;
  std::vector<std::string> backends;  // backends whose kernel table implements it
};
std::vector<OpCoverage> op_coverage(const model::Model& m);

}  // namespace dayzero::executor
