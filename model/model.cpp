#include "model/model.h"

#include <algorithm>
#include <stdexcept>

#include "core/arith.h"
#include "core/error.h"

namespace dayzero::model {

StorageFormat matrix_format(WeightPrecision p) {
  switch (p) {
    case WeightPrecision::fp8: return {StorageKind::fp8_block, DType::f8_e4m3, kFp8DefaultBlock, kFp8DefaultBlock};
    case WeightPrecision::int4: return {StorageKind::int4_group, DType::u8, 0, 0, kInt4DefaultGroup};
    // W8A8 INT8: F32 per-channel scales, as vLLM's CompressedTensorsW8A8Int8 (channel
    // strategy) creates weight_scale [out, 1] float32.
    case WeightPrecision::int8: return {StorageKind::int8_channel, DType::i8, 0, 0, 0, DType::f32};
    // W8A16 INT8: scales in the activation dtype, as vLLM's CompressedTensorsWNA16
    // (num_bits 8, channel strategy) creates weight_scale [out, 1] in params_dtype.
    case WeightPrecision::int8_w8a16: return {StorageKind::int8_channel, DType::i8, 0, 0, 0, DType::bf16};
    case WeightPrecision::nvfp4: return {StorageKind::nvfp4, DType::f4};
    case WeightPrecision::bf16:
    case WeightPrecision::checkpoint: break;  // `checkpoint` keeps each weight's own storage (weight_bytes)
  }
  return StorageFormat::plain_of(DType::bf16);
}

namespace {
// Routed-expert weights a token touches: top-k of the layer's experts.
int64_t active_share(const Weight& w, const ModelConfig& c) {
  if (w.part != Part::experts || w.experts <= 1) return w.params();
  return w.params() / w.experts * c.moe.experts_per_token;
}
}  // namespace

int64_t Model::weight_bytes(const Weight& w, WeightPrecision p) const {
  if (p == WeightPrecision::checkpoint) return w.stored_bytes();
  if (w.matrix) return w.bytes(matrix_format(p));
  const bool f32 = w.stored.kind == StorageKind::plain && w.stored.dtype == DType::f32;
  return w.bytes(StorageFormat::plain_of(f32 ? DType::f32 : DType::bf16));
}

int64_t Model::params_total() const {
  int64_t n = 0;
  for (const auto& w : weights)
    if (!w.mtp) n = core::checked_add(n, w.params());
  return n;
}

int64_t Model::params_active() const {
  int64_t n = 0;
  for (const auto& w : weights)
    if (!w.mtp) n = core::checked_add(n, active_share(w, config));
  return n;
}

int64_t Model::params_embedding() const { return params_by_part().at(Part::embedding); }

int64_t Model::params_head() const {
  const auto m = params_by_part();
  const auto it = m.find(Part::head);
  return it == m.end() ? 0 : it->second;
}

int64_t Model::params_mtp() const {
  int64_t n = 0;
  for (const auto& w : weights)
    if (w.mtp) n = core::checked_add(n, w.params());
  return n;
}

std::map<Part, int64_t> Model::params_by_part(bool mtp) const {
  std::map<Part, int64_t> m;
  for (const auto& w : weights)
    if (w.mtp == mtp) m[w.part] = core::checked_add(m[w.part], w.params());
  return m;
}

int64_t Model::weights_bytes(WeightPrecision p, bool mtp) const {
  int64_t n = 0;
  for (const auto& w : weights)
    if (w.mtp == mtp) n = core::checked_add(n, weight_bytes(w, p));
  return n;
}

int64_t Model::kv_bytes_per_token(int64_t elem_bytes) const {
  int64_t n = 0;
  for (const auto& l : layers) {
    if (l.mtp) continue;
    for (const auto& op : l.ops)
      if (op.kind == OpKind::attention)
        n = core::checked_add(n, core::checked_mul(op.attn.kv_elems_per_token, elem_bytes));
  }
  return n;
}

int64_t Model::kv_cache_bytes(int64_t seq_len, int64_t elem_bytes) const {
  int64_t n = 0;
  for (const auto& l : layers) {
    if (l.mtp) continue;
    for (const auto& op : l.ops) {
      if (op.kind != OpKind::attention) continue;
      const int64_t tokens = op.attn.window > 0 ? std::min(seq_len, op.attn.window) : seq_len;
      n = core::checked_add(n, core::checked_mul(core::checked_mul(op.attn.kv_elems_per_token, tokens), elem_bytes));
    }
  }
  return n;
}

int64_t Model::linear_state_bytes_per_seq(int64_t elem_bytes) const {
  int64_t n = 0;
  for (const auto& l : layers) {
    if (l.mtp) continue;
    for (const auto& op : l.ops)
      if (op.kind == OpKind::linear_attention)
        n = core::checked_add(
            n, core::checked_add(core::checked_mul(op.lin.state_elems_per_seq(), op.lin.state_elem_bytes),
                                 core::checked_mul(op.lin.conv_state_elems_per_seq(), elem_bytes)));
  }
  return n;
}

int64_t Model::indexer_bytes_per_token() const {
  int64_t n = 0;
  for (const auto& l : layers) {
    if (l.mtp) continue;
    for (const auto& op : l.ops)
      if (op.kind == OpKind::indexer) n = core::checked_add(n, op.index.head_dim + kIndexerKeyScaleBytes);
  }
  return n;
}

int64_t Model::layers_of(LayerAttention kind) const {
  int64_t n = 0;
  for (const auto& l : layers) n += !l.mtp && l.attention == kind;
  return n;
}

const Weight* Model::find_weight(const std::string& name) const {
  for (const auto& w : weights)
    if (w.name == name) return &w;
  return nullptr;
}

Model build_model(ModelConfig config) {
  Model m;
  m.config = std::move(config);
  const ModelConfig& c = m.config;
  m.weights = model_weights(c);
  m.pre_ops = pre_ops(c);
  for (int64_t L = 0; L < c.num_layers + c.mtp_layers; ++L) m.layers.push_back(layer_ops(c, L));
  m.post_ops = post_ops(c);

  std::map<std::string, const Weight*> by_name;
  for (const auto& w : m.weights) by_name[w.name] = &w;
  auto fill = [&](Op& op) {
    for (const auto& name : op.weights) {
      const auto it = by_name.find(name);
      if (it == by_name.end()) throw std::logic_error("op " + op.name + " reads unknown weight " + name);
      op.params += it->second->params();
      op.active_params += active_share(*it->second, c);
      op.weight_bytes += it->second->stored_bytes();
    }
  };
  try {
    for (auto& op : m.pre_ops) fill(op);
    for (auto& l : m.layers)
      for (auto& op : l.ops) fill(op);
    for (auto& op : m.post_ops) fill(op);
    (void)m.weights_bytes(WeightPrecision::checkpoint);  // totals must fit in 64 bits
    (void)m.weights_bytes(WeightPrecision::bf16);
    (void)m.params_total();
  } catch (const std::overflow_error&) {
    throw core::InputError(c.source, "sizes",
                           "hidden_size=" + std::to_string(c.hidden_size) + ", num_hidden_layers=" +
                               std::to_string(c.num_layers) + ", vocab_size=" + std::to_string(c.vocab_size),
                           "the model's total size overflows 64 bits");
  }
  return m;
}

Model load_model(const std::filesystem::path& path) { return build_model(load_config(path)); }

}  // namespace dayzero::model
