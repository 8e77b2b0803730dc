// CPU kernels: gated delta-net linear attention (Qwen3.5), chunked for prefill and
// recurrent for decode, over one sequence's state.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "executor/kernel_checks.h"
#include "executor/kernels.h"
#include "executor/threads.h"

namespace dayzero::executor {

namespace {

double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }  // torch's threshold 20
float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Causal depthwise conv over time with SiLU: out[t, c] = silu(sum_j w[c, j] x[t - K + 1 + j, c]),
// earlier inputs from the state (the last K - 1 inputs, oldest first), which is updated.
Tensor causal_conv(const Tensor& x, std::span<const float> w, int64_t K, Tensor& state) {
  const int64_t T = x.rows(), C = x.cols();
  Tensor y({T, C});
  const float* earlier = std::as_const(state).data.data();
  auto input = [&](int64_t t, int64_t c) {  // t may be negative: from the state
    return t >= 0 ? x.row(t)[c] : earlier[(K - 1 + t) * C + c];
  };
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < K; ++j) acc += w[static_cast<size_t>(c * K + j)] * input(t - K + 1 + j, c);
      y.row(t)[c] = silu(acc);
    }
  std::vector<float> next(static_cast<size_t>(state.numel()));
  for (int64_t r = 0; r < K - 1; ++r)
    for (int64_t c = 0; c < C; ++c) next[static_cast<size_t>(r * C + c)] = input(T - (K - 1) + r, c);
  state.data.assign(next.begin(), next.end());
  return y;
}

void l2_normalize(float* x, int64_t n, double eps) {
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const double inv = 1.0 / std::sqrt(ss + eps);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * inv);
}

// Per token and value head: q, k (L2-normalized, q scaled by dk^-1/2), v, the decay
// g = -exp(A_log) softplus(a + dt_bias) and beta = sigmoid(b).
struct HeadInputs {
  int64_t T = 0, Hv = 0, dk = 0, dv = 0;
  std::vector<float> q, k, v, g, beta;  // [T, Hv, dk], [T, Hv, dk], [T, Hv, dv], [T, Hv], [T, Hv]
  float* qt(int64_t t, int64_t h) { return &q[static_cast<size_t>((t * Hv + h) * dk)]; }
  float* kt(int64_t t, int64_t h) { return &k[static_cast<size_t>((t * Hv + h) * dk)]; }
  float* vt(int64_t t, int64_t h) { return &v[static_cast<size_t>((t * Hv + h) * dv)]; }
};

HeadInputs head_inputs(const Tensor& conv, const Tensor& b, const Tensor& a, const LinearAttentionWeights& w,
                       const LinearAttentionParams& p) {
  HeadInputs in{conv.rows(), p.value_heads, p.key_head_dim, p.value_head_dim, {}, {}, {}, {}, {}};
  const int64_t T = in.T, Hv = in.Hv, dk = in.dk, dv = in.dv, group = Hv / p.key_heads;
  in.q.resize(static_cast<size_t>(T * Hv * dk));
  in.k.resize(in.q.size());
  in.v.resize(static_cast<size_t>(T * Hv * dv));
  in.g.resize(static_cast<size_t>(T * Hv));
  in.beta.resize(in.g.size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(dk));
  for (int64_t t = 0; t < T; ++t) {
    const float* row = conv.row(t);  // [q (Hk dk), k (Hk dk), v (Hv dv)]
    for (int64_t h = 0; h < Hv; ++h) {
      const int64_t kh = h / group;  // value head h reads key head h / (Hv / Hk)
      std::copy_n(row + kh * dk, dk, in.qt(t, h));
      std::copy_n(row + (p.key_heads + kh) * dk, dk, in.kt(t, h));
      std::copy_n(row + 2 * p.key_heads * dk + h * dv, dv, in.vt(t, h));
      l2_normalize(in.qt(t, h), dk, p.l2_eps);
      l2_normalize(in.kt(t, h), dk, p.l2_eps);
      for (int64_t d = 0; d < dk; ++d) in.qt(t, h)[d] = static_cast<float>(in.qt(t, h)[d] * scale);
      const size_t i = static_cast<size_t>(t * Hv + h);
      in.g[i] = static_cast<float>(-std::exp(static_cast<double>(w.a_log[static_cast<size_t>(h)])) *
                                   softplus(static_cast<double>(a.row(t)[h]) + w.dt_bias[static_cast<size_t>(h)]));
      in.beta[i] = sigmoid(b.row(t)[h]);
    }
  }
  return in;
}

// The delta rule one token at a time, on head h's state S [dk, dv]:
// S = exp(g) S; S += k (beta (v - S^T k))^T; o = S^T q.
void recurrent_head(HeadInputs& in, int64_t h, float* S, float* out, int64_t out_stride) {
  const int64_t dk = in.dk, dv = in.dv;
  std::vector<double> mem(static_cast<size_t>(dv));
  for (int64_t t = 0; t < in.T; ++t) {
    const size_t i = static_cast<size_t>(t * in.Hv + h);
    const float decay = std::exp(in.g[i]);
    for (int64_t e = 0; e < dk * dv; ++e) S[e] *= decay;
    const float *q = in.qt(t, h), *k = in.kt(t, h), *v = in.vt(t, h);
    std::fill(mem.begin(), mem.end(), 0.0);
    for (int64_t r = 0; r < dk; ++r)
      for (int64_t c = 0; c < dv; ++c) mem[c] += static_cast<double>(k[r]) * S[r * dv + c];
    for (int64_t c = 0; c < dv; ++c) mem[c] = (v[c] - mem[c]) * in.beta[i];
    for (int64_t r = 0; r < dk; ++r)
      for (int64_t c = 0; c < dv; ++c) S[r * dv + c] += static_cast<float>(k[r] * mem[c]);
    float* o = out + t * out_stride + h * dv;
    for (int64_t c = 0; c < dv; ++c) {
      double acc = 0.0;
      for (int64_t r = 0; r < dk; ++r) acc += static_cast<double>(q[r]) * S[r * dv + c];
      o[c] = static_cast<float>(acc);
    }
  }
}

// The chunked form (flash-linear-attention's chunk_gated_delta_rule, as transformers'
// torch_chunk_gated_delta_rule writes it) on head h: within a chunk the delta rule's
// unit-triangular system is solved by forward substitution, the state carries across
// chunks. The recurrence in exact arithmetic (a test checks both). A short last chunk
// is the padded one of the reference without its zero rows.
void chunked_head(HeadInputs& in, int64_t h, int64_t chunk, float* S, float* out, int64_t out_stride) {
  const int64_t dk = in.dk, dv = in.dv;
  for (int64_t s = 0; s < in.T; s += chunk) {
    const int64_t L = std::min(chunk, in.T - s);
    auto idx = [&](int64_t i) { return static_cast<size_t>((s + i) * in.Hv + h); };
    std::vector<double> gc(static_cast<size_t>(L));  // cumulative log-decay within the chunk
    for (int64_t i = 0; i < L; ++i) gc[i] = (i ? gc[i - 1] : 0.0) + in.g[idx(i)];
    auto dot = [](const float* x, const float* y, int64_t n) {
      double d = 0.0;
      for (int64_t e = 0; e < n; ++e) d += static_cast<double>(x[e]) * y[e];
      return d;
    };
    // A = (I + strictly-lower(beta_i k_i.k_j e^(gc_i - gc_j)))^-1 by forward substitution.
    std::vector<double> A(static_cast<size_t>(L * L), 0.0);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < i; ++j)
        A[i * L + j] = -in.beta[idx(i)] * dot(in.kt(s + i, h), in.kt(s + j, h), dk) * std::exp(gc[i] - gc[j]);
    std::vector<double> row(static_cast<size_t>(L));
    for (int64_t i = 1; i < L; ++i) {
      std::copy_n(&A[i * L], i, row.begin());
      for (int64_t j = 0; j < i; ++j) {
        double acc = row[j];
        for (int64_t m = j + 1; m < i; ++m) acc += row[m] * A[m * L + j];
        A[i * L + j] = acc;
      }
    }
    for (int64_t i = 0; i < L; ++i) A[i * L + i] = 1.0;
    // v_new = A (beta v) - A (beta e^gc k) S: each row's value less what the state already holds.
    std::vector<double> vnew(static_cast<size_t>(L * dv), 0.0);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j <= i; ++j) {
        const double aij = A[i * L + j] * in.beta[idx(j)];
        const float *vj = in.vt(s + j, h), *kj = in.kt(s + j, h);
        const double kdecay = aij * std::exp(gc[j]);
        for (int64_t c = 0; c < dv; ++c) {
          double ks = 0.0;
          for (int64_t r = 0; r < dk; ++r) ks += static_cast<double>(kj[r]) * S[r * dv + c];
          vnew[i * dv + c] += aij * vj[c] - kdecay * ks;
        }
      }
    // o_i = e^gc_i q_i S + sum_{j <= i} (q_i.k_j) e^(gc_i - gc_j) v_new_j
    for (int64_t i = 0; i < L; ++i) {
      const float* qi = in.qt(s + i, h);
      float* o = out + (s + i) * out_stride + h * dv;
      std::vector<double> acc(static_cast<size_t>(dv), 0.0);
      for (int64_t c = 0; c < dv; ++c) {
        double qs = 0.0;
        for (int64_t r = 0; r < dk; ++r) qs += static_cast<double>(qi[r]) * S[r * dv + c];
        acc[c] = std::exp(gc[i]) * qs;
      }
      for (int64_t j = 0; j <= i; ++j) {
        const double w = dot(qi, in.kt(s + j, h), dk) * std::exp(gc[i] - gc[j]);
        for (int64_t c = 0; c < dv; ++c) acc[c] += w * vnew[j * dv + c];
      }
      for (int64_t c = 0; c < dv; ++c) o[c] = static_cast<float>(acc[c]);
    }
    // S = e^gc_last S + sum_j e^(gc_last - gc_j) k_j v_new_j^T
    const double last = gc[L - 1];
    for (int64_t e = 0; e < dk * dv; ++e) S[e] = static_cast<float>(S[e] * std::exp(last));
    for (int64_t j = 0; j < L; ++j) {
      const float* kj = in.kt(s + j, h);
      const double d = std::exp(last - gc[j]);
      for (int64_t r = 0; r < dk; ++r)
        for (int64_t c = 0; c < dv; ++c) S[r * dv + c] += static_cast<float>(d * kj[r] * vnew[j * dv + c]);
    }
  }
}

}  // namespace

LinearState zero_linear_state(const LinearAttentionParams& p, Tensor (*zeros)(std::vector<int64_t>)) {
  return {zeros({p.conv_kernel - 1, p.conv_dim()}), zeros({p.value_heads, p.key_head_dim * p.value_head_dim})};
}

Tensor gated_delta_net(const Tensor& qkv, const Tensor& z, const Tensor& b, const Tensor& a,
                       const LinearAttentionWeights& w, LinearState& state, const LinearAttentionParams& p) {
  checks::gated_delta_net(qkv, z, b, a, w, p, state);
  const Tensor conv = causal_conv(qkv, w.conv, p.conv_kernel, state.conv);
  HeadInputs in = head_inputs(conv, b, a, w, p);
  const int64_t Hv = p.value_heads, dk = p.key_head_dim, dv = p.value_head_dim;
  Tensor o({qkv.rows(), Hv * dv});
  float* recurrent = state.recurrent.data.data();  // once, on this thread (tensor_values.h)
  // One item per value head: its state and its output columns belong to one thread.
  parallel_for(Hv, static_cast<double>(qkv.rows() * dk * dv) * 8.0, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      float* S = recurrent + h * dk * dv;
      if (p.chunk > 0) chunked_head(in, h, p.chunk, S, o.data.data(), o.cols());
      else recurrent_head(in, h, S, o.data.data(), o.cols());
    }
  });
  // The gated RMSNorm per value head: rms_norm(o) * weight * silu(z).
  for (int64_t t = 0; t < o.rows(); ++t)
    for (int64_t h = 0; h < Hv; ++h) {
      float* x = o.row(t) + h * dv;
      const float* zh = z.row(t) + h * dv;
      double ss = 0.0;
      for (int64_t c = 0; c < dv; ++c) ss += static_cast<double>(x[c]) * x[c];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dv) + p.norm_eps);
      for (int64_t c = 0; c < dv; ++c)
        x[c] = static_cast<float>(x[c] * inv) * w.norm[static_cast<size_t>(c)] * silu(zh[c]);
    }
  return o;
}

}  // namespace dayzero::executor
