#pragma once
// One rank's share of a decoder forward, op by op over the model's op inventory
// (model::Layer::ops): each op's weights come from its `weights` list, its kernel
// from the registry by (kind, variant), its cost from the registry's cost function,
// and its time from the OpTimer. Sharding is a per-op decision (tp_split: column,
// row, vocab or replicated; experts: the rank's EP range) plus communicator calls
// after the ops that need them (all-reduce after row-parallel GEMMs, after the
// expert combine). On one rank every range is whole and every collective a no-op.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "executor/communicator.h"
#include "executor/kv_cache.h"
#include "executor/measurements.h"
#include "executor/weight_store.h"
#include "model/model.h"

namespace dayzero::executor {

// How tensor parallelism splits an op's weight.
enum class Split {
  replicated,  // every TP rank holds all of it (norms, router, MLA latent projections, attention sinks)
  column,      // output features split (q/k/v, gate/up): no communication after
  row,         // input features split (o_proj, down_proj): partial sums, all-reduced after
  vocab,       // embedding rows / LM head outputs split by vocabulary
};
Split tp_split(const model::Op& op);

// This rank's place in the plan's groups and the communicators that join them.
struct ParallelContext {
  int tp_rank = 0, tp_size = 1;
  int ep_rank = 0, ep_size = 1;
  Communicator* tp_comm = nullptr;  // the attention-TP group
  Communicator* ep_comm = nullptr;  // the expert-parallel group
  int64_t first_layer = 0, end_layer = 0;  // this PP stage's decoder layers [first, end)
  bool first_stage = true, last_stage = true;
  // Routed experts [begin, end) this rank holds, of `experts`.
  std::pair<int64_t, int64_t> expert_range(int64_t experts) const;
};

// Every weight this rank reads: its stage's layers (its experts only), the
// embedding on the first stage, final norm and head on the last.
std::set<std::string> needed_weights(const model::Model& m, const ParallelContext& par);

class Forward {
 public:
  Forward(const model::Model& m, WeightStore& w, const ParallelContext& par, OpTimer& timer, double rms_norm_eps);

  Tensor embed(std::span<const int64_t> tokens);
  // Decoder layer `l` on the residual stream x ([tokens, hidden]) at `positions`,
  // appending the tokens' keys and values to the layer's cache.
  void layer(int64_t l, Tensor& x, std::span<const int64_t> positions);
  Tensor head(Tensor x);  // final norm and LM head: logits [tokens, vocab]

  int64_t cached_tokens() const;  // tokens in the KV cache
  int64_t kv_bytes() const;
  int64_t workspace_bytes() const { return workspace_bytes_; }

 private:
  const model::Op& op(const model::Layer& layer, std::string_view name) const;
  std::string weight_name(const std::string& pattern, int64_t expert) const;
  Tensor gemm(const model::Op& op, const Tensor& x, int64_t expert = -1);
  void norm(const model::Op& op, Tensor& x);
  Tensor attention(const model::Layer& L, Tensor& h, std::span<const int64_t> pos);
  Tensor mla(const model::Layer& L, Tensor& h, std::span<const int64_t> pos);
  Tensor mlp(const model::Layer& L, const Tensor& h, const std::string& prefix);
  Tensor moe(const model::Layer& L, const Tensor& h);
  Tensor expert(const model::Layer& L, const Tensor& xe, int64_t e);
  Tensor activation(const model::Op& op, const Tensor& gate, const Tensor& up);
  void note_workspace(const Tensor& t);
  void reserve(std::span<const int64_t> pos);  // cache room up to the last position
  // TP: this rank's output features [lo, hi) of a column- or vocab-split op with `out` outputs.
  std::pair<int64_t, int64_t> out_range(const model::Op& op, int64_t out) const;
  // TP: the rank's shard of `sw` for `op` (whole when replicated or on one TP rank).
  StoredWeight shard(const model::Op& op, const StoredWeight& sw, Split split);

  const model::Model& m_;
  WeightStore& w_;
  ParallelContext par_;
  OpTimer& timer_;
  double eps_;
  RopeTable rope_;
  std::set<std::string> input_major_;  // weight patterns stored [in, out]
  std::unique_ptr<KvCache> kv_;  // paged; MLA: latent (keys) and rotated rope key (values)
  int seq_ = 0;
  int64_t workspace_bytes_ = 0;
  // TP shards that are not contiguous in the mapping (row-split columns, quantized
  // slices): copied to float32 once, by weight name.
  std::map<std::string, std::unique_ptr<Tensor>> shard_copies_;
};

}  // namespace dayzero::executor
