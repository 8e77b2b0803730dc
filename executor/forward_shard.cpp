// The forward's GEMMs and the TP / moe-TP shards of their weights.
#include <algorithm>

#include <stdexcept>
#include "core/arith.h"

#include "executor/forward.h"
#include "executor/forward_detail.h"
#include "executor/registry.h"

namespace dayzero::executor {

using model::OpKind;
using namespace detail;

std::pair<int64_t, int64_t> Forward::out_range(const model::Op& op, int64_t out, int rank, int size) const {
  const int64_t r = rank, tp = size;
  if (op.tp_split == TpSplit::kv_heads) {
    const int64_t kv = m_.config.num_kv_heads, per_head = out / kv;
    if (kv < tp) {  // fewer KV heads than ranks: each rank holds the one its query heads read
      const int64_t h = r * kv / tp;
      return {h * per_head, (h + 1) * per_head};
    }
  }
  return {out * r / tp, out * (r + 1) / tp};
}

// in_proj_qkv's rows of this rank's heads in each [q | k | v] section, as float32.
std::unique_ptr<Tensor> Forward::qkv_sections_copy(const StoredWeight& sw, int rank, int size) {
  const auto ranges = qkv_sections(rank, size);
  int64_t n_out = 0;
  for (const auto& [a, z] : ranges) n_out += z - a;
  auto copy = std::make_unique<Tensor>(std::vector<int64_t>{n_out, sw.cols()});
  std::vector<float> row(static_cast<size_t>(sw.cols()));
  int64_t o = 0;
  for (const auto& [a, z] : ranges)
    for (int64_t r = a; r < z; ++r, ++o) {
      dequantize_row_range(sw, 0, r, 0, sw.cols(), row);
      std::copy(row.begin(), row.end(), copy->row(o));
    }
  const int64_t bits = sw.kind == model::StorageKind::mxfp4 || sw.kind == model::StorageKind::int4_group
                           ? 4
                           : model::dtype_bits(sw.dtype);
  read_bytes_ += n_out * sw.cols() * bits / 8;
  return copy;
}

// Column / vocab splits of an [out, in] weight are its rows [lo, hi): contiguous in
// the mapping, so a plain weight's shard is a zero-copy view that touches only the
// shard's pages. Row splits (input columns) and [in, out] or quantized weights are
// copied once to float32 (only the shard is kept).
StoredWeight Forward::shard(const model::Op& op, const StoredWeight& sw, TpSplit split, int rank, int size) {
  if (size == 1 || split == TpSplit::replicated) return sw;
  if (sw.matrices() != 1)
    throw std::logic_error("TP shard of '" + sw.name + "': fused multi-matrix weights are not split");
  const int64_t out = sw.input_major ? sw.cols() : sw.rows(), in = sw.input_major ? sw.rows() : sw.cols();
  const bool by_out = split != TpSplit::row;
  const auto [lo, hi] = by_out ? out_range(op, out, rank, size) : std::pair{in * rank / size, in * (rank + 1) / size};
  StoredWeight s = sw;
  // Gated delta-net's fused [q | k | v] projection: each section split by heads, copied.
  const bool sections = split == TpSplit::sections;
  if (sections && sw.input_major) throw std::logic_error("TP shard of '" + sw.name + "': input-major sections");
  if (!sections && by_out && !sw.input_major && sw.kind == model::StorageKind::plain &&
      model::dtype_bits(sw.dtype) % 8 == 0) {
    const auto esize = static_cast<size_t>(model::dtype_bits(sw.dtype) / 8);
    const auto row_bytes = static_cast<size_t>(sw.cols()) * esize;
    s.data = sw.data.subspan(static_cast<size_t>(lo) * row_bytes, static_cast<size_t>(hi - lo) * row_bytes);
    s.shape = {hi - lo, sw.cols()};
    return s;
  }
  // INT4 input splits off the scale groups (a tiny model's) are dequantized like the others.
  const bool on_groups = sw.group > 0 && lo % sw.group == 0 && (hi % sw.group == 0) && lo % 8 == 0;
  if (!sections && sw.kind == model::StorageKind::int4_group && !sw.input_major && (by_out || on_groups))
    return int4_shard(sw, by_out, lo, hi);
  auto& copy = shard_copies_[sw.name];
  if (!copy && sections) copy = qkv_sections_copy(sw, rank, size);
  if (!copy) {
    // Logical [out, in] slice, stored output-major.
    const int64_t n_out = by_out ? hi - lo : out, n_in = by_out ? in : hi - lo;
    copy = std::make_unique<Tensor>(std::vector<int64_t>{n_out, n_in});
    // Storage rows are outputs ([out, in]) or inputs ([in, out]); the split
    // restricts one of the two axes: read only those rows, or only those columns.
    const bool split_rows = by_out != sw.input_major;
    const int64_t r0 = split_rows ? lo : 0, r1 = split_rows ? hi : sw.rows();
    const int64_t c0 = split_rows ? 0 : lo, c1 = split_rows ? sw.cols() : hi;
    std::vector<float> row(static_cast<size_t>(c1 - c0));
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row_range(sw, 0, r, c0, c1, row);
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t o = (sw.input_major ? c : r) - (by_out ? lo : 0),
                      i = (sw.input_major ? r : c) - (by_out ? 0 : lo);
        copy->data[static_cast<size_t>(o * n_in + i)] = row[static_cast<size_t>(c - c0)];
      }
    }
    const int64_t bits = sw.kind == model::StorageKind::mxfp4 || sw.kind == model::StorageKind::int4_group
                             ? 4
                             : model::dtype_bits(sw.dtype);
    read_bytes_ += (r1 - r0) * (c1 - c0) * bits / 8;  // the elements read (scales not counted)
  }
  s.kind = model::StorageKind::plain;
  s.dtype = model::DType::f32;
  s.input_major = false;
  s.shape = copy->shape;
  s.data = std::as_bytes(std::span<const float>(copy->data));
  s.scales = {};
  return s;
}

// Pack-quantized INT4 stays INT4: an output split is a view of its rows (packed words and
// scales), an input split whose bounds fall on scale groups (and whole words) is repacked
// once into those columns' words and scales.
StoredWeight Forward::int4_shard(const StoredWeight& sw, bool by_out, int64_t lo, int64_t hi) {
  StoredWeight s = sw;
  const int64_t words = core::ceil_div(sw.cols(), int64_t{8}), groups = sw.cols() / sw.group;
  const size_t scale_bytes = sw.scale_dtype == model::DType::f32 ? 4 : 2;
  if (by_out) {
    s.data = sw.data.subspan(static_cast<size_t>(lo * words) * 4, static_cast<size_t>((hi - lo) * words) * 4);
    s.scales = sw.scales.subspan(static_cast<size_t>(lo * groups) * scale_bytes,
                                 static_cast<size_t>((hi - lo) * groups) * scale_bytes);
    s.shape = {hi - lo, sw.cols()};
    return s;
  }
  if (lo % sw.group != 0 || hi % sw.group != 0 || lo % 8 != 0)
    throw std::logic_error("TP shard of '" + sw.name + "': inputs [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           ") do not fall on its INT4 scale groups of " + std::to_string(sw.group));
  auto& bytes = shard_bytes_[sw.name];
  const int64_t w0 = lo / 8, w1 = core::ceil_div(hi, int64_t{8}), g0 = lo / sw.group, g1 = hi / sw.group;
  const size_t data_bytes = static_cast<size_t>(sw.rows() * (w1 - w0)) * 4;
  if (bytes.empty()) {
    bytes.resize(data_bytes + static_cast<size_t>(sw.rows() * (g1 - g0)) * scale_bytes);
    for (int64_t r = 0; r < sw.rows(); ++r) {
      std::copy_n(sw.data.begin() + (r * words + w0) * 4, (w1 - w0) * 4, bytes.begin() + r * (w1 - w0) * 4);
      std::copy_n(sw.scales.begin() + (r * groups + g0) * static_cast<int64_t>(scale_bytes),
                  (g1 - g0) * static_cast<int64_t>(scale_bytes),
                  bytes.begin() + static_cast<int64_t>(data_bytes) + r * (g1 - g0) * static_cast<int64_t>(scale_bytes));
    }
    read_bytes_ += static_cast<int64_t>(bytes.size());
  }
  const std::span<const std::byte> all(bytes);
  s.data = all.subspan(0, data_bytes);
  s.scales = all.subspan(data_bytes);
  s.shape = {sw.rows(), hi - lo};
  return s;
}

int64_t Forward::prepare() {
  std::set<std::string> done;  // weights whose shard was read (a copy) or touched (a view)
  auto shard_of = [&](const model::Op& o, const std::string& name, int rank, int size) {
    const TpSplit split = o.tp_split;
    if (size == 1 || split == TpSplit::replicated || !w_.has(name)) return;
    StoredWeight sw = w_.get(name);
    if (input_major_.count(o.weights.at(0))) sw.input_major = true;
    if (sw.matrices() != 1) return;  // fused experts: not split by TP (check_plan refuses moe.tp for them)
    const StoredWeight s = shard(o, sw, split, rank, size);
    if (s.data.data() != sw.data.data() || s.data.size() != sw.data.size())
      if (!shard_copies_.count(sw.name) && !shard_bytes_.count(sw.name))
        view_bytes_ += touch_pages(s.data) + touch_pages(s.scales);  // a view: its pages only
    done.insert(name);
  };
  const auto [lo, hi] = par_.expert_range(m_.config.moe.num_experts);
  for (const auto& layer : m_.layers) {
    if (layer.mtp || layer.index < par_.first_layer || layer.index >= par_.end_layer) continue;
    if (m_.config.attention == model::AttentionKind::mla) {  // MLA decode reads kv_b (its shard) as float32
      const model::Op& kv_b = op(layer, "kv_b_proj");
      const StoredWeight v = float32_kv_b(kv_b);
      const std::string& name = kv_b.weights.at(0);
      if (!shard_copies_.count(name + "#f32") && !shard_copies_.count(name))
        view_bytes_ += touch_pages(v.data);  // stored as float32: decode reads the checkpoint's (shard's) bytes
      done.insert(name);
    }
    for (const auto& o : layer.ops) {
      if (o.kind == OpKind::gemm) shard_of(o, o.weights.at(0), par_.tp_rank, par_.tp_size);
      if (o.kind == OpKind::expert_gemm && per_expert(o.weights.at(0)))
        for (int64_t e = lo; e < hi; ++e)
          shard_of(o, substitute(o.weights.at(0), e), par_.moe_tp_rank, par_.moe_tp_size);
      if (o.kind == OpKind::expert_gemm && !per_expert(o.weights.at(0)) && par_.ep_size > 1)
        for (const auto& name : o.weights) {  // fused [experts, ...] tensors (gpt-oss): this rank's experts' slices
          if (!w_.has(name) || done.count(name)) continue;
          const StoredWeight& w = w_.get(name);
          const auto E = static_cast<size_t>(m_.config.moe.num_experts);
          for (const auto bytes : {w.data, w.scales})
            if (!bytes.empty())
              view_bytes_ += touch_pages(bytes.subspan(bytes.size() / E * static_cast<size_t>(lo),
                                                       bytes.size() / E * static_cast<size_t>(hi - lo)));
          done.insert(name);
        }
    }
  }
  const model::Op &embedding = m_.pre_ops.at(0), &head = m_.post_ops.at(1);
  if (par_.first_stage) shard_of(embedding, embedding.weights.at(0), par_.tp_rank, par_.tp_size);
  if (par_.last_stage) shard_of(head, head.weights.at(0), par_.tp_rank, par_.tp_size);
  for (const auto& name : w_.names()) {  // everything else is read whole
    if (done.count(name)) continue;
    const StoredWeight& w = w_.get(name);
    view_bytes_ += touch_pages(w.data) + touch_pages(w.scales);
  }
  read_bytes_ += view_bytes_;
  return read_bytes_;
}

// Dense GEMMs split over the attention-TP group (row splits all-reduced, vocab
// splits all-gathered); expert GEMMs over the expert's moe-TP group (row splits
// left as partial sums: the dispatching rank adds them up in the combine).
Tensor Forward::gemm(const model::Op& op, const Tensor& x, int64_t expert) {
  const std::string& pattern = op.weights.at(0);
  StoredWeight sw = w_.get(substitute(pattern, expert));
  if (input_major_.count(pattern)) sw.input_major = true;
  const int64_t index = expert >= 0 && !per_expert(pattern) ? expert : 0;  // a fused [experts, ..] tensor
  const bool dense = op.kind == OpKind::gemm;
  const int rank = dense ? par_.tp_rank : par_.moe_tp_rank, size = dense ? par_.tp_size : par_.moe_tp_size;
  const TpSplit split = size > 1 ? op.tp_split : TpSplit::replicated;
  const int64_t full_out = sw.input_major ? sw.cols() : sw.rows(), full_in = sw.input_major ? sw.rows() : sw.cols();
  sw = shard(op, sw, split, rank, size);
  std::span<const float> bias;
  if (op.weights.size() > 1) {  // "<module>.bias", or gpt-oss's fused "<name>_bias" [experts, n]
    bias = w_.floats(substitute(op.weights[1], expert));
    if (expert >= 0 && !per_expert(pattern)) bias = bias.subspan(expert * op.n, op.n);
    if (split == TpSplit::column || split == TpSplit::kv_heads || split == TpSplit::vocab) {
      const auto [lo, hi] = out_range(op, full_out, rank, size);
      bias = bias.subspan(static_cast<size_t>(lo), static_cast<size_t>(hi - lo));
    } else if (split == TpSplit::row && rank != 0) {
      bias = {};  // added once (by rank 0 of the group) to the partial sums
    }
  }
  const std::string variant = storage_variant({sw.kind, sw.dtype});
  const KernelEntry& k = be_.kernel(op.kind, variant);
  const GemmFn fn = std::get<GemmFn>(k.fn);
  model::Op costed = op.kind == OpKind::expert_gemm ? one_expert(op) : op;
  if (split != TpSplit::replicated) {  // this rank's shard: its share of the outputs or inputs
    const bool by_in = split == TpSplit::row;
    const int64_t part = by_in ? sw.cols() : sw.rows(), whole = by_in ? full_in : full_out;  // shards are [out, in]
    (by_in ? costed.k : costed.n) = (by_in ? costed.k : costed.n) * part / whole;
    costed.weight_bytes = costed.weight_bytes * part / whole;
  }
  const OpCost cost = k.cost(costed, CostShape{x.rows()});
  Tensor y = timer_.run(OpKey{&op, variant, {x.rows(), x.cols()}, cost}, [&] { return fn(x, sw, index, bias); });
  // Row-parallel: each TP rank holds a slice of the inputs, so outputs are partial sums.
  if (split == TpSplit::row && dense) par_.tp_comm->all_reduce_sum(y.data);
  if (split == TpSplit::vocab) {  // each rank has its vocabulary slice: gather [tp][T, V/tp] into [T, V]
    const int64_t T = y.rows(), part = y.cols(), tp = size;
    std::vector<float> all(static_cast<size_t>(T * part * tp));
    par_.tp_comm->all_gather(y.data, all);
    std::vector<int64_t> full_shape = y.shape;
    full_shape.back() = part * tp;
    Tensor full(full_shape);
    for (int64_t r = 0; r < tp; ++r)
      for (int64_t t = 0; t < T; ++t) std::copy_n(all.data() + (r * T + t) * part, part, full.row(t) + r * part);
    y = std::move(full);
  }
  return y;
}

}  // namespace dayzero::executor
