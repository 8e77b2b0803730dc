// CPU kernels: causal GQA attention (sliding window, sinks) and MLA.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "executor/kernel_checks.h"
#include "executor/kernels.h"
#include "executor/threads.h"

namespace dayzero::executor {

Tensor attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& kv_in,
                 const AttentionParams& p) {
  checks::attention(q, q_positions, kv_in, p);
  KvRows host_rows;  // a device's cache: its rows on the host
  const KvPages kv = to_host(kv_in, host_rows);
  const int64_t C = kv.tokens, group = p.heads / p.kv_heads;
  const float* keep = p.keep ? p.keep->data.data() : nullptr;  // read here once, not by the threads
  Tensor out({q.rows(), p.heads * p.v_dim});
  // One item per (query row, head): its output is computed by one thread, by the
  // same loop whatever the split, so results do not depend on the thread count.
  const double item_work = static_cast<double>(C) * static_cast<double>(p.qk_dim + p.v_dim);
  parallel_for(q.rows() * p.heads, item_work, [&](int64_t i0, int64_t i1) {
    std::vector<float> score(static_cast<size_t>(C));
    std::vector<double> acc(static_cast<size_t>(p.v_dim));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / p.heads, h = i % p.heads;
      const int64_t pos = q_positions[t];
      const int64_t first = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;  // pos - j < window
      const int64_t kvh = h / group;
      const float* qh = q.row(t) + h * p.qk_dim;
      float max_s = p.sinks.empty() ? -std::numeric_limits<float>::infinity() : p.sinks[h];
      for (int64_t j = first; j <= pos; ++j) {
        if (keep && keep[t * C + j] == 0.0f) {
          score[j] = -std::numeric_limits<float>::infinity();  // not selected: weight 0
          continue;
        }
        const float* kj = kv.k_row(j) + kvh * p.qk_dim;
        double dot = 0.0;
        for (int64_t d = 0; d < p.qk_dim; ++d) dot += static_cast<double>(qh[d]) * kj[d];
        score[j] = static_cast<float>(dot * p.scale);
        max_s = std::max(max_s, score[j]);
      }
      // softmax over the visible keys; a sink adds exp(sink - max) to the denominator only.
      double denom = p.sinks.empty() ? 0.0 : std::exp(static_cast<double>(p.sinks[h]) - max_s);
      for (int64_t j = first; j <= pos; ++j) denom += std::exp(static_cast<double>(score[j]) - max_s);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = first; j <= pos; ++j) {
        const double w = std::exp(static_cast<double>(score[j]) - max_s) / denom;
        const float* vj = kv.v_row(j) + kvh * p.v_dim;
        for (int64_t d = 0; d < p.v_dim; ++d) acc[d] += w * vj[d];
      }
      float* oh = out.row(t) + h * p.v_dim;
      for (int64_t d = 0; d < p.v_dim; ++d) oh[d] = static_cast<float>(acc[d]);
    }
  });
  return out;
}

bool mla_absorbed(int64_t queries, int64_t context, int64_t nope, int64_t rope, int64_t rank, int64_t v) {
  const auto T = static_cast<double>(queries), C = static_cast<double>(context);
  const double expand = C * static_cast<double>(rank * (nope + v)) + T * C * static_cast<double>(nope + rope + v);
  const double absorb = T * (static_cast<double>(rank * (nope + v)) + C * static_cast<double>(2 * rank + rope));
  return absorb < expand;
}

// Per head h, with kv_b's rows [W_uk_h (nope) | W_uv_h (v)] x rank: the queries'
// nope parts are taken into the latent space (Q_lat = Q_nope W_uk_h), scores are
// Q_lat L^T + Q_rope K_rope^T over the context's latents L, and the output is
// (P L) W_uv_h^T: the same attention without expanding the context into keys and
// values. Each head is float32 Eigen products (one thread per head), softmax in double.
Tensor mla_absorbed_attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& cache_in,
                              const StoredWeight& kv_b, const MlaParams& p) {
  KvRows host_rows;  // a device's cache: its rows on the host
  const KvPages cache = to_host(cache_in, host_rows);
  using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Strided = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
  const int64_t qk = p.nope_dim + p.rope_dim, R = p.kv_lora_rank, hw = p.nope_dim + p.v_dim;
  const int64_t T = q.rows(), C = cache.tokens;
  const float* keep = p.keep ? p.keep->data.data() : nullptr;  // read here once, not by the threads
  // kv_b as float32 [heads * (nope + v), rank]: read in place when stored so (the
  // forward keeps a float32 copy of quantized ones), else dequantized here.
  Tensor dequantized;
  const float* w = nullptr;
  if (kv_b.kind == model::StorageKind::plain && kv_b.dtype == model::DType::f32 && !kv_b.input_major) {
    w = reinterpret_cast<const float*>(kv_b.data.data());
  } else {
    dequantized = Tensor({kv_b.rows(), R});
    parallel_for(kv_b.rows(), static_cast<double>(R), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        dequantize_row(kv_b, 0, r, std::span<float>(dequantized.row(r), static_cast<size_t>(R)));
    });
    w = dequantized.data.data();
  }
  RowMatrix lat(C, R), rope(C, p.rope_dim);  // the sequence's latents and rope keys, gathered from their blocks
  for (int64_t j = 0; j < C; ++j) {
    std::copy_n(cache.k_row(j), R, lat.row(j).data());
    std::copy_n(cache.v_row(j), p.rope_dim, rope.row(j).data());
  }
  Tensor out({T, p.heads * p.v_dim});
  const double head_work = static_cast<double>(T * (hw * R + C * (2 * R + p.rope_dim)));
  parallel_for(p.heads, head_work, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      const Strided q_nope(q.row(0) + h * qk, T, p.nope_dim, Eigen::OuterStride<>(q.cols()));
      const Strided q_rope(q.row(0) + h * qk + p.nope_dim, T, p.rope_dim, Eigen::OuterStride<>(q.cols()));
      const Eigen::Map<const RowMatrix> w_uk(w + h * hw * R, p.nope_dim, R),
          w_uv(w + (h * hw + p.nope_dim) * R, p.v_dim, R);
      const RowMatrix q_lat = q_nope * w_uk;                                   // [T, R]
      RowMatrix scores = q_lat * lat.transpose() + q_rope * rope.transpose();  // [T, C]
      for (int64_t t = 0; t < T; ++t) {                                        // causal softmax in double
        const int64_t pos = q_positions[t];
        auto seen = [&](int64_t j) { return j <= pos && (!keep || keep[t * C + j] != 0.0f); };
        double max_s = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j <= pos; ++j)
          if (seen(j)) max_s = std::max(max_s, static_cast<double>(scores(t, j)) * p.scale);
        double denom = 0.0;
        for (int64_t j = 0; j <= pos; ++j)
          if (seen(j)) denom += std::exp(static_cast<double>(scores(t, j)) * p.scale - max_s);
        for (int64_t j = 0; j < C; ++j)
          scores(t, j) = seen(j)
                             ? static_cast<float>(std::exp(static_cast<double>(scores(t, j)) * p.scale - max_s) / denom)
                             : 0.0f;
      }
      const RowMatrix o = (scores * lat) * w_uv.transpose();  // [T, v]
      for (int64_t t = 0; t < T; ++t) std::copy_n(o.row(t).data(), p.v_dim, out.row(t) + h * p.v_dim);
    }
  });
  return out;
}

Tensor mla_attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& cache_in,
                     const StoredWeight& kv_b, const MlaParams& p) {
  checks::mla_attention(q, q_positions, cache_in, kv_b, p);
  KvRows host_rows;  // a device's cache: its rows on the host
  const KvPages cache = to_host(cache_in, host_rows);
  const int64_t qk = p.nope_dim + p.rope_dim, C = cache.tokens;
  if (mla_absorbed(q.rows(), C, p.nope_dim, p.rope_dim, p.kv_lora_rank, p.v_dim))
    return mla_absorbed_attention(q, q_positions, cache, kv_b, p);
  // The sequence's latents, gathered from their blocks, expanded into per-head
  // [k_nope | v] (the reference's un-absorbed form).
  Tensor latent({C, p.kv_lora_rank});
  for (int64_t j = 0; j < C; ++j) std::copy_n(cache.k_row(j), p.kv_lora_rank, latent.row(j));
  const Tensor kv = kv_b.kind == model::StorageKind::plain && kv_b.dtype == model::DType::f32
                        ? linear_f32(latent, kv_b, 0, {})
                        : linear_dequant(latent, kv_b, 0, {});
  Tensor keys({C, p.heads * qk}), values({C, p.heads * p.v_dim});
  parallel_for(C, static_cast<double>(p.heads * (qk + p.v_dim)), [&](int64_t j0, int64_t j1) {  // copies only
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t h = 0; h < p.heads; ++h) {
        const float* src = kv.row(j) + h * (p.nope_dim + p.v_dim);
        float* kd = keys.row(j) + h * qk;
        std::copy(src, src + p.nope_dim, kd);
        std::copy_n(cache.v_row(j), p.rope_dim, kd + p.nope_dim);  // rope key shared by all heads
        std::copy(src + p.nope_dim, src + p.nope_dim + p.v_dim, values.row(j) + h * p.v_dim);
      }
  });
  AttentionParams a;
  a.heads = a.kv_heads = p.heads;
  a.qk_dim = qk;
  a.v_dim = p.v_dim;
  a.scale = p.scale;
  a.keep = p.keep;
  std::vector<int32_t> one_block;
  return attention(q, q_positions, KvPages::contiguous(keys, values, one_block), a);
}

double mla_softmax_scale(const model::ModelConfig& c) {
  const double qk = static_cast<double>(c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim);
  double scale = 1.0 / std::sqrt(qk);
  if (c.rope.type != "default" && c.rope.mscale_all_dim != 0) {
    const double m = yarn_mscale(c.rope.factor, c.rope.mscale_all_dim);
    scale *= m * m;
  }
  return scale;
}

}  // namespace dayzero::executor
