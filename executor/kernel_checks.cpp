#include "executor/kernel_checks.h"

#include <stdexcept>
#include <string>

namespace dayzero::executor::checks {

namespace {
std::string dims(const AttentionParams& p) {
  return std::to_string(p.heads) + " heads / " + std::to_string(p.kv_heads) + " kv heads of qk " +
         std::to_string(p.qk_dim) + ", v " + std::to_string(p.v_dim);
}
void positions_within(std::span<const int64_t> positions, int64_t context, const char* op) {
  for (int64_t pos : positions)
    if (pos < 0 || pos >= context)
      throw std::out_of_range(std::string(op) + ": query position " + std::to_string(pos) + " outside a cache of " +
                              std::to_string(context));
}
void keep_fits(const Tensor* keep, int64_t queries, int64_t context, const char* op) {
  if (keep && (keep->rows() != queries || keep->cols() != context))
    throw std::invalid_argument(std::string(op) + ": a keep mask " + keep->shape_string() + " for " +
                                std::to_string(queries) + " queries over " + std::to_string(context) + " tokens");
}
}  // namespace

void embedding(const StoredWeight& table, std::span<const int64_t> tokens) {
  for (int64_t t : tokens)
    if (t < -1 || t >= table.rows())  // -1: another rank's token, a row of zeros
      throw std::out_of_range("embedding '" + table.name + "': token " + std::to_string(t) +
                              " outside the vocabulary of " + std::to_string(table.rows()));
}

void rms_norm(const Tensor& x, std::span<const float> weight) {
  const auto n = static_cast<int64_t>(weight.size());
  if (n == 0 || x.numel() % n != 0 || x.cols() % n != 0)
    throw std::invalid_argument("rms_norm: " + std::to_string(n) + " weights do not divide rows of " +
                                x.shape_string());
}

void rms_norm_given_mean(const Tensor& x, std::span<const float> weight, std::span<const float> mean_sq) {
  if (static_cast<int64_t>(weight.size()) != x.cols() || static_cast<int64_t>(mean_sq.size()) != x.rows())
    throw std::invalid_argument("rms_norm_given_mean: " + std::to_string(weight.size()) + " weights and " +
                                std::to_string(mean_sq.size()) + " row means for " + x.shape_string());
}

void layer_norm(const Tensor& x, std::span<const float> weight, std::span<const float> bias) {
  if (static_cast<int64_t>(weight.size()) != x.cols() || static_cast<int64_t>(bias.size()) != x.cols())
    throw std::invalid_argument("layer_norm: " + std::to_string(weight.size()) + " weights and " +
                                std::to_string(bias.size()) + " biases for rows of " + x.shape_string());
}

std::pair<int64_t, int64_t> linear(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias) {
  if (index < 0 || index >= w.matrices())
    throw std::out_of_range("linear '" + w.name + "': matrix " + std::to_string(index) + " of " +
                            std::to_string(w.matrices()));
  const int64_t in = w.input_major ? w.rows() : w.cols(), out = w.input_major ? w.cols() : w.rows();
  if (x.cols() != in)
    throw std::invalid_argument("linear '" + w.name + "': input " + x.shape_string() + " has " +
                                std::to_string(x.cols()) + " features, the weight " + shape_string(w.shape) +
                                " takes " + std::to_string(in));
  if (!bias.empty() && static_cast<int64_t>(bias.size()) != out)
    throw std::invalid_argument("linear '" + w.name + "': bias of " + std::to_string(bias.size()) + " for " +
                                std::to_string(out) + " outputs");
  return {in, out};
}

void rope(const Tensor& x, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t> positions,
          const RopeTable& table) {
  const int64_t rot = 2 * static_cast<int64_t>(table.inv_freq.size());
  if (x.cols() != heads * stride || offset < 0 || offset + rot > stride)
    throw std::invalid_argument("rope: input " + x.shape_string() + " does not hold " + std::to_string(heads) +
                                " heads of " + std::to_string(stride) + " with " + std::to_string(rot) +
                                " rotated features at " + std::to_string(offset));
  if (static_cast<int64_t>(positions.size()) != x.rows())
    throw std::invalid_argument("rope: " + std::to_string(positions.size()) + " positions for " +
                                std::to_string(x.rows()) + " rows");
}

void same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name, const char* b_name) {
  if (a.shape != b.shape)
    throw std::invalid_argument(std::string(op) + ": " + a_name + " " + a.shape_string() + " and " + b_name + " " +
                                b.shape_string() + " differ");
}

bool gate_per_row(const Tensor& gate, const Tensor& x, const char* op) {
  if (gate.shape == x.shape) return false;
  if (gate.shape.size() == 2 && x.shape.size() == 2 && gate.cols() == 1 && gate.rows() == x.rows()) return true;
  throw std::invalid_argument(std::string(op) + ": gate " + gate.shape_string() + " is neither input " +
                              x.shape_string() + " nor one column of its rows");
}

void columns(const Tensor& x, int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first + count > x.cols())
    throw std::invalid_argument("columns: [" + std::to_string(first) + ", " + std::to_string(first + count) + ") of " +
                                x.shape_string());
}

void rows(const Tensor& x, int64_t first, int64_t count) {
  if (x.shape.size() != 2 || first < 0 || count < 0 || first + count > x.rows())
    throw std::invalid_argument("rows: [" + std::to_string(first) + ", " + std::to_string(first + count) + ") of " +
                                x.shape_string());
}

int64_t stack_rows(std::span<const Tensor> parts) {
  if (parts.empty()) throw std::invalid_argument("stack_rows: no parts");
  int64_t total = 0;
  for (const Tensor& p : parts) {
    if (p.shape.size() != 2 || p.cols() != parts.front().cols())
      throw std::invalid_argument("stack_rows: part " + p.shape_string() + " beside " + parts.front().shape_string());
    total += p.rows();
  }
  return total;
}

void gather_rows(const Tensor& x, std::span<const int64_t> indices) {
  if (x.shape.size() != 2) throw std::invalid_argument("gather_rows: " + x.shape_string() + " is not a matrix");
  for (const int64_t i : indices)
    if (i < 0 || i >= x.rows())
      throw std::invalid_argument("gather_rows: row " + std::to_string(i) + " of " + x.shape_string());
}

void attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& kv, const AttentionParams& p) {
  if (p.heads <= 0 || p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    throw std::invalid_argument("attention: " + dims(p) + ": kv heads must divide heads");
  if (q.cols() != p.heads * p.qk_dim || kv.k_width != p.kv_heads * p.qk_dim || kv.v_width != p.kv_heads * p.v_dim)
    throw std::invalid_argument("attention: q " + q.shape_string() + ", cache rows of k " + std::to_string(kv.k_width) +
                                ", v " + std::to_string(kv.v_width) + " do not fit " + dims(p));
  if (static_cast<int64_t>(q_positions.size()) != q.rows())
    throw std::invalid_argument("attention: " + std::to_string(q_positions.size()) + " positions for " +
                                std::to_string(q.rows()) + " queries");
  keep_fits(p.keep, q.rows(), kv.tokens, "attention");
  if (!p.sinks.empty() && static_cast<int64_t>(p.sinks.size()) != p.heads)
    throw std::invalid_argument("attention: " + std::to_string(p.sinks.size()) + " sinks for " +
                                std::to_string(p.heads) + " heads");
  positions_within(q_positions, kv.tokens, "attention");
}

void mla_attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& cache,
                   const StoredWeight& kv_b, const MlaParams& p) {
  const int64_t qk = p.nope_dim + p.rope_dim;
  if (q.cols() != p.heads * qk || cache.k_width != p.kv_lora_rank || cache.v_width != p.rope_dim)
    throw std::invalid_argument("mla_attention: q " + q.shape_string() + ", cache rows of latent " +
                                std::to_string(cache.k_width) + ", rope key " + std::to_string(cache.v_width) +
                                " do not fit " + std::to_string(p.heads) + " heads of nope " +
                                std::to_string(p.nope_dim) + " + rope " + std::to_string(p.rope_dim) + ", rank " +
                                std::to_string(p.kv_lora_rank));
  if (kv_b.rows() != p.heads * (p.nope_dim + p.v_dim) || kv_b.cols() != p.kv_lora_rank)
    throw std::invalid_argument("mla_attention: kv_b_proj " + shape_string(kv_b.shape) + " is not [" +
                                std::to_string(p.heads * (p.nope_dim + p.v_dim)) + ", " +
                                std::to_string(p.kv_lora_rank) + "]");
  positions_within(q_positions, cache.tokens, "mla_attention");
  keep_fits(p.keep, q.rows(), cache.tokens, "mla_attention");
}

void dsa_topk(const Tensor& q, const Tensor& w, std::span<const int64_t> q_positions, const KvPages& keys,
              const IndexerParams& p) {
  const int64_t T = q.rows(), H = p.heads, D = p.head_dim;
  if (H <= 0 || D <= 0 || p.topk <= 0 || q.cols() != H * D || w.rows() != T || w.cols() != H || keys.k_width != D ||
      static_cast<int64_t>(q_positions.size()) != T)
    throw std::invalid_argument("dsa_topk: q " + q.shape_string() + ", weights " + w.shape_string() +
                                ", cached keys of " + std::to_string(keys.k_width) + " do not fit " +
                                std::to_string(H) + " heads of " + std::to_string(D) + ", top-k " +
                                std::to_string(p.topk));
  positions_within(q_positions, keys.tokens, "dsa_topk");
}

void gated_delta_net(const Tensor& qkv, const Tensor& z, const Tensor& b, const Tensor& a,
                     const LinearAttentionWeights& w, const LinearAttentionParams& p, const LinearState& s) {
  const int64_t T = qkv.rows(), Hv = p.value_heads, dv = p.value_head_dim;
  const std::string what = "gated_delta_net (" + std::to_string(p.key_heads) + " key heads of " +
                           std::to_string(p.key_head_dim) + ", " + std::to_string(Hv) + " value heads of " +
                           std::to_string(dv) + ", conv " + std::to_string(p.conv_kernel) + ")";
  if (p.key_heads <= 0 || Hv <= 0 || Hv % p.key_heads != 0 || p.conv_kernel < 1)
    throw std::invalid_argument(what + ": key heads must divide value heads");
  const bool ok = qkv.cols() == p.conv_dim() && z.rows() == T && z.cols() == Hv * dv && b.rows() == T &&
                  b.cols() == Hv && a.rows() == T && a.cols() == Hv &&
                  static_cast<int64_t>(w.conv.size()) == p.conv_dim() * p.conv_kernel &&
                  static_cast<int64_t>(w.dt_bias.size()) == Hv && static_cast<int64_t>(w.a_log.size()) == Hv &&
                  static_cast<int64_t>(w.norm.size()) == dv;
  if (!ok)
    throw std::invalid_argument(what + ": inputs qkv " + qkv.shape_string() + ", z " + z.shape_string() + ", b " +
                                b.shape_string() + ", a " + a.shape_string() + " or its weights do not fit");
  if (s.conv.numel() != (p.conv_kernel - 1) * p.conv_dim() || s.recurrent.numel() != Hv * p.key_head_dim * dv)
    throw std::invalid_argument(what + ": the sequence's state has the wrong size");
}

void router(const Tensor& logits, const RouterParams& p, const char* op) {
  if (p.top_k <= 0 || p.top_k > logits.cols())
    throw std::invalid_argument(std::string(op) + ": top_k " + std::to_string(p.top_k) + " for " +
                                std::to_string(logits.cols()) + " experts");
}

void group_router(const Tensor& logits, const RouterParams& p) {
  router(logits, p, "route_sigmoid_group_topk");
  const int64_t E = logits.cols(), G = p.n_group;
  if (G < 1 || E % G != 0 || p.topk_group < 1 || p.topk_group > G || p.topk_group * (E / G) < p.top_k)
    throw std::invalid_argument("route_sigmoid_group_topk: " + std::to_string(E) + " experts in " + std::to_string(G) +
                                " groups, keeping " + std::to_string(p.topk_group) + ", cannot hold top_k " +
                                std::to_string(p.top_k));
  if (!p.correction_bias.empty() && static_cast<int64_t>(p.correction_bias.size()) != E)
    throw std::invalid_argument("route_sigmoid_group_topk: correction bias of " +
                                std::to_string(p.correction_bias.size()) + " for " + std::to_string(E) + " experts");
}

void moe_combine(const Tensor& out, const Tensor& expert_out, std::span<const int64_t> rows,
                 std::span<const float> weights) {
  if (expert_out.cols() != out.cols() || static_cast<int64_t>(rows.size()) != expert_out.rows() ||
      rows.size() != weights.size())
    throw std::invalid_argument("moe_combine: expert output " + expert_out.shape_string() + " with " +
                                std::to_string(rows.size()) + " rows and " + std::to_string(weights.size()) +
                                " weights into " + out.shape_string());
  for (int64_t r : rows)
    if (r < 0 || r >= out.rows())
      throw std::out_of_range("moe_combine: row " + std::to_string(r) + " outside " + out.shape_string());
}

}  // namespace dayzero::executor::checks
