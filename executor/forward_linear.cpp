// The forward's gated delta-net layers (Qwen3.5): projections, the kernel over each
// sequence's state, out_proj. TP splits the heads: in_proj_qkv and the conv's
// channels by [q | k | v] section, z / b / a by value head, out_proj by inputs.
#include <array>
#include <stdexcept>

#include "executor/forward.h"
#include "executor/forward_detail.h"
#include "executor/registry.h"

namespace dayzero::executor {

using model::OpKind;
using namespace detail;

std::vector<std::pair<int64_t, int64_t>> Forward::qkv_sections(int rank, int size) const {
  const auto& l = m_.config.linear;
  const int64_t kd = l.key_dim(), hk = l.key_heads / size, hv = l.value_heads / size;
  const int64_t dk = l.key_head_dim, dv = l.value_head_dim;
  return {{rank * hk * dk, (rank + 1) * hk * dk},
          {kd + rank * hk * dk, kd + (rank + 1) * hk * dk},
          {2 * kd + rank * hv * dv, 2 * kd + (rank + 1) * hv * dv}};
}

// Sequences: the paged KV cache's ids, which the indexer's key cache and the
// gated delta-net states share.
int Forward::add_sequence() {
  const int seq = kv_->add_sequence();
  if (index_kv_ && index_kv_->add_sequence() != seq)
    throw std::logic_error("the indexer's key cache and the KV cache disagree on sequence ids");
  // Each gated delta-net layer's state, made now (before any step: it is the sequence's
  // cache, not a step's activations) where the backend's kernels update it.
  for (int64_t l = par_.first_layer; l < par_.end_layer; ++l)
    if (m_.layers.at(static_cast<size_t>(l)).attention == model::LayerAttention::linear)
      linear_state_[{l - par_.first_layer, seq}] = zero_linear_state(linear_params(), be_.cache_zeros);
  return seq;
}

// This rank's share of the gated delta-net (TP splits the heads).
LinearAttentionParams Forward::linear_params() const {
  const auto& l = m_.config.linear;
  const int tp = par_.tp_size;
  if (l.key_heads % tp != 0 || l.value_heads % tp != 0)
    throw std::runtime_error("gated delta-net of " + std::to_string(l.key_heads) + " key / " +
                             std::to_string(l.value_heads) + " value heads does not split over attention TP " +
                             std::to_string(tp));
  LinearAttentionParams p;
  p.key_heads = l.key_heads / tp;
  p.value_heads = l.value_heads / tp;
  p.key_head_dim = l.key_head_dim;
  p.value_head_dim = l.value_head_dim;
  p.conv_kernel = l.conv_kernel;
  p.norm_eps = eps_;
  return p;
}

void Forward::preallocate_kv(int64_t blocks) {
  kv_->preallocate(blocks);
  if (index_kv_) index_kv_->preallocate(blocks);
}

void Forward::release_sequence(int seq) {
  kv_->release(seq);
  if (index_kv_) index_kv_->release(seq);
  for (auto it = linear_state_.begin(); it != linear_state_.end();)
    it = it->first.second == seq ? linear_state_.erase(it) : std::next(it);
}

int64_t Forward::linear_state_bytes() const {
  int64_t b = 0;
  for (const auto& [key, s] : linear_state_)
    b += (s.conv.numel() + s.recurrent.numel()) * static_cast<int64_t>(sizeof(float));
  return b;
}

Tensor Forward::linear_attention(const model::Layer& L, const Tensor& h, const Batch& b) {
  const auto& l = m_.config.linear;
  const int tp = par_.tp_size, r = par_.tp_rank;
  const LinearAttentionParams p = linear_params();
  const Tensor qkv = gemm(op(L, "in_proj_qkv"), h), z = gemm(op(L, "in_proj_z"), h);
  const Tensor beta_in = gemm(op(L, "in_proj_b"), h), a = gemm(op(L, "in_proj_a"), h);
  const model::Op& la = op(L, "linear_attention");
  // This rank's conv channels (the q, k, v sections' rows of [conv_dim, 1, K]) and value heads.
  const std::span<const float> conv_all = w_.floats(la.weights.at(0));
  std::vector<float> conv;
  for (const auto& [lo, hi] : qkv_sections(r, tp))
    conv.insert(conv.end(), conv_all.begin() + lo * l.conv_kernel, conv_all.begin() + hi * l.conv_kernel);
  const auto heads = [&](const std::string& name) {
    return w_.floats(name).subspan(static_cast<size_t>(r * p.value_heads), static_cast<size_t>(p.value_heads));
  };
  const LinearAttentionWeights w{conv, heads(la.weights.at(1)), heads(la.weights.at(2)), w_.floats(la.weights.at(3))};
  model::Op costed = la;  // this rank's heads
  costed.lin.key_heads = p.key_heads;
  costed.lin.value_heads = p.value_heads;
  costed.n = la.n / tp;
  costed.k = la.k / tp;
  const KernelEntry& ke = be_.kernel(OpKind::linear_attention, "gated_delta_net");
  const auto fn = std::get<LinearAttentionFn>(ke.fn);
  const int64_t layer = L.index - par_.first_layer;
  std::vector<Tensor> parts;  // each sequence's output rows
  for (size_t i = 0; i < b.seqs.size(); ++i) {
    const int64_t lo = b.offsets[i], hi = b.offsets[i + 1];
    const auto it = linear_state_.find({layer, b.seqs[i]});
    if (it == linear_state_.end())
      throw std::logic_error("sequence " + std::to_string(b.seqs[i]) + " has no gated delta-net state in layer " +
                             std::to_string(L.index) + " (Forward::add_sequence makes it)");
    LinearAttentionParams pi = p;
    pi.chunk = hi - lo > 1 ? 64 : 0;  // the reference: chunks of 64 for prompts, the recurrence for decode
    std::array<Tensor, 4> slices;
    const Tensor &qkv_i = sequence_rows(qkv, b, i, slices[0]), &z_i = sequence_rows(z, b, i, slices[1]),
                 &beta_i = sequence_rows(beta_in, b, i, slices[2]), &a_i = sequence_rows(a, b, i, slices[3]);
    Tensor out;  // in place: the timed repeats run on copies of the step's starting state, then the call
    timer_.run_inplace(OpKey{&la, "gated_delta_net", {hi - lo, costed.n}, ke.cost(costed, {hi - lo})}, it->second,
                       [&](LinearState& s) { out = fn(qkv_i, z_i, beta_i, a_i, w, s, pi); });
    parts.push_back(std::move(out));
  }
  if (h.rows() == 0) return gemm(op(L, "out_proj"), Tensor({0, p.value_heads * p.value_head_dim}));
  return gemm(op(L, "out_proj"), stacked(parts));
}

}  // namespace dayzero::executor
