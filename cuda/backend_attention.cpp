// The CUDA backend's attention (cuda/backend.h): GQA (window, sinks, keep mask), MLA
// (absorbed for decode, expanded for prompts, as the CPU picks), the sparse-attention
// indexer and the gated delta-net (its state updated in place where it lies), inputs
// checked as the CPU kernels check them. Queries are read where they
// lie and results stay on the device (staging::on_device, staging::result); the KV
// cache is the host's (its pages go up each call).
#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/kv_store.h"
#include "cuda/staging.h"
#include "executor/kernel_checks.h"

namespace dayzero::cuda::staged {

using executor::Tensor;
using staging::upload;

namespace {
// Whole cached rows of one store (keys, or values) at a column offset of a wider row.
struct Piece {
  bool values = false;
  int64_t offset = 0;
};
// The sequence's cached rows as float32 [C, wide] on the device: gathered through its
// slots where this backend holds the cache (cuda/kv_store.h), else copied out of the
// host's pages and sent up.
DeviceBuffer context_rows(const executor::KvPages& kv, std::initializer_list<Piece> pieces, int64_t wide) {
  const int64_t C = kv.tokens;
  DeviceBuffer out = staging::scratch(static_cast<size_t>(C * wide) * sizeof(float));
  if (C == 0) return out;
  if (!kv.on_host()) {
    const DeviceBuffer slots = upload(std::span<const int64_t>(kv.slots()));
    for (const Piece& p : pieces) {
      const auto* store = dynamic_cast<const CudaKvStore*>(p.values ? kv.v_store : kv.k_store);
      if (!store) throw std::logic_error("attention: the KV cache is not in this backend's memory");
      store->gather(slots, C, out, wide, p.offset);
    }
    return out;
  }
  std::vector<float> host(static_cast<size_t>(C * wide));
  for (const Piece& p : pieces) {
    const int64_t width = p.values ? kv.v_width : kv.k_width;
    for (int64_t j = 0; j < C; ++j)
      std::copy_n(p.values ? kv.v_row(j) : kv.k_row(j), width, host.data() + j * wide + p.offset);
  }
  out.upload(host.data(), host.size() * sizeof(float));
  return out;
}
}  // namespace

Tensor attention(const Tensor& q, std::span<const int64_t> q_positions, const executor::KvPages& kv,
                 const executor::AttentionParams& p) {
  executor::checks::attention(q, q_positions, kv, p);
  if (q.rows() == 0) return Tensor({0, p.heads * p.v_dim});
  // The sequence's keys and values out of their pages, contiguous (the kernel reads
  // them so).
  const int64_t C = kv.tokens;
  const DeviceBuffer k = context_rows(kv, {{false, 0}}, kv.k_width), v = context_rows(kv, {{true, 0}}, kv.v_width);
  DeviceAttention da{p.heads, p.kv_heads, p.qk_dim, p.v_dim, p.scale, p.window};
  const DeviceBuffer sinks = upload(p.sinks);
  DeviceBuffer o = staging::scratch(static_cast<size_t>(q.rows() * p.heads * p.v_dim) * sizeof(float));
  attention_f32(staging::on_device(q), upload(q_positions), q.rows(), k, v, C, p.sinks.empty() ? nullptr : &sinks,
                p.keep ? &staging::on_device(*p.keep) : nullptr, da, o);
  return staging::result({q.rows(), p.heads * p.v_dim}, std::move(o));
}

namespace {
// MLA absorbed (few queries against a long context, decode): each query into the latent
// space through kv_b's key half, attention over the cached [latent | rope key] as one KV
// head every head shares (values: the latent), out through kv_b's value half (mla.cu).
// The context moves as latents (rank + rope floats a token), not expanded per head.
Tensor mla_absorbed(const Tensor& q, std::span<const int64_t> q_positions, const executor::KvPages& cache,
                    const executor::StoredWeight& kv_b, const executor::MlaParams& p) {
  const int64_t T = q.rows(), C = cache.tokens, R = p.kv_lora_rank, wide = R + p.rope_dim;
  const DeviceBuffer keys = context_rows(cache, {{false, 0}, {true, R}}, wide),
                     values = context_rows(cache, {{false, 0}}, R);
  const DeviceMla dm{p.heads, p.nope_dim, p.rope_dim, p.v_dim, R};
  const DeviceBuffer& w = staging::device_weight(kv_b, 0);  // float32 [heads * (nope + v), rank]
  DeviceBuffer q_abs = staging::scratch(static_cast<size_t>(T * p.heads * wide) * sizeof(float));
  mla_absorb_q_f32(staging::on_device(q), T, dm, w, q_abs);
  DeviceBuffer lat = staging::scratch(static_cast<size_t>(T * p.heads * R) * sizeof(float));
  attention_f32(q_abs, upload(q_positions), T, keys, values, C, nullptr,
                p.keep ? &staging::on_device(*p.keep) : nullptr, DeviceAttention{p.heads, 1, wide, R, p.scale, 0}, lat);
  DeviceBuffer o = staging::scratch(static_cast<size_t>(T * p.heads * p.v_dim) * sizeof(float));
  mla_unabsorb_f32(lat, T, dm, w, o);
  return staging::result({T, p.heads * p.v_dim}, std::move(o));
}
}  // namespace

// MLA in the form the CPU picks for the shape (executor::mla_absorbed, by cost): the
// absorbed form above, or as the reference computes it un-absorbed (many queries,
// prefill): the context's latents through kv_b (cuBLASLt) into per-head [k_nope | v],
// each key joined by the shared rope key, then attention over heads x (nope + rope)
// keys. The two are the same in exact arithmetic.
Tensor mla_attention(const Tensor& q, std::span<const int64_t> q_positions, const executor::KvPages& cache,
                     const executor::StoredWeight& kv_b, const executor::MlaParams& p) {
  executor::checks::mla_attention(q, q_positions, cache, kv_b, p);
  if (q.rows() == 0) return Tensor({0, p.heads * p.v_dim});
  if (executor::mla_absorbed(q.rows(), cache.tokens, p.nope_dim, p.rope_dim, p.kv_lora_rank, p.v_dim))
    return mla_absorbed(q, q_positions, cache, kv_b, p);
  // On the device: the latents through kv_b (cuBLASLt), expanded per head beside the
  // shared rope key (mla_expand_kv_f32), then attention; only the latents, rope keys
  // and queries go up (the first GPU run moved the expanded context through the host:
  // ~300 MB a layer at 1,024 tokens).
  const int64_t qk = p.nope_dim + p.rope_dim, C = cache.tokens, T = q.rows();
  const DeviceBuffer latent = context_rows(cache, {{false, 0}}, p.kv_lora_rank),
                     rope_keys = context_rows(cache, {{true, 0}}, p.rope_dim);
  const DeviceMla dm{p.heads, p.nope_dim, p.rope_dim, p.v_dim, p.kv_lora_rank};
  DeviceBuffer dkv = staging::scratch(static_cast<size_t>(C * p.heads * (p.nope_dim + p.v_dim)) * sizeof(float));
  if (C > 0)
    staging::blas().gemm_f32(latent, staging::device_weight(kv_b, 0), dkv, C, p.heads * (p.nope_dim + p.v_dim),
                             p.kv_lora_rank);
  DeviceBuffer keys = staging::scratch(static_cast<size_t>(C * p.heads * qk) * sizeof(float)),
               values = staging::scratch(static_cast<size_t>(C * p.heads * p.v_dim) * sizeof(float));
  mla_expand_kv_f32(dkv, rope_keys, C, dm, keys, values);
  DeviceBuffer o = staging::scratch(static_cast<size_t>(T * p.heads * p.v_dim) * sizeof(float));
  attention_f32(staging::on_device(q), upload(q_positions), T, keys, values, C, nullptr,
                p.keep ? &staging::on_device(*p.keep) : nullptr,
                DeviceAttention{p.heads, p.heads, qk, p.v_dim, p.scale, 0}, o);
  return staging::result({T, p.heads * p.v_dim}, std::move(o));
}

Tensor dsa_topk(const Tensor& q, const Tensor& w, std::span<const int64_t> q_positions, const executor::KvPages& keys,
                const executor::IndexerParams& p) {
  executor::checks::dsa_topk(q, w, q_positions, keys, p);
  const int64_t T = q.rows(), C = keys.tokens, H = p.heads, D = p.head_dim;
  Tensor keep({T, C});
  if (T == 0 || C == 0) return keep;
  const DeviceBuffer k = context_rows(keys, {{false, 0}}, D);
  DeviceBuffer dkeep = staging::scratch(static_cast<size_t>(keep.numel()) * sizeof(float));
  dsa_topk_f32(staging::on_device(q), staging::on_device(w), upload(q_positions), T, k, C, DeviceIndexer{H, D, p.topk},
               dkeep);  // k: the cached keys, gathered above
  return staging::result(keep.shape, std::move(dkeep));
}

Tensor gated_delta_net(const Tensor& qkv, const Tensor& z, const Tensor& b, const Tensor& a,
                       const executor::LinearAttentionWeights& w, executor::LinearState& state,
                       const executor::LinearAttentionParams& p) {
  executor::checks::gated_delta_net(qkv, z, b, a, w, p, state);
  const int64_t T = qkv.rows(), Hv = p.value_heads, dv = p.value_head_dim;
  const std::vector<int64_t> shape{T, Hv * dv};
  if (T == 0) return Tensor(shape);
  // The state where it lies, updated in place (a copy of its own where another tensor
  // shares it: the timer's repeats); a one-tap conv keeps no inputs.
  DeviceBuffer no_conv_state = staging::scratch(4);
  DeviceBuffer &conv_state = state.conv.numel() > 0 ? staging::writable(state.conv) : no_conv_state,
               &recurrent = staging::writable(state.recurrent);
  DeviceBuffer out = staging::scratch(static_cast<size_t>(T * Hv * dv) * sizeof(float));
  const DeviceBuffer &dq = staging::on_device(qkv), &dz = staging::on_device(z), &db = staging::on_device(b),
                     &da = staging::on_device(a);
  const DeviceBuffer dconv = upload(w.conv), ddt = upload(w.dt_bias), dlog = upload(w.a_log), dnorm = upload(w.norm);
  DeltaNetState ds{conv_state, recurrent};
  const DeviceDeltaNet dp{static_cast<int>(p.key_heads),
                          static_cast<int>(Hv),
                          static_cast<int>(p.key_head_dim),
                          static_cast<int>(dv),
                          static_cast<int>(p.conv_kernel),
                          p.l2_eps,
                          p.norm_eps};
  gated_delta_net_f32({dq, dz, db, da, dconv, ddt, dlog, dnorm}, ds, dp, T, out);
  return staging::result(shape, std::move(out));
}

}  // namespace dayzero::cuda::staged
