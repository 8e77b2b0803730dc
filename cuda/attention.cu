// The CUDA backend's attention: causal GQA over one sequence's keys and values
// (sliding window, sinks, a keep mask), as executor/kernels.h attention computes it,
// tiled as FlashAttention does (Dao et al. 2022): a block holds 64 rows of queries
// against 64 keys at a time in shared memory with an online softmax, so the scores
// never leave the chip. A row is one (query, head): a KV head's query heads are
// consecutive rows, so grouped heads (GQA, and MLA's absorbed form where every head
// shares one KV head) read each key tile once for the whole group. A long context
// with few rows (decode) is split across blocks (FlashDecoding: Dao et al. 2023),
// each split's partial softmax combined in a second kernel in a fixed order.
//
// Float32 throughout (the CPU sums in double): the first GPU runs' one-block-per-
// (query, head) double kernel spent 20.7 ms on a 1,024-token prefill of two
// Llama-3.1-8B layers, 97 % of the step (session 29's run).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/check.cuh"
#include "cuda/kernels.h"

namespace dayzero::cuda {

namespace {
constexpr int kRows = 64;      // (query, head) rows a block holds
constexpr int kKeys = 64;      // keys a tile holds
constexpr int kDims = 32;      // query / key features staged at a time
constexpr int kValues = 128;   // output features a block computes (gridDim.y covers the rest)
constexpr int kThreads = 256;  // 16 x 16: thread (ty, tx) holds S[4 ty + i][4 tx + j] and O[4 ty + i][8 tx + u]
// qs and ks rows (one feature's 64 rows or keys) are 68 floats apart: float4-aligned for
// the products' reads, and a warp's stores (one row's 32 features) spread over 8 banks.
constexpr int kPitch = kRows + 4;
constexpr size_t kSharedFloats = 2 * kDims * kPitch + kRows * kKeys + kKeys * kValues;  // 65 KiB
static_assert(kThreads == 16 * 16 && kRows == 4 * 16 && kKeys == 4 * 16 && kValues == 8 * 16, "thread tiling");
static_assert(kRows == kKeys && kPitch % 4 == 0, "qs and ks share a pitch of whole float4s");

struct Args {
  const float* q = nullptr;  // [queries, heads, qk_dim]
  const int64_t* positions = nullptr;
  const float* k = nullptr;      // [context, kv_heads, qk_dim]
  const float* v = nullptr;      // [context, kv_heads, v_dim]
  const float* sinks = nullptr;  // [heads] or null
  const float* keep = nullptr;   // [queries, context] or null
  int64_t queries = 0, context = 0, window = 0;
  int heads = 0, group = 0, kv_heads = 0, qk_dim = 0, v_dim = 0, tiles_per_split = 0;
  float scale = 0.0f;
  float* out = nullptr;     // [queries, heads, v_dim]: one split
  float* part_o = nullptr;  // [splits, queries * heads, v_dim]: several
  float* part_m = nullptr;  // [splits, queries * heads]: each split's running max
  float* part_l = nullptr;  // [splits, queries * heads]: its sum of exp(score - max)
};

// The 16 threads of a row (tx, the lane's low 4 bits) agree on its max and sum: an
// xor butterfly leaves every lane the same value (each step adds equal pairs).
__device__ float row_max(float x) {
  for (int offset = 1; offset < 16; offset <<= 1) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, offset));
  return x;
}
__device__ float row_sum(float x) {
  for (int offset = 1; offset < 16; offset <<= 1) x += __shfl_xor_sync(0xFFFFFFFFu, x, offset);
  return x;
}

struct Rows {            // the block's rows, in shared memory
  int64_t pos[kRows];    // the query's position; -1 past the last row
  int64_t index[kRows];  // t * heads + h (the row of q and out)
  int64_t query[kRows];  // t (the row of keep)
};

// S[r][c] += q_r . k_c over every feature, staged kDims at a time through shared
// memory (qs, ks transposed: feature-major, so a thread reads its 4 rows and 4 keys as
// one float4 each). A warp loads one row's (or key's) 32 consecutive features: 128
// coalesced bytes (the first H200 run of this kernel loaded a feature of 32 rows at a
// time, 32 sectors a load: 16 TFLOP/s on the 8B's prefill).
__device__ void scores(const Args& a, const Rows& rows, int kvh, int64_t j0, int64_t key_end, float* qs, float* ks,
                       float (&s)[4][4]) {
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  for (int d0 = 0; d0 < a.qk_dim; d0 += kDims) {
    for (int e = tid; e < kDims * kRows; e += kThreads) {
      const int dd = e % kDims, r = e / kDims, d = d0 + dd;
      qs[dd * kPitch + r] = rows.pos[r] >= 0 && d < a.qk_dim ? a.q[rows.index[r] * a.qk_dim + d] : 0.0f;
    }
    for (int e = tid; e < kDims * kKeys; e += kThreads) {
      const int dd = e % kDims, c = e / kDims, d = d0 + dd;
      const int64_t j = j0 + c;
      ks[dd * kPitch + c] = j < key_end && d < a.qk_dim ? a.k[(j * a.kv_heads + kvh) * a.qk_dim + d] : 0.0f;
    }
    __syncthreads();
    for (int dd = 0; dd < kDims; ++dd) {
      const float4 qv = reinterpret_cast<const float4*>(qs + dd * kPitch)[ty];
      const float4 kv = reinterpret_cast<const float4*>(ks + dd * kPitch)[tx];
      const float qa[4] = {qv.x, qv.y, qv.z, qv.w}, ka[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = fmaf(qa[i], ka[j], s[i][j]);
    }
    __syncthreads();
  }
}

// Block (row tile, KV head x value chunk, split).
__global__ void __launch_bounds__(kThreads) flash_kernel(Args a) {
  extern __shared__ float4 shared4[];
  float* qs = reinterpret_cast<float*>(shared4);  // [kDims][kPitch]: kRows rows a feature
  float* ks = qs + kDims * kPitch;                // [kDims][kPitch]: kKeys keys a feature
  float* ps = ks + kDims * kPitch;                // [kRows][kKeys]: the tile's exp(score - max)
  float* vs = ps + kRows * kKeys;                 // [kKeys][kValues]
  __shared__ Rows rows;
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const int kvh = static_cast<int>(blockIdx.y) % a.kv_heads, chunk = static_cast<int>(blockIdx.y) / a.kv_heads;
  if (tid < kRows) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * kRows + tid;
    const bool real = r < a.queries * a.group;
    const int64_t t = real ? r / a.group : 0;
    rows.pos[tid] = real ? a.positions[t] : -1;
    rows.index[tid] = t * a.heads + kvh * a.group + (real ? r % a.group : 0);
    rows.query[tid] = t;
  }
  __syncthreads();
  int64_t lo_pos = INT64_MAX, hi_pos = -1;
  for (int r = 0; r < kRows; ++r)
    if (rows.pos[r] >= 0) lo_pos = min(lo_pos, rows.pos[r]), hi_pos = max(hi_pos, rows.pos[r]);
  // The keys some row of the block may see, within this split's tiles.
  const int64_t split_lo = static_cast<int64_t>(blockIdx.z) * a.tiles_per_split * kKeys;
  const int64_t key_end = min(min(hi_pos + 1, a.context), split_lo + int64_t{a.tiles_per_split} * kKeys);
  const int64_t key_lo = max(split_lo, a.window > 0 ? lo_pos - a.window + 1 : int64_t{0});
  const int v_lo = chunk * kValues;
  float m[4], l[4], o[4][8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY, l[i] = 0.0f;
#pragma unroll
    for (int u = 0; u < 8; ++u) o[i][u] = 0.0f;
  }
  for (int64_t j0 = key_lo / kKeys * kKeys; j0 < key_end; j0 += kKeys) {  // block-uniform bounds: the syncs
    float s[4][4] = {};
    scores(a, rows, kvh, j0, key_end, qs, ks, s);
    for (int e = tid; e < kKeys * kValues; e += kThreads) {
      const int c = e / kValues, d = v_lo + e % kValues;
      const int64_t j = j0 + c;
      vs[e] = j < key_end && d < a.v_dim ? a.v[(j * a.kv_heads + kvh) * a.v_dim + d] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = ty * 4 + i;
      const int64_t p = rows.pos[r];
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t key = j0 + tx * 4 + j;
        const bool seen = p >= 0 && key < key_end && key <= p && (a.window <= 0 || p - key < a.window) &&
                          (!a.keep || a.keep[rows.query[r] * a.context + key] != 0.0f);
        s[i][j] = seen ? s[i][j] * a.scale : -INFINITY;
        tile_max = fmaxf(tile_max, s[i][j]);
      }
      const float m_new = fmaxf(m[i], row_max(tile_max));
      float pr[4], sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        pr[j] = m_new == -INFINITY ? 0.0f : expf(s[i][j] - m_new);
        sum += pr[j];
      }
      const float corr = m_new == -INFINITY ? 1.0f : expf(m[i] - m_new);  // exp(-inf) = 0: nothing summed yet
      l[i] = l[i] * corr + row_sum(sum);
      m[i] = m_new;
#pragma unroll
      for (int u = 0; u < 8; ++u) o[i][u] *= corr;
      reinterpret_cast<float4*>(ps + r * kKeys)[tx] = make_float4(pr[0], pr[1], pr[2], pr[3]);
    }
    __syncthreads();
    for (int c = 0; c < kKeys; c += 4) {
      float4 pr[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) pr[i] = reinterpret_cast<const float4*>(ps + (ty * 4 + i) * kKeys + c)[0];
#pragma unroll
      for (int cc = 0; cc < 4; ++cc) {
        const float4 v0 = reinterpret_cast<const float4*>(vs + (c + cc) * kValues + tx * 8)[0];
        const float4 v1 = reinterpret_cast<const float4*>(vs + (c + cc) * kValues + tx * 8)[1];
        const float va[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float w = cc == 0 ? pr[i].x : cc == 1 ? pr[i].y : cc == 2 ? pr[i].z : pr[i].w;
#pragma unroll
          for (int u = 0; u < 8; ++u) o[i][u] = fmaf(w, va[u], o[i][u]);
        }
      }
    }
    __syncthreads();
  }
  const int64_t rows_all = a.queries * a.heads;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = ty * 4 + i;
    if (rows.pos[r] < 0) continue;
    const int64_t ri = rows.index[r];
    if (gridDim.z == 1) {  // the whole context: normalize here (a sink joins the denominator)
      float keep_o = 1.0f, denom = l[i];
      if (a.sinks) {
        const float sink = a.sinks[ri % a.heads], top = fmaxf(m[i], sink);
        keep_o = m[i] == -INFINITY ? 0.0f : expf(m[i] - top);
        denom = l[i] * keep_o + expf(sink - top);
      }
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int d = v_lo + tx * 8 + u;
        if (d < a.v_dim) a.out[ri * a.v_dim + d] = denom > 0.0f ? o[i][u] * keep_o / denom : 0.0f;
      }
      continue;
    }
    const int64_t at = static_cast<int64_t>(blockIdx.z) * rows_all + ri;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int d = v_lo + tx * 8 + u;
      if (d < a.v_dim) a.part_o[at * a.v_dim + d] = o[i][u];
    }
    if (chunk == 0 && tx == 0) a.part_m[at] = m[i], a.part_l[at] = l[i];
  }
}

// Block ri = t * heads + h: the splits' partial softmaxes into one, in split order.
__global__ void combine_kernel(Args a, int splits) {
  const int64_t ri = blockIdx.x, rows_all = a.queries * a.heads;
  float top = a.sinks ? a.sinks[ri % a.heads] : -INFINITY;
  for (int z = 0; z < splits; ++z) top = fmaxf(top, a.part_m[z * rows_all + ri]);
  float denom = a.sinks ? expf(a.sinks[ri % a.heads] - top) : 0.0f;
  for (int z = 0; z < splits; ++z) {
    const float mz = a.part_m[z * rows_all + ri];
    if (mz != -INFINITY) denom += a.part_l[z * rows_all + ri] * expf(mz - top);
  }
  for (int d = static_cast<int>(threadIdx.x); d < a.v_dim; d += static_cast<int>(blockDim.x)) {
    float acc = 0.0f;
    for (int z = 0; z < splits; ++z) {
      const float mz = a.part_m[z * rows_all + ri];
      if (mz != -INFINITY) acc += a.part_o[(z * rows_all + ri) * a.v_dim + d] * expf(mz - top);
    }
    a.out[ri * a.v_dim + d] = denom > 0.0f ? acc / denom : 0.0f;
  }
}

void need(const DeviceBuffer& b, int64_t elems, size_t elem_bytes, const char* which) {
  if (elems < 0 || b.bytes() < static_cast<size_t>(elems) * elem_bytes)
    throw CudaError(std::string("attention_f32: ") + which + " holds " + std::to_string(b.bytes()) + " bytes, not " +
                    std::to_string(elems) + " elements of " + std::to_string(elem_bytes));
}

int device_attribute(cudaDeviceAttr what, const char* name) {
  int device = 0, value = 0;
  detail::check(cudaGetDevice(&device), "cudaGetDevice");
  detail::check(cudaDeviceGetAttribute(&value, what, device), name);
  return value;
}
}  // namespace

void attention_f32(const DeviceBuffer& q, const DeviceBuffer& positions, int64_t queries, const DeviceBuffer& k,
                   const DeviceBuffer& v, int64_t context, const DeviceBuffer* sinks, const DeviceBuffer* keep,
                   const DeviceAttention& p, DeviceBuffer& out) {
  if (p.heads <= 0 || p.kv_heads <= 0 || p.heads % p.kv_heads != 0 || p.qk_dim <= 0 || p.v_dim <= 0 ||
      p.kv_heads > 65535)
    throw CudaError("attention_f32: " + std::to_string(p.heads) + " heads / " + std::to_string(p.kv_heads) +
                    " kv heads of qk " + std::to_string(p.qk_dim) + ", v " + std::to_string(p.v_dim));
  need(q, queries * p.heads * p.qk_dim, 4, "q");
  need(positions, queries, 8, "positions");
  need(k, context * p.kv_heads * p.qk_dim, 4, "k");
  need(v, context * p.kv_heads * p.v_dim, 4, "v");
  need(out, queries * p.heads * p.v_dim, 4, "out");
  if (sinks) need(*sinks, p.heads, 4, "sinks");
  if (keep) need(*keep, queries * context, 4, "keep");
  if (queries == 0) return;
  Args a;
  a.q = static_cast<const float*>(q.data());
  a.positions = static_cast<const int64_t*>(positions.data());
  a.k = static_cast<const float*>(k.data());
  a.v = static_cast<const float*>(v.data());
  a.sinks = sinks ? static_cast<const float*>(sinks->data()) : nullptr;
  a.keep = keep ? static_cast<const float*>(keep->data()) : nullptr;
  a.queries = queries, a.context = context, a.window = p.window;
  a.heads = static_cast<int>(p.heads), a.kv_heads = static_cast<int>(p.kv_heads);
  a.group = static_cast<int>(p.heads / p.kv_heads);
  a.qk_dim = static_cast<int>(p.qk_dim), a.v_dim = static_cast<int>(p.v_dim);
  a.scale = static_cast<float>(p.scale);
  a.out = static_cast<float*>(out.data());
  // Blocks: row tiles x (KV heads x value chunks) x context splits. Few blocks (decode:
  // a query's heads are one or two row tiles) split the context so that every SM has
  // two blocks; a split is whole key tiles, so splits never share a tile.
  const int64_t row_tiles = (queries * a.group + kRows - 1) / kRows;
  const int64_t chunks = (p.v_dim + kValues - 1) / kValues;
  const int64_t key_tiles = std::max<int64_t>(1, (context + kKeys - 1) / kKeys);
  const int64_t blocks = row_tiles * p.kv_heads * chunks;
  const int64_t want = 2 * int64_t{device_attribute(cudaDevAttrMultiProcessorCount, "cudaDeviceGetAttribute(SMs)")};
  int64_t splits = blocks >= want ? 1 : std::min<int64_t>({key_tiles, (want + blocks - 1) / blocks, 65535});
  const int64_t tiles_per_split = (key_tiles + splits - 1) / splits;
  splits = (key_tiles + tiles_per_split - 1) / tiles_per_split;
  a.tiles_per_split = static_cast<int>(tiles_per_split);
  if (p.kv_heads * chunks > 65535 || row_tiles > INT32_MAX)
    throw CudaError("attention_f32: " + std::to_string(queries) + " queries x " + std::to_string(p.heads) +
                    " heads exceed the launch grid");
  const int64_t rows_all = queries * p.heads;
  DeviceBuffer part_o, part_ml;
  if (splits > 1) {
    part_o = DeviceBuffer(*out.pool(), static_cast<size_t>(splits * rows_all * p.v_dim) * sizeof(float));
    part_ml = DeviceBuffer(*out.pool(), static_cast<size_t>(2 * splits * rows_all) * sizeof(float));
    a.part_o = static_cast<float*>(part_o.data());
    a.part_m = static_cast<float*>(part_ml.data());
    a.part_l = a.part_m + splits * rows_all;
  }
  const size_t shared_bytes = kSharedFloats * sizeof(float);  // past the 48 KiB default: opted into
  detail::check(
      cudaFuncSetAttribute(flash_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_bytes)),
      "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)");
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(p.kv_heads * chunks),
                  static_cast<unsigned>(splits));
  const detail::KernelClock clock;  // device time (cuda/device.h take_kernel_seconds)
  flash_kernel<<<grid, kThreads, shared_bytes>>>(a);
  detail::check_launch("attention_f32");
  if (splits > 1) {
    combine_kernel<<<static_cast<unsigned>(rows_all), kValues>>>(a, static_cast<int>(splits));
    detail::check_launch("attention_f32 (combine)");
  }
}

}  // namespace dayzero::cuda
