#include "executor/forward.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "executor/forward_detail.h"
#include "executor/registry.h"

namespace dayzero::executor {

using model::OpKind;
using namespace detail;

std::pair<int64_t, int64_t> ParallelContext::expert_range_of(int ep, int64_t experts) const {
  const int64_t per = experts / ep_size;
  return {per * ep, per * (ep + 1)};
}

namespace {
OpCost rope_cost(const Backend& be, const model::Op& op, int64_t tokens, const std::string& type) {
  return be.kernel(OpKind::rope, type).cost(op, {tokens});
}
}  // namespace

std::set<std::string> needed_weights(const model::Model& m, const ParallelContext& par) {
  std::set<std::string> out;
  auto add_op = [&](const model::Op& op) {
    for (const auto& w : op.weights) {
      if (!per_expert(w)) {
        out.insert(w);
        continue;
      }
      const auto [lo, hi] = par.expert_range(op.experts);
      for (int64_t e = lo; e < hi; ++e) out.insert(substitute(w, e));
    }
  };
  if (par.first_stage)
    for (const auto& op : m.pre_ops) add_op(op);
  for (const auto& layer : m.layers)
    if (layer.index >= par.first_layer && layer.index < par.end_layer && !layer.mtp)
      for (const auto& op : layer.ops) add_op(op);
  if (par.last_stage)
    for (const auto& op : m.post_ops) add_op(op);
  return out;
}

Forward::Forward(const model::Model& m, const Backend& backend, WeightStore& w, const ParallelContext& par,
                 OpTimer& timer, double rms_norm_eps, int64_t kv_block_tokens, plan::KvDtype kv_storage)
    : m_(m), be_(backend), w_(w), par_(par), timer_(timer), eps_(rms_norm_eps) {
  const auto& c = m.config;
  const bool mla = c.attention == model::AttentionKind::mla;
  const int64_t rot_dim = mla ? c.mla.qk_rope_head_dim : c.rotary_dim > 0 ? c.rotary_dim : c.head_dim;
  rope_ = be_.fn<RopeTableFn>(OpKind::rope, c.rope.type)(c.rope, rot_dim);
  for (const auto& wt : m.weights)
    if (wt.input_major) input_major_.insert(wt.name);
  const int64_t kv_heads = std::max<int64_t>(1, c.num_kv_heads / par.tp_size);  // this rank's
  const int64_t k_width = mla ? c.mla.kv_lora_rank : kv_heads * c.head_dim;
  const int64_t v_width = mla ? c.mla.qk_rope_head_dim : kv_heads * c.head_dim;
  std::vector<bool> cached;  // the stage's layers that attend (not Qwen3.5's linear-attention ones)
  for (int64_t l = par.first_layer; l < par.end_layer; ++l)
    cached.push_back(m.layers.at(static_cast<size_t>(l)).attention != model::LayerAttention::linear);
  kv_ = std::make_unique<KvCache>(std::move(cached), kv_block_tokens, k_width, v_width, kv_storage, be_.make_kv_store);
  if (mla && c.indexer.heads > 0)
    index_kv_ = std::make_unique<KvCache>(par.end_layer - par.first_layer, kv_block_tokens, c.indexer.head_dim, 0,
                                          plan::KvDtype::fp32, be_.make_kv_store);
}

const model::Op& Forward::op(const model::Layer& layer, std::string_view name) const {
  for (const auto& o : layer.ops)
    if (o.name == name) return o;
  throw std::logic_error("layer " + std::to_string(layer.index) + " has no op '" + std::string(name) + "'");
}

void Forward::norm(const model::Op& op, Tensor& x, double eps) {
  const std::string variant = op_variant(m_, op).variant;  // "rms", Qwen3.5's "rms_zero_centered"
  if (variant == "rms_across_heads") return norm_across_heads(op, x);
  const std::span<const float> weight = w_.floats(op.weights.at(0));
  const KernelEntry& k = be_.kernel(OpKind::norm, variant);
  const NormFn fn = std::get<NormFn>(k.fn);
  timer_.run_inplace(OpKey{&op, variant, {x.rows(), x.cols()}, k.cost(op, {x.rows()})}, x,
                     [&](Tensor& t) { fn(t, weight, eps < 0 ? eps_ : eps); });
}

// MiniMax-M2's q_norm / k_norm: one RMSNorm over all the layer's heads, so under TP the
// rows' sums of squares are all-reduced over the attention-TP group first.
void Forward::norm_across_heads(const model::Op& op, Tensor& x) {
  const auto& c = m_.config;
  const bool keys = op.name == "k_norm";
  const int64_t heads = keys ? c.num_kv_heads : c.num_heads, tp = par_.tp_size;
  if (heads % tp != 0 && tp % heads != 0)
    throw std::runtime_error(op.name + " over all " + std::to_string(heads) + " heads of the layer: attention TP " +
                             std::to_string(tp) + " must divide them or be a multiple of them");
  const std::span<const float> all = w_.floats(op.weights.at(0));
  // This rank's heads; with fewer KV heads than ranks each head sits on tp / heads ranks
  // (as TpSplit::kv_heads places them), so the all-reduced sum counts it that many times.
  const int64_t first = heads >= tp ? par_.tp_rank * x.cols() : par_.tp_rank * heads / tp * x.cols();
  const double copies = heads >= tp ? 1.0 : static_cast<double>(tp / heads);
  const std::span<const float> weight = all.subspan(static_cast<size_t>(first), static_cast<size_t>(x.cols()));
  std::vector<float> mean_sq = be_.row_sum_squares(x);  // where x lies: it stays there
  if (tp > 1) par_.tp_comm->all_reduce_sum(mean_sq);
  for (float& v : mean_sq) v = static_cast<float>(v / (static_cast<double>(all.size()) * copies));
  const KernelEntry& k = be_.kernel(OpKind::norm, "rms_across_heads");
  const auto fn = std::get<RmsGivenMeanFn>(k.fn);
  timer_.run_inplace(OpKey{&op, "rms_across_heads", {x.rows(), x.cols()}, k.cost(op, {x.rows()})}, x,
                     [&](Tensor& t) { fn(t, weight, eps_, mean_sq); });
}

Tensor Forward::activation(const model::Op& op, const Tensor& gate, const Tensor& up) {
  const std::string variant = op_variant(m_, op).variant;
  const KernelEntry& k = be_.kernel(OpKind::activation, variant);
  const ActivationFn fn = std::get<ActivationFn>(k.fn);
  model::Op one = op;
  one.active_experts = 0;  // one call covers the rows given, not top-k per token
  Tensor y = timer_.run(OpKey{&op, variant, {gate.rows(), gate.cols()}, k.cost(one, {gate.rows()})},
                        [&] { return fn(gate, up, ActivationParams{}); });
  return y;
}

// MLA's kv_b (this rank's heads) as float32: decode attends in the latent space
// through it every step, so a quantized checkpoint's kv_b is dequantized once.
StoredWeight Forward::float32_kv_b(const model::Op& kv_b_op) {
  StoredWeight sw = shard(kv_b_op, w_.get(kv_b_op.weights.at(0)),
                          par_.tp_size > 1 ? kv_b_op.tp_split : TpSplit::replicated, par_.tp_rank, par_.tp_size);
  if (sw.kind == model::StorageKind::plain && sw.dtype == model::DType::f32) return sw;
  auto& copy = shard_copies_[sw.name + "#f32"];
  if (!copy) {
    copy = std::make_unique<Tensor>(dequantize_matrix(sw, 0));
    read_bytes_ += static_cast<int64_t>(sw.data.size() + sw.scales.size());
  }
  sw.kind = model::StorageKind::plain;
  sw.dtype = model::DType::f32;
  sw.shape = copy->shape;
  sw.data = std::as_bytes(std::span<const float>(copy->data));
  sw.scales = {};
  return sw;
}

int64_t Forward::shard_copy_bytes() const {
  int64_t b = 0;
  for (const auto& [name, t] : shard_copies_) b += t->numel() * static_cast<int64_t>(sizeof(float));
  for (const auto& [name, bytes] : shard_bytes_) b += static_cast<int64_t>(bytes.size());
  return b;
}

Batch Forward::begin_step(const std::vector<int>& seqs, const std::vector<int64_t>& counts) {
  Batch b;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int64_t first = kv_->extend(seqs[i], counts[i]);
    if (index_kv_) index_kv_->extend(seqs[i], counts[i]);
    b.seqs.push_back(seqs[i]);
    b.offsets.push_back(b.offsets.back() + counts[i]);
    for (int64_t p = first; p < first + counts[i]; ++p) b.positions.push_back(p);
  }
  return b;
}

// Vocab-parallel over attention TP: each rank gathers the rows of its vocabulary
// slice (zeros for the others' tokens), then an all-reduce sums the slices.
Tensor Forward::embed(std::span<const int64_t> tokens) {
  const model::Op& op = m_.pre_ops.at(0);
  StoredWeight table = w_.get(op.weights.at(0));
  const int64_t vocab = table.rows(), T = static_cast<int64_t>(tokens.size());
  const auto [lo, hi] =
      par_.tp_size > 1 ? out_range(op, vocab, par_.tp_rank, par_.tp_size) : std::pair{int64_t{0}, vocab};
  table = shard(op, table, par_.tp_size > 1 ? op.tp_split : TpSplit::replicated, par_.tp_rank, par_.tp_size);
  std::vector<int64_t> local(tokens.size());
  // A token outside this rank's slice embeds as zeros (the kernel's -1), so the sum over
  // ranks is its row; x stays where the kernel left it.
  for (size_t i = 0; i < tokens.size(); ++i) local[i] = tokens[i] >= lo && tokens[i] < hi ? tokens[i] - lo : -1;
  const KernelEntry& k = be_.kernel(OpKind::embedding, "gather");
  const EmbeddingFn fn = std::get<EmbeddingFn>(k.fn);
  model::Op costed = op;  // reads T rows, not the table
  costed.weight_bytes = std::min(op.weight_bytes, op.weight_bytes / m_.config.vocab_size * T);
  Tensor x = timer_.run(OpKey{&op, "gather", {T, op.n}, k.cost(costed, {T})}, [&] { return fn(table, local); });
  if (par_.tp_size > 1) par_.tp_comm->all_reduce_sum(x.data);
  return x;
}

void Forward::layer(int64_t l, Tensor& x, const Batch& b) {
  const model::Layer& L = m_.layers.at(static_cast<size_t>(l));
  Tensor h = x;
  norm(op(L, "input_layernorm"), h);
  if (L.attention == model::LayerAttention::linear) be_.add(x, linear_attention(L, h, b));
  else be_.add(x, m_.config.attention == model::AttentionKind::mla ? mla(L, h, b) : attention(L, h, b));
  h = x;
  norm(op(L, "post_attention_layernorm"), h);
  be_.add(x, L.moe ? moe(L, h) : mlp(L, h, ""));
}

Tensor Forward::head(Tensor x) {
  norm(m_.post_ops.at(0), x);
  return gemm(m_.post_ops.at(1), x);
}

Tensor Forward::mlp(const model::Layer& L, const Tensor& h, const std::string& prefix) {
  const Tensor g = gemm(op(L, prefix + "gate_proj"), h), u = gemm(op(L, prefix + "up_proj"), h);
  return gemm(op(L, prefix + "down_proj"), activation(op(L, prefix + "act"), g, u));
}

// Attention over each sequence's pages; the rows of sequence i are
// [b.offsets[i], b.offsets[i + 1]). One kernel call (and timing key) per sequence.
template <class Kernel>
Tensor Forward::per_sequence(const model::Op& a_op, const std::string& variant, const Tensor& q, const Batch& b,
                             int64_t out_cols, Kernel&& kernel) {
  const KernelEntry& ke = be_.kernel(OpKind::attention, variant);
  const auto call = [&](size_t i, const Tensor& qs) {
    const int64_t lo = b.offsets[i], hi = b.offsets[i + 1];
    const std::span<const int64_t> pos(b.positions.data() + lo, static_cast<size_t>(hi - lo));
    const int64_t C = pos.back() + 1;
    return timer_.run(OpKey{&a_op, variant, {hi - lo, C}, ke.cost(attention_cost_op_, {hi - lo, C})},
                      [&] { return kernel(ke, qs, pos, b.seqs[i]); });
  };
  if (q.rows() == 0) return Tensor({0, out_cols});
  std::vector<Tensor> parts;
  for (size_t i = 0; i < b.seqs.size(); ++i) {
    Tensor slice;
    parts.push_back(call(i, sequence_rows(q, b, i, slice)));
  }
  return stacked(parts);
}

const Tensor& Forward::sequence_rows(const Tensor& x, const Batch& b, size_t i, Tensor& slice) const {
  if (b.seqs.size() == 1) return x;
  slice = be_.rows(x, b.offsets[i], b.offsets[i + 1] - b.offsets[i]);
  return slice;
}

Tensor Forward::stacked(std::vector<Tensor>& parts) const {
  return parts.size() == 1 ? std::move(parts.front()) : be_.stack_rows(parts);
}

Tensor Forward::attention(const model::Layer& L, Tensor& h, const Batch& b) {
  const auto& c = m_.config;
  Tensor q = gemm(op(L, "q_proj"), h), k = gemm(op(L, "k_proj"), h), v = gemm(op(L, "v_proj"), h);
  Tensor gate;
  if (c.attn_output_gate) split_query_gate(q, gate, c.head_dim, be_.columns);  // Qwen3.5: per head [query | gate]
  if (c.qk_norm) {
    norm(op(L, "q_norm"), q);
    norm(op(L, "k_norm"), k);
  }
  const model::Op& a_op = op(L, "attention");
  const auto& as = a_op.attn;
  // Heads are what TP splits: this rank's share (all of them on one rank).
  const int64_t heads = as.heads / par_.tp_size, kv_heads = std::max<int64_t>(1, as.kv_heads / par_.tp_size);
  const model::Op& rope_op = op(L, "rope");
  const std::string rv = m_.config.rope.type;
  std::array<Tensor, 2> qk{std::move(q), std::move(k)};
  timer_.run_inplace(OpKey{&rope_op, rv, {qk[0].rows(), rope_op.n}, rope_cost(be_, rope_op, qk[0].rows(), rv)}, qk,
                     [&](std::array<Tensor, 2>& t) {
                       be_.rope(t[0], heads, c.head_dim, 0, b.positions, rope_, RopeLayout::half);
                       be_.rope(t[1], kv_heads, c.head_dim, 0, b.positions, rope_, RopeLayout::half);
                     });
  const int64_t layer = L.index - par_.first_layer;
  for (size_t i = 0; i < b.seqs.size(); ++i)
    kv_->write(layer, b.seqs[i], b.positions[static_cast<size_t>(b.offsets[i])], qk[1], &v, b.offsets[i],
               b.offsets[i + 1] - b.offsets[i]);
  AttentionParams p;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.qk_dim = as.qk_head_dim;
  p.v_dim = as.v_head_dim;
  p.scale = 1.0 / std::sqrt(static_cast<double>(as.qk_head_dim));
  p.window = as.window;
  if (as.sinks)
    p.sinks =
        w_.floats(a_op.weights.at(0)).subspan(static_cast<size_t>(heads * par_.tp_rank), static_cast<size_t>(heads));
  attention_cost_op_ = a_op;  // this rank's heads
  attention_cost_op_.attn.heads = heads;
  attention_cost_op_.attn.kv_elems_per_token = as.kv_elems_per_token * kv_heads / as.kv_heads;
  const Tensor o = per_sequence(a_op, attention_variant(as), qk[0], b, heads * as.v_head_dim,
                                [&](const KernelEntry& ke, const Tensor& qs, std::span<const int64_t> pos, int seq) {
                                  KvRows rows;  // a reduced-precision cache's rows as float32
                                  return std::get<AttentionFn>(ke.fn)(qs, pos, kv_->pages(layer, seq, rows), p);
                                });
  if (c.attn_output_gate) return gemm(op(L, "o_proj"), activation(op(L, "attn_output_gate"), gate, o));
  return gemm(op(L, "o_proj"), o);
}

// DeepSeek MLA: the cache holds the normalized latent (keys) and the rotated rope
// key (values). TP splits the heads: q_b / kv_b by head rows, o_proj by inputs.
Tensor Forward::mla(const model::Layer& L, Tensor& h, const Batch& b) {
  const auto& c = m_.config;
  const auto& md = c.mla;
  Tensor q, qa;
  if (md.q_lora_rank > 0) {
    qa = gemm(op(L, "q_a_proj"), h);
    norm(op(L, "q_a_layernorm"), qa, kMlaLatentNormEps);
    q = gemm(op(L, "q_b_proj"), qa);
  } else {
    q = gemm(op(L, "q_proj"), h);
  }
  const Tensor ckv = gemm(op(L, "kv_a_proj_with_mqa"), h);
  Tensor latent = be_.columns(ckv, 0, md.kv_lora_rank);
  Tensor k_rope = be_.columns(ckv, md.kv_lora_rank, md.qk_rope_head_dim);
  norm(op(L, "kv_a_layernorm"), latent, kMlaLatentNormEps);
  const auto layout = c.rope.interleaved ? RopeLayout::interleaved : RopeLayout::half;
  const int64_t qk = md.qk_nope_head_dim + md.qk_rope_head_dim, heads = c.num_heads / par_.tp_size;
  const model::Op& rope_op = op(L, "rope");
  std::array<Tensor, 2> qr{std::move(q), std::move(k_rope)};
  timer_.run_inplace(
      OpKey{&rope_op, c.rope.type, {qr[0].rows(), rope_op.n}, rope_cost(be_, rope_op, qr[0].rows(), c.rope.type)}, qr,
      [&](std::array<Tensor, 2>& t) {
        be_.rope(t[0], heads, qk, md.qk_nope_head_dim, b.positions, rope_, layout);
        be_.rope(t[1], 1, md.qk_rope_head_dim, 0, b.positions, rope_, layout);
      });
  const int64_t layer = L.index - par_.first_layer;
  for (size_t i = 0; i < b.seqs.size(); ++i)
    kv_->write(layer, b.seqs[i], b.positions[static_cast<size_t>(b.offsets[i])], latent, &qr[1], b.offsets[i],
               b.offsets[i + 1] - b.offsets[i]);
  MlaParams p{heads, md.qk_nope_head_dim, md.qk_rope_head_dim, md.kv_lora_rank, md.v_head_dim, mla_softmax_scale(c),
              {}};
  // Sparse attention: each sequence's rows read only the tokens its indexer keeps.
  const std::vector<Tensor> keep = index_kv_ ? sparse_keep(L, h, qa, b) : std::vector<Tensor>{};
  std::map<int, const Tensor*> keep_of;
  for (size_t i = 0; i < keep.size(); ++i) keep_of[b.seqs[i]] = &keep[i];
  const model::Op& a_op = op(L, "attention");
  const model::Op& kv_b_op = op(L, "kv_b_proj");
  const StoredWeight kv_b = float32_kv_b(kv_b_op);
  attention_cost_op_ = a_op;
  attention_cost_op_.attn.heads = heads;
  const Tensor o = per_sequence(a_op, attention_variant(a_op.attn), qr[0], b, heads * md.v_head_dim,
                                [&](const KernelEntry& ke, const Tensor& qs, std::span<const int64_t> pos, int seq) {
                                  MlaParams ps = p;
                                  if (!keep_of.empty()) ps.keep = keep_of.at(seq);
                                  KvRows rows;
                                  return std::get<MlaFn>(ke.fn)(qs, pos, kv_->pages(layer, seq, rows), kv_b, ps);
                                });
  return gemm(op(L, "o_proj"), o);
}

}  // namespace dayzero::executor
