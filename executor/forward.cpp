#include "executor/forward.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "executor/registry.h"

namespace dayzero::executor {

using model::OpKind;

Split tp_split(const model::Op& op) {
  switch (op.kind) {
    case OpKind::embedding: return Split::vocab;
    case OpKind::gemm:
      if (op.part == model::Part::head) return Split::vocab;
      if (op.name == "o_proj" || op.name.ends_with("down_proj")) return Split::row;
      if (op.name == "kv_a_proj_with_mqa" || op.name == "q_a_proj") return Split::replicated;  // MLA latents
      return Split::column;
    case OpKind::expert_gemm:  // inside an expert (moe.tp): gate/up by columns, down by rows
      return op.name.ends_with("down_proj") || op.name == "experts.w2" ? Split::row : Split::column;
    default: return Split::replicated;
  }
}

std::pair<int64_t, int64_t> ParallelContext::expert_range(int64_t experts) const {
  const int64_t per = experts / ep_size;
  return {per * ep_rank, per * (ep_rank + 1)};
}

namespace {
std::string substitute(const std::string& pattern, int64_t e) {
  const auto at = pattern.find("{e}");
  return at == std::string::npos ? pattern : pattern.substr(0, at) + std::to_string(e) + pattern.substr(at + 3);
}
bool per_expert(const std::string& pattern) { return pattern.find("{e}") != std::string::npos; }
// An expert_gemm op as one expert's call (the inventory's op covers top-k experts per token).
model::Op one_expert(const model::Op& op) {
  model::Op o = op;
  o.weight_bytes = op.experts > 0 ? op.weight_bytes / op.experts : op.weight_bytes;
  o.experts = o.active_experts = 1;
  return o;
}
OpCost rope_cost(const model::Op& op, int64_t tokens, const std::string& type) {
  return find_kernel(cpu_kernel_table(), "cpu", OpKind::rope, type).cost(op, {tokens});
}
void add(Tensor& x, const Tensor& y) {
  for (int64_t i = 0; i < x.numel(); ++i) x.data[i] += y.data[i];
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

Forward::Forward(const model::Model& m, WeightStore& w, const ParallelContext& par, OpTimer& timer,
                 double rms_norm_eps)
    : m_(m), w_(w), par_(par), timer_(timer), eps_(rms_norm_eps) {
  const auto& c = m.config;
  const bool mla = c.attention == model::AttentionKind::mla;
  rope_ = cpu_kernel<RopeTableFn>(OpKind::rope, c.rope.type)(c.rope, mla ? c.mla.qk_rope_head_dim : c.head_dim);
  for (const auto& wt : m.weights)
    if (wt.input_major) input_major_.insert(wt.name);
  const int64_t kv_heads = std::max<int64_t>(1, c.num_kv_heads / par.tp_size);  // this rank's
  const int64_t k_width = mla ? c.mla.kv_lora_rank : kv_heads * c.head_dim;
  const int64_t v_width = mla ? c.mla.qk_rope_head_dim : kv_heads * c.head_dim;
  kv_ = std::make_unique<KvCache>(c.num_layers, 16, k_width, v_width);
  seq_ = kv_->add_sequence();
}

const model::Op& Forward::op(const model::Layer& layer, std::string_view name) const {
  for (const auto& o : layer.ops)
    if (o.name == name) return o;
  throw std::logic_error("layer " + std::to_string(layer.index) + " has no op '" + std::string(name) + "'");
}

void Forward::note_workspace(const Tensor& t) {
  workspace_bytes_ = std::max(workspace_bytes_, t.numel() * static_cast<int64_t>(sizeof(float)));
}

std::pair<int64_t, int64_t> Forward::out_range(const model::Op& op, int64_t out) const {
  const int64_t r = par_.tp_rank, tp = par_.tp_size;
  if (op.name == "k_proj" || op.name == "v_proj") {
    const int64_t kv = m_.config.num_kv_heads, per_head = out / kv;
    if (kv < tp) {  // fewer KV heads than ranks: each rank holds the one its query heads read
      const int64_t h = r * kv / tp;
      return {h * per_head, (h + 1) * per_head};
    }
  }
  return {out * r / tp, out * (r + 1) / tp};
}

// Column / vocab splits of an [out, in] weight are its rows [lo, hi): contiguous in
// the mapping, so a plain weight's shard is a zero-copy view that touches only the
// shard's pages. Row splits (input columns) and [in, out] or quantized weights are
// copied once to float32 (only the shard is kept; row splits read every row).
StoredWeight Forward::shard(const model::Op& op, const StoredWeight& sw, Split split) {
  if (par_.tp_size == 1 || split == Split::replicated) return sw;
  if (sw.matrices() != 1)
    throw std::logic_error("TP shard of '" + sw.name + "': fused multi-matrix weights are not split yet");
  const int64_t out = sw.input_major ? sw.cols() : sw.rows(), in = sw.input_major ? sw.rows() : sw.cols();
  const bool by_out = split != Split::row;
  const auto [lo, hi] = by_out ? out_range(op, out) : std::pair{in * par_.tp_rank / par_.tp_size,
                                                                 in * (par_.tp_rank + 1) / par_.tp_size};
  StoredWeight s = sw;
  if (by_out && !sw.input_major && sw.kind == model::StorageKind::plain && model::dtype_bits(sw.dtype) % 8 == 0) {
    const auto esize = static_cast<size_t>(model::dtype_bits(sw.dtype) / 8);
    const auto row_bytes = static_cast<size_t>(sw.cols()) * esize;
    s.data = sw.data.subspan(static_cast<size_t>(lo) * row_bytes, static_cast<size_t>(hi - lo) * row_bytes);
    s.shape = {hi - lo, sw.cols()};
    return s;
  }
  auto& copy = shard_copies_[sw.name];
  if (!copy) {
    // Logical [out, in] slice, stored output-major.
    const int64_t n_out = by_out ? hi - lo : out, n_in = by_out ? in : hi - lo;
    copy = std::make_unique<Tensor>(std::vector<int64_t>{n_out, n_in});
    std::vector<float> row(static_cast<size_t>(sw.cols()));
    for (int64_t r = 0; r < sw.rows(); ++r) {
      dequantize_row(sw, 0, r, row);
      for (int64_t c = 0; c < sw.cols(); ++c) {
        int64_t o = sw.input_major ? c : r, i = sw.input_major ? r : c;
        if (by_out ? (o < lo || o >= hi) : (i < lo || i >= hi)) continue;
        if (by_out) o -= lo;
        else i -= lo;
        copy->data[static_cast<size_t>(o * n_in + i)] = row[static_cast<size_t>(c)];
      }
    }
  }
  s.kind = model::StorageKind::plain;
  s.dtype = model::DType::f32;
  s.input_major = false;
  s.shape = copy->shape;
  s.data = std::as_bytes(std::span<const float>(copy->data));
  s.scales = {};
  return s;
}

Tensor Forward::gemm(const model::Op& op, const Tensor& x, int64_t expert) {
  const std::string& pattern = op.weights.at(0);
  StoredWeight sw = w_.get(substitute(pattern, expert));
  if (input_major_.count(pattern)) sw.input_major = true;
  const int64_t index = expert >= 0 && !per_expert(pattern) ? expert : 0;  // a fused [experts, ..] tensor
  const Split split = op.kind == OpKind::gemm && par_.tp_size > 1 ? tp_split(op) : Split::replicated;
  const int64_t full_out = sw.input_major ? sw.cols() : sw.rows();
  sw = shard(op, sw, split);
  std::span<const float> bias;
  if (op.weights.size() > 1) {  // "<module>.bias", or gpt-oss's fused "<name>_bias" [experts, n]
    bias = w_.floats(substitute(op.weights[1], expert));
    if (expert >= 0 && !per_expert(pattern)) bias = bias.subspan(expert * op.n, op.n);
    if (split == Split::column || split == Split::vocab) {
      const auto [lo, hi] = out_range(op, full_out);
      bias = bias.subspan(static_cast<size_t>(lo), static_cast<size_t>(hi - lo));
    } else if (split == Split::row && par_.tp_rank != 0) {
      bias = {};  // added once (by TP rank 0) to the partial sums
    }
  }
  const std::string variant = storage_variant({sw.kind, sw.dtype});
  const KernelEntry& k = find_kernel(cpu_kernel_table(), "cpu", op.kind, variant);
  const GemmFn fn = std::get<GemmFn>(k.fn);
  const CostShape shape{x.rows()};
  const OpCost cost = op.kind == OpKind::expert_gemm ? k.cost(one_expert(op), shape) : k.cost(op, shape);
  Tensor y = timer_.run(OpKey{&op, variant, {x.rows(), x.cols()}, cost}, [&] { return fn(x, sw, index, bias); });
  // Row-parallel: each TP rank holds a slice of the inputs, so outputs are partial sums.
  if (split == Split::row) par_.tp_comm->all_reduce_sum(y.data);
  if (split == Split::vocab) {  // each rank has its vocabulary slice: gather [tp][T, V/tp] into [T, V]
    const int64_t T = y.rows(), part = y.cols(), tp = par_.tp_size;
    std::vector<float> all(static_cast<size_t>(T * part * tp));
    par_.tp_comm->all_gather(y.data, all);
    std::vector<int64_t> full_shape = y.shape;
    full_shape.back() = part * tp;
    Tensor full(full_shape);
    for (int64_t r = 0; r < tp; ++r)
      for (int64_t t = 0; t < T; ++t)
        std::copy_n(all.data() + (r * T + t) * part, part, full.row(t) + r * part);
    y = std::move(full);
  }
  note_workspace(y);
  return y;
}

void Forward::norm(const model::Op& op, Tensor& x) {
  const std::span<const float> weight = w_.floats(op.weights.at(0));
  const KernelEntry& k = find_kernel(cpu_kernel_table(), "cpu", OpKind::norm, "rms");
  const NormFn fn = std::get<NormFn>(k.fn);
  timer_.run_inplace(OpKey{&op, "rms", {x.rows(), x.cols()}, k.cost(op, {x.rows()})}, x,
                     [&](Tensor& t) { fn(t, weight, eps_); });
}

Tensor Forward::activation(const model::Op& op, const Tensor& gate, const Tensor& up) {
  const std::string variant = op_variant(m_, op).variant;
  const KernelEntry& k = find_kernel(cpu_kernel_table(), "cpu", OpKind::activation, variant);
  const ActivationFn fn = std::get<ActivationFn>(k.fn);
  model::Op one = op;
  one.active_experts = 0;  // one call covers the rows given, not top-k per token
  Tensor y = timer_.run(OpKey{&op, variant, {gate.rows(), gate.cols()}, k.cost(one, {gate.rows()})},
                        [&] { return fn(gate, up, ActivationParams{}); });
  note_workspace(y);
  return y;
}

Tensor Forward::embed(std::span<const int64_t> tokens) {
  const model::Op& op = m_.pre_ops.at(0);
  const StoredWeight& table = w_.get(op.weights.at(0));
  const KernelEntry& k = find_kernel(cpu_kernel_table(), "cpu", OpKind::embedding, "gather");
  const EmbeddingFn fn = std::get<EmbeddingFn>(k.fn);
  const int64_t T = static_cast<int64_t>(tokens.size());
  return timer_.run(OpKey{&op, "gather", {T, op.n}, k.cost(op, {T})}, [&] { return fn(table, tokens); });
}

void Forward::layer(int64_t l, Tensor& x, std::span<const int64_t> positions) {
  const model::Layer& L = m_.layers.at(static_cast<size_t>(l));
  Tensor h = x;
  norm(op(L, "input_layernorm"), h);
  add(x, m_.config.attention == model::AttentionKind::mla ? mla(L, h, positions) : attention(L, h, positions));
  h = x;
  norm(op(L, "post_attention_layernorm"), h);
  add(x, L.moe ? moe(L, h) : mlp(L, h, ""));
}

Tensor Forward::head(Tensor x) {
  norm(m_.post_ops.at(0), x);
  return gemm(m_.post_ops.at(1), x);
}

Tensor Forward::attention(const model::Layer& L, Tensor& h, std::span<const int64_t> pos) {
  const auto& c = m_.config;
  Tensor q = gemm(op(L, "q_proj"), h), k = gemm(op(L, "k_proj"), h), v = gemm(op(L, "v_proj"), h);
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
  timer_.run_inplace(OpKey{&rope_op, rv, {qk[0].rows(), rope_op.n}, rope_cost(rope_op, qk[0].rows(), rv)}, qk,
                     [&](std::array<Tensor, 2>& t) {
                       apply_rope(t[0], heads, c.head_dim, 0, pos, rope_, RopeLayout::half);
                       apply_rope(t[1], kv_heads, c.head_dim, 0, pos, rope_, RopeLayout::half);
                     });
  reserve(pos);
  kv_->write(L.index, seq_, pos.front(), qk[1].data.data(), v.data.data(), qk[1].rows());
  const KvPages kv = kv_->pages(L.index, seq_);
  AttentionParams p;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.qk_dim = as.qk_head_dim;
  p.v_dim = as.v_head_dim;
  p.scale = 1.0 / std::sqrt(static_cast<double>(as.qk_head_dim));
  p.window = as.window;
  if (as.sinks) p.sinks = w_.floats(a_op.weights.at(0));
  const std::string variant = attention_variant(as);
  const KernelEntry& ke = find_kernel(cpu_kernel_table(), "cpu", OpKind::attention, variant);
  const AttentionFn fn = std::get<AttentionFn>(ke.fn);
  const int64_t T = qk[0].rows(), C = kv.tokens;
  const Tensor o = timer_.run(OpKey{&a_op, variant, {T, C}, ke.cost(a_op, {T, C})},
                              [&] { return fn(qk[0], pos, kv, p); });
  note_workspace(o);
  return gemm(op(L, "o_proj"), o);
}

// DeepSeek MLA: the cache holds the normalized latent (keys) and the rotated rope key (values).
Tensor Forward::mla(const model::Layer& L, Tensor& h, std::span<const int64_t> pos) {
  const auto& c = m_.config;
  const auto& md = c.mla;
  Tensor q;
  if (md.q_lora_rank > 0) {
    Tensor qa = gemm(op(L, "q_a_proj"), h);
    norm(op(L, "q_a_layernorm"), qa);
    q = gemm(op(L, "q_b_proj"), qa);
  } else {
    q = gemm(op(L, "q_proj"), h);
  }
  const Tensor ckv = gemm(op(L, "kv_a_proj_with_mqa"), h);
  Tensor latent({ckv.rows(), md.kv_lora_rank}), k_rope({ckv.rows(), md.qk_rope_head_dim});
  for (int64_t t = 0; t < ckv.rows(); ++t) {
    std::copy(ckv.row(t), ckv.row(t) + md.kv_lora_rank, latent.row(t));
    std::copy(ckv.row(t) + md.kv_lora_rank, ckv.row(t) + ckv.cols(), k_rope.row(t));
  }
  norm(op(L, "kv_a_layernorm"), latent);
  const auto layout = c.rope.interleaved ? RopeLayout::interleaved : RopeLayout::half;
  const int64_t qk = md.qk_nope_head_dim + md.qk_rope_head_dim, heads = c.num_heads / par_.tp_size;
  const model::Op& rope_op = op(L, "rope");
  std::array<Tensor, 2> qr{std::move(q), std::move(k_rope)};
  timer_.run_inplace(OpKey{&rope_op, c.rope.type, {qr[0].rows(), rope_op.n}, rope_cost(rope_op, qr[0].rows(), c.rope.type)}, qr,
                     [&](std::array<Tensor, 2>& t) {
                       apply_rope(t[0], heads, qk, md.qk_nope_head_dim, pos, rope_, layout);
                       apply_rope(t[1], 1, md.qk_rope_head_dim, 0, pos, rope_, layout);
                     });
  reserve(pos);
  kv_->write(L.index, seq_, pos.front(), latent.data.data(), qr[1].data.data(), latent.rows());
  const KvPages kv = kv_->pages(L.index, seq_);
  const MlaParams p{heads, md.qk_nope_head_dim, md.qk_rope_head_dim, md.kv_lora_rank, md.v_head_dim,
                    mla_softmax_scale(c)};
  const model::Op& a_op = op(L, "attention");
  const KernelEntry& ke = find_kernel(cpu_kernel_table(), "cpu", OpKind::attention, "mla");
  const MlaFn fn = std::get<MlaFn>(ke.fn);
  const StoredWeight& kv_b = w_.get(op(L, "kv_b_proj").weights.at(0));
  const int64_t T = qr[0].rows(), C = kv.tokens;
  const Tensor o = timer_.run(OpKey{&a_op, "mla", {T, C}, ke.cost(a_op, {T, C})},
                              [&] { return fn(qr[0], pos, kv, kv_b, p); });
  note_workspace(o);
  return gemm(op(L, "o_proj"), o);
}

Tensor Forward::mlp(const model::Layer& L, const Tensor& h, const std::string& prefix) {
  const Tensor g = gemm(op(L, prefix + "gate_proj"), h), u = gemm(op(L, prefix + "up_proj"), h);
  return gemm(op(L, prefix + "down_proj"), activation(op(L, prefix + "act"), g, u));
}

Tensor Forward::expert(const model::Layer& L, const Tensor& xe, int64_t e) {
  std::vector<const model::Op*> ops;
  for (const auto& o : L.ops)
    if (o.kind == OpKind::expert_gemm) ops.push_back(&o);
  const model::Op& act = op(L, "experts.act");
  if (ops.size() == 2) {  // gpt-oss: fused, interleaved gate_up
    Tensor gate, up;
    deinterleave_gate_up(gemm(*ops[0], xe, e), gate, up);
    return gemm(*ops[1], activation(act, gate, up), e);
  }
  const Tensor g = gemm(*ops.at(0), xe, e), u = gemm(*ops.at(1), xe, e);
  return gemm(*ops.at(2), activation(act, g, u), e);
}

Tensor Forward::moe(const model::Layer& L, const Tensor& h) {
  const auto& c = m_.config;
  const model::Op& r_op = op(L, "router");
  RouterParams rp;
  rp.top_k = c.moe.experts_per_token;
  rp.normalize = c.moe.norm_topk_prob;
  rp.n_group = c.moe.n_group;
  rp.topk_group = c.moe.topk_group;
  rp.routed_scaling_factor = c.moe.routed_scaling_factor;
  std::span<const float> bias;
  for (size_t i = 1; i < r_op.weights.size(); ++i) {
    if (r_op.weights[i].ends_with("e_score_correction_bias")) rp.correction_bias = w_.floats(r_op.weights[i]);
    else bias = w_.floats(r_op.weights[i]);
  }
  const StoredWeight& gate = w_.get(r_op.weights.at(0));
  const GemmFn logits_fn = cpu_kernel<GemmFn>(OpKind::gemm, storage_variant({gate.kind, gate.dtype}));
  const std::string variant = router_variant(c);
  const KernelEntry& rk = find_kernel(cpu_kernel_table(), "cpu", OpKind::router, variant);
  const RouterFn route = std::get<RouterFn>(rk.fn);
  const Routing r = timer_.run(OpKey{&r_op, variant, {h.rows(), h.cols()}, rk.cost(r_op, {h.rows()})},
                               [&] { return route(logits_fn(h, gate, 0, bias), rp); });

  const model::Op& comb = op(L, "moe_combine");
  const CombineFn combine = cpu_kernel<CombineFn>(OpKind::moe_combine, "weighted_sum");
  Tensor out(h.shape);
  const auto [lo, hi] = par_.expert_range(c.moe.num_experts);
  for (int64_t e = lo; e < hi; ++e) {  // experts in index order: a fixed summation order
    std::vector<int64_t> rows;
    std::vector<float> weights;
    for (int64_t i = 0; i < r.tokens * r.top_k; ++i)
      if (r.experts[i] == e) {
        rows.push_back(i / r.top_k);
        weights.push_back(r.weights[i]);
      }
    if (rows.empty()) continue;
    const int64_t n = static_cast<int64_t>(rows.size());
    Tensor xe({n, h.cols()});
    for (int64_t i = 0; i < n; ++i) std::copy(h.row(rows[i]), h.row(rows[i]) + h.cols(), xe.row(i));
    const Tensor y = expert(L, xe, e);
    model::Op one = comb;
    one.active_experts = 1;
    timer_.run_inplace(OpKey{&comb, "weighted_sum", {n, h.cols()}, op_cost(one, {n})}, out,
                       [&](Tensor& o) { combine(o, y, rows, weights); });
  }
  // EP: each rank summed its experts' share; the sum over ranks is the layer's output.
  if (par_.ep_size > 1) par_.ep_comm->all_reduce_sum(out.data);
  if (c.moe.num_shared_experts > 0) add(out, mlp(L, h, "shared_experts."));
  return out;
}

void Forward::reserve(std::span<const int64_t> pos) {
  const int64_t end = pos.back() + 1;
  if (kv_->length(seq_) < end) kv_->extend(seq_, end - kv_->length(seq_));
}

int64_t Forward::cached_tokens() const { return kv_->length(seq_); }

int64_t Forward::kv_bytes() const { return kv_->bytes(); }

}  // namespace dayzero::executor
