#pragma once
// One rank's share of a decoder forward, op by op over the model's op inventory
// (model::Layer::ops): each op's weights come from its `weights` list, its kernel
// from the registry by (kind, variant), its cost from the registry's cost function,
// and its time from the OpTimer. A step carries the rows of several sequences
// (a Batch); each sequence has its own pages in the paged KV cache.
//
// Sharding is a per-op decision plus communicator calls:
// - attention TP: q/k/v (and MLA's q_b, kv_b) split by heads, o_proj by input rows
//   and all-reduced; dense MLP / shared experts column then row split, all-reduced;
//   embedding and LM head split by vocabulary (all-reduce / all-gather).
// - experts (EP x moe TP x moe DP over the stage's ranks): each token is dispatched
//   by one rank of its attention-TP group to the ranks holding its experts
//   (all-to-all), computed there (moe TP: each expert's width split), sent back
//   (all-to-all) and combined at the source in a fixed order.
// On one rank every range is whole and every collective a copy or a no-op.
//
// Kernels (and RoPE's rotation, Backend::rope) come from the Backend (executor/registry.h).
// Tensors are the CPU backend's memory (host float32), and the glue between kernels here
// (packing rows for the expert all-to-all, KV writes, the residual adds) touches them
// directly: a device backend (CUDA) needs a tensor type with device storage and
// these moves as backend ops; the sharding decisions and the runner stay as they are.

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
#include "executor/registry.h"
#include "executor/weight_store.h"
#include "model/model.h"

namespace dayzero::executor {

// How TP splits each op is the model's (model::Op::tp_split, the one sharding
// truth the simulator reads too); the forward only carries it out.
using model::TpSplit;

// This rank's place in the plan's groups and the communicators that join them.
struct ParallelContext {
  int tp_rank = 0, tp_size = 1;            // attention TP
  int stage_rank = 0, stage_size = 1;      // this rank among its PP stage's ranks
  int moe_tp_rank = 0, moe_tp_size = 1;    // each expert's width split
  int ep_rank = 0, ep_size = 1;            // experts spread
  int moe_dp_rank = 0;                     // which copy of the expert set serves this rank
  Communicator* tp_comm = nullptr;         // the attention-TP group
  Communicator* stage_comm = nullptr;      // every rank of the stage (expert dispatch and combine)
  int64_t first_layer = 0, end_layer = 0;  // this PP stage's decoder layers [first, end)
  bool first_stage = true, last_stage = true;
  // Routed experts [begin, end) EP rank `ep` holds, of `experts`.
  std::pair<int64_t, int64_t> expert_range(int64_t experts) const { return expert_range_of(ep_rank, experts); }
  std::pair<int64_t, int64_t> expert_range_of(int ep, int64_t experts) const;
};

// Every weight this rank reads: its stage's layers (its experts only), the
// embedding on the first stage, final norm and head on the last.
std::set<std::string> needed_weights(const model::Model& m, const ParallelContext& par);

// The rows of one step: sequence seqs[i] (a KvCache id) owns rows
// [offsets[i], offsets[i + 1]); positions are per row.
struct Batch {
  std::vector<int> seqs;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> positions;
  int64_t rows() const { return offsets.back(); }
};

class Forward {
 public:
  Forward(const model::Model& m, const Backend& backend, WeightStore& w, const ParallelContext& par, OpTimer& timer,
          double rms_norm_eps, int64_t kv_block_tokens, plan::KvDtype kv_storage = plan::KvDtype::fp32);

  int add_sequence();
  void release_sequence(int seq);  // its KV blocks back to the free list, its linear-attention states dropped
  void preallocate_kv(int64_t blocks);
  // Reserves cache room for `counts[i]` more tokens of sequence `seqs[i]`: the step's rows.
  Batch begin_step(const std::vector<int>& seqs, const std::vector<int64_t>& counts);

  Tensor embed(std::span<const int64_t> tokens);
  // Decoder layer `l` on the residual stream x ([rows, hidden]), appending the
  // rows' keys and values to their sequences' caches.
  void layer(int64_t l, Tensor& x, const Batch& b);
  Tensor head(Tensor x);  // final norm and LM head: logits [rows, vocab]

  // Before the first step: builds the TP shards that are copies (row splits,
  // quantized or input-major weights), pages in the shards that are views (a
  // column split's rows) and every unsplit weight. Each rank reads only its
  // shards; returns the bytes read from the checkpoint (read_bytes()).
  int64_t prepare();
  int64_t read_bytes() const { return read_bytes_; }
  // Of those, the bytes the kernels read in place (views of the mapping, or of weights
  // converted at load): with the copies (shard_copy_bytes), what the rank holds.
  int64_t view_bytes() const { return view_bytes_; }
  int64_t shard_copy_bytes() const;  // float32 copies held

  int64_t kv_bytes() const { return kv_->bytes() + (index_kv_ ? index_kv_->bytes() : 0) + linear_state_bytes(); }
  int64_t linear_state_bytes() const;  // the live sequences' gated delta-net states
  const KvCache& kv() const { return *kv_; }

 private:
  const model::Op& op(const model::Layer& layer, std::string_view name) const;
  Tensor gemm(const model::Op& op, const Tensor& x, int64_t expert = -1);
  void norm(const model::Op& op, Tensor& x, double eps = -1);  // eps < 0: the config's rms_norm_eps
  void norm_across_heads(const model::Op& op, Tensor& x);
  Tensor attention(const model::Layer& L, Tensor& h, const Batch& b);
  Tensor mla(const model::Layer& L, Tensor& h, const Batch& b);
  // DeepSeek sparse attention's indexer (forward_indexer.cpp): each sequence's keep mask [rows, context].
  std::vector<Tensor> sparse_keep(const model::Layer& L, const Tensor& h, const Tensor& q_latent, const Batch& b);
  Tensor linear_attention(const model::Layer& L, const Tensor& h, const Batch& b);  // forward_linear.cpp
  LinearAttentionParams linear_params() const;                                      // this rank's heads
  // Gated delta-net TP: this rank's rows of in_proj_qkv / conv1d, [q | k | v] sections each split by heads.
  std::vector<std::pair<int64_t, int64_t>> qkv_sections(int rank, int size) const;
  template <class Kernel>
  Tensor per_sequence(const model::Op& a_op, const std::string& variant, const Tensor& q, const Batch& b,
                      int64_t out_cols, Kernel&& kernel);
  // Sequence i's rows of x for a per-sequence kernel: x itself when the batch is that one
  // sequence (no copy), else the backend's copy of them where x lies, held in `slice`.
  const Tensor& sequence_rows(const Tensor& x, const Batch& b, size_t i, Tensor& slice) const;
  // The per-sequence kernels' results in batch order, stacked by the backend (one: as it is).
  Tensor stacked(std::vector<Tensor>& parts) const;
  Tensor mlp(const model::Layer& L, const Tensor& h, const std::string& prefix);
  Tensor moe(const model::Layer& L, const Tensor& h);
  // One MoE layer's expert exchange on this rank (forward_moe.cpp); sizes in floats.
  struct Dispatch {
    int64_t own_lo = 0, own_hi = 0;             // the tokens [lo, hi) this rank dispatches
    std::vector<std::pair<int, int64_t>> back;  // pair p = (t - own_lo) K + k's moe-TP partial j: (rank, row)
    std::vector<int64_t> send_rows, recv_rows;  // per stage rank
    std::vector<int64_t> recv_experts;          // each received row's expert
    Tensor received;                            // [rows, hidden]: the rows this rank's experts run, by source rank
  };
  // The router GEMM and top-k: each token's experts and weights.
  Routing routing(const model::Layer& L, const Tensor& h);
  // This rank's tokens' (token, slot) pairs to the ranks holding their experts (all-to-alls: counts, rows).
  Dispatch dispatch(const Tensor& h, const Routing& r);
  // The experts' outputs `y` back to their dispatchers (all-to-all), then each pair's moe-TP partials summed and
  // out[t] += w y over slots, in fixed orders: this rank's rows of the layer's routed output.
  Tensor combine(const model::Layer& L, const Tensor& h, const Routing& r, const Dispatch& d, const Tensor& y);
  Tensor experts(const model::Layer& L, const Dispatch& d);  // forward_moe.cpp
  // Rows whose experts are `of` (each in [lo, hi)) through them, in expert order and, within
  // an expert, as given: the outputs in the order given (`rows` itself, or the rows of `x`
  // it names: the pairs' tokens). `what` names the rows for the error an expert outside
  // [lo, hi) raises.
  Tensor through_experts(const model::Layer& L, const Tensor& x, std::span<const int64_t> of, int64_t lo, int64_t hi,
                         int64_t rows_per_x, const char* what);
  // A stage of one rank (every expert here, no exchange): the pairs sorted by expert and
  // back where h lies (Backend::gather_rows), the same rows through the same experts and
  // the same combine as dispatch / experts / combine, so the same bits.
  Tensor moe_local(const model::Layer& L, const Tensor& h, const Routing& r);
  // out[t] += w_p ypairs[p] for pair p of token rows[p] (the moe_combine op, timed):
  // this rank's rows [own_lo, own_hi) of the layer's routed output, zeros elsewhere.
  Tensor weighted_sum(const model::Layer& L, const Tensor& h, const Tensor& ypairs, const std::vector<int64_t>& rows,
                      const std::vector<float>& weights, int64_t own_lo, int64_t own_hi);
  Tensor expert(const model::Layer& L, const Tensor& xe, int64_t e);
  Tensor activation(const model::Op& op, const Tensor& gate, const Tensor& up);
  // TP: output features [lo, hi) of rank `rank` of `size` for an op split by outputs
  // (column, kv_heads or vocab) with `out` outputs.
  std::pair<int64_t, int64_t> out_range(const model::Op& op, int64_t out, int rank, int size) const;
  // The shard of `sw` that rank `rank` of `size` holds under `split` (whole when replicated or size 1).
  StoredWeight shard(const model::Op& op, const StoredWeight& sw, TpSplit split, int rank, int size);
  StoredWeight float32_kv_b(const model::Op& kv_b_op);  // forward.cpp
  StoredWeight int4_shard(const StoredWeight& sw, bool by_out, int64_t lo, int64_t hi);
  std::unique_ptr<Tensor> qkv_sections_copy(const StoredWeight& sw, int rank, int size);

  const model::Model& m_;
  const Backend& be_;
  WeightStore& w_;
  ParallelContext par_;
  OpTimer& timer_;
  double eps_;
  RopeTable rope_;
  std::set<std::string> input_major_;  // weight patterns stored [in, out]
  std::unique_ptr<KvCache> kv_;        // paged; MLA: latent (keys) and rotated rope key (values)
  std::map<std::pair<int64_t, int>, LinearState> linear_state_;  // by (stage layer, sequence)
  std::unique_ptr<KvCache> index_kv_;  // DeepSeek sparse attention: the indexer's key per token (same block tables)
  int64_t read_bytes_ = 0;
  int64_t view_bytes_ = 0;
  model::Op attention_cost_op_;  // the attention op as this rank runs it (its heads), for costs
  // Shards that are not contiguous in the mapping (row-split columns, quantized
  // slices): copied to float32 once, by weight name.
  std::map<std::string, std::unique_ptr<Tensor>> shard_copies_;
  std::map<std::string, std::vector<std::byte>> shard_bytes_;  // INT4 input splits, repacked (still INT4)
};

}  // namespace dayzero::executor
