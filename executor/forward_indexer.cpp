// The forward's DeepSeek sparse attention indexer (GLM-5): its queries from the MLA
// query latent, one key per token (cached), a weight per indexer head; each query
// keeps its top-k tokens for the attention. Its projections are replicated over
// attention TP (every rank computes the same selection).
#include <stdexcept>

#include "executor/forward.h"
#include "executor/forward_detail.h"
#include "executor/registry.h"

namespace dayzero::executor {

using model::OpKind;
using namespace detail;

namespace {
// nn.LayerNorm(index_head_dim, eps=1e-6) in transformers' GlmMoeDsaIndexer (as in
// DeepSeek-V3.2's reference indexer).
constexpr double kIndexerNormEps = 1e-6;
}  // namespace

std::vector<Tensor> Forward::sparse_keep(const model::Layer& L, const Tensor& h, const Tensor& q_latent,
                                         const Batch& b) {
  const auto& c = m_.config;
  const auto& x = c.indexer;
  if (q_latent.numel() == 0) throw std::runtime_error("sparse attention needs MLA's query latent (q_lora_rank > 0)");
  Tensor q = gemm(op(L, "wq_b"), q_latent), k = gemm(op(L, "wk"), h);
  const Tensor w = gemm(op(L, "weights_proj"), h);
  const model::Op& kn = op(L, "indexer.k_norm");
  const KernelEntry& nk = be_.kernel(OpKind::norm, "layer_norm");
  const auto ln = std::get<LayerNormFn>(nk.fn);
  const std::span<const float> weight = w_.floats(kn.weights.at(0)), bias = w_.floats(kn.weights.at(1));
  timer_.run_inplace(OpKey{&kn, "layer_norm", {k.rows(), k.cols()}, nk.cost(kn, {k.rows()})}, k,
                     [&](Tensor& t) { ln(t, weight, bias, kIndexerNormEps); });
  // RoPE on the first qk_rope_head_dim features of each indexer head and of the key
  // (MLA's table; interleaved pairs as GLM-5's indexer_rope_interleave).
  const auto layout = c.rope.interleaved ? RopeLayout::interleaved : RopeLayout::half;
  be_.rope(q, x.heads, x.head_dim, 0, b.positions, rope_, layout);
  be_.rope(k, 1, x.head_dim, 0, b.positions, rope_, layout);
  const int64_t layer = L.index - par_.first_layer;
  for (size_t i = 0; i < b.seqs.size(); ++i)
    index_kv_->write(layer, b.seqs[i], b.positions[static_cast<size_t>(b.offsets[i])], k, nullptr, b.offsets[i],
                     b.offsets[i + 1] - b.offsets[i]);
  const model::Op& ix = op(L, "indexer");
  const KernelEntry& ke = be_.kernel(OpKind::indexer, "dsa_topk");
  const auto fn = std::get<IndexerFn>(ke.fn);
  const IndexerParams p{x.heads, x.head_dim, x.topk};
  std::vector<Tensor> keep;
  for (size_t i = 0; i < b.seqs.size(); ++i) {
    const int64_t lo = b.offsets[i], hi = b.offsets[i + 1];
    const std::span<const int64_t> pos(b.positions.data() + lo, static_cast<size_t>(hi - lo));
    const int64_t C = pos.back() + 1;
    Tensor q_slice, w_slice;
    const Tensor &qi = sequence_rows(q, b, i, q_slice), &wi = sequence_rows(w, b, i, w_slice);
    keep.push_back(timer_.run(OpKey{&ix, "dsa_topk", {hi - lo, C}, ke.cost(ix, {hi - lo, C})},
                              [&] { return fn(qi, wi, pos, index_kv_->pages(layer, b.seqs[i]), p); }));
  }
  return keep;
}

}  // namespace dayzero::executor
