// The CUDA backend's attention over host tensors (stage 1, cuda/backend.h): GQA
// (window, sinks, keep mask), MLA in its expanded form, the sparse-attention indexer and
// the gated delta-net (its state a host LinearState, uploaded and read back each call), inputs checked as the CPU
// kernels check them, uploaded, run, results downloaded.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernels.h"
#include "cuda/staging.h"

namespace dayzero::cuda::staged {

using executor::Tensor;
using staging::download;
using staging::upload;

namespace {
std::string dims(const executor::AttentionParams& p) {
  return std::to_string(p.heads) + " heads / " + std::to_string(p.kv_heads) + " kv heads of qk " +
         std::to_string(p.qk_dim) + ", v " + std::to_string(p.v_dim);
}

void check_attention(const Tensor& q, std::span<const int64_t> q_positions, const executor::KvPages& kv,
                     const executor::AttentionParams& p) {
  if (p.heads <= 0 || p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    throw std::invalid_argument("attention: " + dims(p) + ": kv heads must divide heads");
  if (q.cols() != p.heads * p.qk_dim || kv.k_width != p.kv_heads * p.qk_dim || kv.v_width != p.kv_heads * p.v_dim)
    throw std::invalid_argument("attention: q " + q.shape_string() + ", cache rows of k " + std::to_string(kv.k_width) +
                                ", v " + std::to_string(kv.v_width) + " do not fit " + dims(p));
  if (static_cast<int64_t>(q_positions.size()) != q.rows())
    throw std::invalid_argument("attention: " + std::to_string(q_positions.size()) + " positions for " +
                                std::to_string(q.rows()) + " queries");
  if (!p.keep.empty() && static_cast<int64_t>(p.keep.size()) != q.rows() * kv.tokens)
    throw std::invalid_argument("attention: a keep mask of " + std::to_string(p.keep.size()) + " for " +
                                std::to_string(q.rows()) + " queries over " + std::to_string(kv.tokens) + " tokens");
  if (!p.sinks.empty() && static_cast<int64_t>(p.sinks.size()) != p.heads)
    throw std::invalid_argument("attention: " + std::to_string(p.sinks.size()) + " sinks for " +
                                std::to_string(p.heads) + " heads");
  for (int64_t pos : q_positions)
    if (pos < 0 || pos >= kv.tokens)
      throw std::out_of_range("attention: query position " + std::to_string(pos) + " outside a cache of " +
                              std::to_string(kv.tokens));
}

}  // namespace

Tensor attention(const Tensor& q, std::span<const int64_t> q_positions, const executor::KvPages& kv,
                 const executor::AttentionParams& p) {
  check_attention(q, q_positions, kv, p);
  Tensor out({q.rows(), p.heads * p.v_dim});
  if (q.rows() == 0) return out;
  // The sequence's keys and values out of their pages, contiguous (the kernel reads
  // them so; paged reads on the device come with device-resident caches).
  const int64_t C = kv.tokens;
  Tensor k({C, kv.k_width}), v({C, kv.v_width});
  for (int64_t j = 0; j < C; ++j) {
    std::copy_n(kv.k_row(j), kv.k_width, k.row(j));
    std::copy_n(kv.v_row(j), kv.v_width, v.row(j));
  }
  DeviceAttention da{p.heads, p.kv_heads, p.qk_dim, p.v_dim, p.scale, p.window};
  const DeviceBuffer sinks = upload(p.sinks);
  DeviceBuffer o = staging::scratch(static_cast<size_t>(out.numel()) * sizeof(float));
  const DeviceBuffer keep = upload(p.keep);
  attention_f32(upload(q), upload(q_positions), q.rows(), upload(k), upload(v), C, p.sinks.empty() ? nullptr : &sinks,
                p.keep.empty() ? nullptr : &keep, da, o);
  download(o, out);
  return out;
}

// MLA as the reference computes it un-absorbed: the context's latents through kv_b
// (cuBLASLt) into per-head [k_nope | v], each key joined by the shared rope key, then
// attention over heads x (nope + rope) keys. Exact as the absorbed form; at decode it
// expands the whole context every step (mla_expanded_cost), which a device-resident
// stage will avoid.
Tensor mla_attention(const Tensor& q, std::span<const int64_t> q_positions, const executor::KvPages& cache,
                     const executor::StoredWeight& kv_b, const executor::MlaParams& p) {
  const int64_t qk = p.nope_dim + p.rope_dim, C = cache.tokens, hw = p.nope_dim + p.v_dim;
  if (q.cols() != p.heads * qk || cache.k_width != p.kv_lora_rank || cache.v_width != p.rope_dim)
    throw std::invalid_argument("mla_attention: q " + q.shape_string() + ", cache rows of latent " +
                                std::to_string(cache.k_width) + ", rope key " + std::to_string(cache.v_width) +
                                " do not fit " + std::to_string(p.heads) + " heads of nope " +
                                std::to_string(p.nope_dim) + " + rope " + std::to_string(p.rope_dim) + ", rank " +
                                std::to_string(p.kv_lora_rank));
  if (kv_b.rows() != p.heads * hw || kv_b.cols() != p.kv_lora_rank)
    throw std::invalid_argument("mla_attention: kv_b_proj " + executor::shape_string(kv_b.shape) + " is not [" +
                                std::to_string(p.heads * hw) + ", " + std::to_string(p.kv_lora_rank) + "]");
  Tensor latent({C, p.kv_lora_rank});
  for (int64_t j = 0; j < C; ++j) std::copy_n(cache.k_row(j), p.kv_lora_rank, latent.row(j));
  Tensor kv({C, p.heads * hw});
  if (C > 0) {
    DeviceBuffer dkv = staging::scratch(static_cast<size_t>(kv.numel()) * sizeof(float));
    staging::blas().gemm_f32(upload(latent), staging::device_weight(kv_b, 0), dkv, C, p.heads * hw, p.kv_lora_rank);
    download(dkv, kv);
  }
  Tensor keys({C, p.heads * qk}), values({C, p.heads * p.v_dim});
  for (int64_t j = 0; j < C; ++j)
    for (int64_t h = 0; h < p.heads; ++h) {
      const float* src = kv.row(j) + h * hw;
      float* kd = keys.row(j) + h * qk;
      std::copy_n(src, p.nope_dim, kd);
      std::copy_n(cache.v_row(j), p.rope_dim, kd + p.nope_dim);  // the rope key, shared by all heads
      std::copy_n(src + p.nope_dim, p.v_dim, values.row(j) + h * p.v_dim);
    }
  executor::AttentionParams a;
  a.heads = a.kv_heads = p.heads;
  a.qk_dim = qk;
  a.v_dim = p.v_dim;
  a.scale = p.scale;
  a.keep = p.keep;
  std::vector<int32_t> one_block;
  return staged::attention(q, q_positions, executor::KvPages::contiguous(keys, values, one_block), a);
}

Tensor dsa_topk(const Tensor& q, const Tensor& w, std::span<const int64_t> q_positions, const executor::KvPages& keys,
                const executor::IndexerParams& p) {
  const int64_t T = q.rows(), C = keys.tokens, H = p.heads, D = p.head_dim;
  if (H <= 0 || D <= 0 || p.topk <= 0 || q.cols() != H * D || w.rows() != T || w.cols() != H || keys.k_width != D ||
      static_cast<int64_t>(q_positions.size()) != T)
    throw std::invalid_argument("dsa_topk: q " + q.shape_string() + ", weights " + w.shape_string() +
                                ", cached keys of " + std::to_string(keys.k_width) + " do not fit " +
                                std::to_string(H) + " heads of " + std::to_string(D) + ", top-k " +
                                std::to_string(p.topk));
  for (int64_t pos : q_positions)
    if (pos < 0 || pos >= C)
      throw std::out_of_range("dsa_topk: query position " + std::to_string(pos) + " outside a cache of " +
                              std::to_string(C));
  Tensor keep({T, C});
  if (T == 0 || C == 0) return keep;
  Tensor k({C, D});
  for (int64_t j = 0; j < C; ++j) std::copy_n(keys.k_row(j), D, k.row(j));
  DeviceBuffer dkeep = staging::scratch(static_cast<size_t>(keep.numel()) * sizeof(float));
  dsa_topk_f32(upload(q), upload(w), upload(q_positions), T, upload(k), C, DeviceIndexer{H, D, p.topk}, dkeep);
  download(dkeep, keep);
  return keep;
}

Tensor gated_delta_net(const Tensor& qkv, const Tensor& z, const Tensor& b, const Tensor& a,
                       const executor::LinearAttentionWeights& w, executor::LinearState& state,
                       const executor::LinearAttentionParams& p) {
  const int64_t T = qkv.rows(), Hv = p.value_heads, dv = p.value_head_dim, C = p.conv_dim();
  const bool ok = p.key_heads > 0 && Hv > 0 && Hv % p.key_heads == 0 && p.conv_kernel >= 1 && qkv.cols() == C &&
                  z.rows() == T && z.cols() == Hv * dv && b.rows() == T && b.cols() == Hv && a.rows() == T &&
                  a.cols() == Hv && static_cast<int64_t>(w.conv.size()) == C * p.conv_kernel &&
                  static_cast<int64_t>(w.dt_bias.size()) == Hv && static_cast<int64_t>(w.a_log.size()) == Hv &&
                  static_cast<int64_t>(w.norm.size()) == dv &&
                  static_cast<int64_t>(state.conv.size()) == (p.conv_kernel - 1) * C &&
                  static_cast<int64_t>(state.recurrent.size()) == Hv * p.key_head_dim * dv;
  if (!ok)
    throw std::invalid_argument("gated_delta_net (" + std::to_string(p.key_heads) + " key heads of " +
                                std::to_string(p.key_head_dim) + ", " + std::to_string(Hv) + " value heads of " +
                                std::to_string(dv) + ", conv " + std::to_string(p.conv_kernel) + "): inputs qkv " +
                                qkv.shape_string() + ", z " + z.shape_string() + ", b " + b.shape_string() + ", a " +
                                a.shape_string() + ", its weights or the sequence's state do not fit");
  Tensor o({T, Hv * dv});
  if (T == 0) return o;
  DeviceBuffer conv_state = upload(std::span<const float>(state.conv)),
               recurrent = upload(std::span<const float>(state.recurrent)),
               out = staging::scratch(static_cast<size_t>(o.numel()) * sizeof(float));
  const DeviceBuffer dq = upload(qkv), dz = upload(z), db = upload(b), da = upload(a), dconv = upload(w.conv),
                     ddt = upload(w.dt_bias), dlog = upload(w.a_log), dnorm = upload(w.norm);
  DeltaNetState ds{conv_state, recurrent};
  const DeviceDeltaNet dp{static_cast<int>(p.key_heads),
                          static_cast<int>(Hv),
                          static_cast<int>(p.key_head_dim),
                          static_cast<int>(dv),
                          static_cast<int>(p.conv_kernel),
                          p.l2_eps,
                          p.norm_eps};
  gated_delta_net_f32({dq, dz, db, da, dconv, ddt, dlog, dnorm}, ds, dp, T, out);
  download(out, o);
  if (!state.conv.empty()) conv_state.download(state.conv.data(), state.conv.size() * sizeof(float));
  recurrent.download(state.recurrent.data(), state.recurrent.size() * sizeof(float));
  return o;
}

}  // namespace dayzero::cuda::staged
