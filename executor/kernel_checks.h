#pragma once
// The argument checks every backend's kernel makes before it computes (the CPU's in
// executor/cpu_*.cpp, the CUDA backend's in cuda/backend*.cpp): one function per op,
// so a bad call fails the same way, with the same message, on any backend. Each
// throws std::invalid_argument (or std::out_of_range for an index or a position)
// naming the op and the shapes.

#include <cstdint>
#include <span>

#include "executor/kernels.h"

namespace dayzero::executor::checks {

// Every token within the table's rows (the vocabulary).
void embedding(const StoredWeight& table, std::span<const int64_t> tokens);
// The weights divide every row into groups (per row, or per head).
void rms_norm(const Tensor& x, std::span<const float> weight);
void rms_norm_given_mean(const Tensor& x, std::span<const float> weight, std::span<const float> mean_sq);
void layer_norm(const Tensor& x, std::span<const float> weight, std::span<const float> bias);
// Matrix `index` exists, x's features are its inputs, the bias has its outputs; the
// weight's [in, out] (input-major or not) as {in, out}.
std::pair<int64_t, int64_t> linear(const Tensor& x, const StoredWeight& w, int64_t index, std::span<const float> bias);
// x holds `heads` heads of `stride` features with the table's rotated ones at `offset`,
// one position per row.
void rope(const Tensor& x, int64_t heads, int64_t stride, int64_t offset, std::span<const int64_t> positions,
          const RopeTable& table);
void same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name, const char* b_name);
// sigmoid_gate's gate: x's shape, or one column of x's rows. True for the one column.
bool gate_per_row(const Tensor& gate, const Tensor& x, const char* op);
void columns(const Tensor& x, int64_t first, int64_t count);
void rows(const Tensor& x, int64_t first, int64_t count);
int64_t stack_rows(std::span<const Tensor> parts);  // the stacked rows
void gather_rows(const Tensor& x, std::span<const int64_t> indices);
void attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& kv, const AttentionParams& p);
void mla_attention(const Tensor& q, std::span<const int64_t> q_positions, const KvPages& cache,
                   const StoredWeight& kv_b, const MlaParams& p);
void dsa_topk(const Tensor& q, const Tensor& w, std::span<const int64_t> q_positions, const KvPages& keys,
              const IndexerParams& p);
void gated_delta_net(const Tensor& qkv, const Tensor& z, const Tensor& b, const Tensor& a,
                     const LinearAttentionWeights& w, const LinearAttentionParams& p, const LinearState& s);
void router(const Tensor& logits, const RouterParams& p, const char* op);
// route_sigmoid_group_topk's groups and correction bias too.
void group_router(const Tensor& logits, const RouterParams& p);
void moe_combine(const Tensor& out, const Tensor& expert_out, std::span<const int64_t> rows,
                 std::span<const float> weights);

}  // namespace dayzero::executor::checks
