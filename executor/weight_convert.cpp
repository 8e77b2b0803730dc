#include "executor/weight_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>

#include "core/arith.h"
#include "executor/forward_detail.h"
#include "executor/quantize.h"

namespace dayzero::executor {

namespace {
constexpr float kFp8Max = 448.0f;  // the largest finite E4M3 value

template <class T>
void put(std::vector<std::byte>& bytes, size_t index, T v) {
  std::memcpy(bytes.data() + index * sizeof(T), &v, sizeof(T));
}

StoredWeight owned_view(const StoredWeight& w, const OwnedWeight& out) {
  StoredWeight v = w;
  v.data = out.data;
  v.scales = out.scales;
  return v;
}
}  // namespace

void to_fp8_block(const StoredWeight& w, OwnedWeight& out, int64_t block) {
  const int64_t R = w.rows(), C = w.cols(), M = w.matrices();
  const int64_t sr = core::ceil_div(R, block), sc = core::ceil_div(C, block);
  out.data.assign(static_cast<size_t>(M * R * C), std::byte{0});
  out.scales.assign(static_cast<size_t>(M * sr * sc) * sizeof(float), std::byte{0});
  std::vector<float> rows(static_cast<size_t>(block * C)), amax(static_cast<size_t>(sc));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t b = 0; b < sr; ++b) {
      const int64_t r0 = b * block, r1 = std::min(R, r0 + block);
      std::fill(amax.begin(), amax.end(), 0.0f);
      for (int64_t r = r0; r < r1; ++r) {
        float* row = rows.data() + (r - r0) * C;
        dequantize_row(w, m, r, std::span<float>(row, static_cast<size_t>(C)));
        for (int64_t c = 0; c < C; ++c)
          amax[static_cast<size_t>(c / block)] = std::max(amax[static_cast<size_t>(c / block)], std::fabs(row[c]));
      }
      for (int64_t j = 0; j < sc; ++j) {  // amax becomes the block's scale
        float& scale = amax[static_cast<size_t>(j)];
        scale = scale > 0 ? scale / kFp8Max : 1.0f;
        put(out.scales, static_cast<size_t>((m * sr + b) * sc + j), scale);
      }
      for (int64_t r = r0; r < r1; ++r) {
        const float* row = rows.data() + (r - r0) * C;
        for (int64_t c = 0; c < C; ++c)
          out.data[static_cast<size_t>((m * R + r) * C + c)] =
              std::byte{float_to_fp8_e4m3(row[c] / amax[static_cast<size_t>(c / block)])};
      }
    }
  StoredWeight v = owned_view(w, out);
  v.kind = model::StorageKind::fp8_block;
  v.dtype = model::DType::f8_e4m3;
  v.block_rows = v.block_cols = block;
  out.view = v;
}

void to_bf16(const StoredWeight& w, OwnedWeight& out) {
  const int64_t R = w.rows(), C = w.cols(), M = w.matrices();
  out.data.assign(static_cast<size_t>(M * R * C) * sizeof(uint16_t), std::byte{0});
  out.scales.clear();
  std::vector<float> row(static_cast<size_t>(C));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t r = 0; r < R; ++r) {
      dequantize_row(w, m, r, row);
      for (int64_t c = 0; c < C; ++c) put(out.data, static_cast<size_t>((m * R + r) * C + c), float_to_bf16(row[c]));
    }
  StoredWeight v = owned_view(w, out);
  v.kind = model::StorageKind::plain;
  v.dtype = model::DType::bf16;
  out.view = v;
}

bool converts_to(model::WeightPrecision p) {
  return p == model::WeightPrecision::fp8 || p == model::WeightPrecision::bf16;
}

model::WeightPrecision planned_precision(const plan::PlanDtypes& d, model::Part part) {
  using model::Part;
  switch (part) {
    case Part::attention: return d.attention;
    case Part::dense_mlp:
    case Part::shared_experts: return d.dense_mlp;
    case Part::experts: return d.experts;
    case Part::embedding:
    case Part::head: return d.embedding;
    case Part::router:
    case Part::norm:
    case Part::mtp_proj: break;
  }
  return model::WeightPrecision::checkpoint;
}

std::map<std::string, model::WeightPrecision> planned_conversions(const model::Model& m, const plan::PlanDtypes& d,
                                                                  const std::vector<std::string>& needed) {
  const std::set<std::string> have(needed.begin(), needed.end());
  std::map<std::string, model::WeightPrecision> out;
  auto add_op = [&](const model::Op& op) {
    const bool matrix_op =
        op.kind == model::OpKind::gemm || op.kind == model::OpKind::expert_gemm || op.kind == model::OpKind::embedding;
    const model::WeightPrecision p = planned_precision(d, op.part);
    if (!matrix_op || op.weights.empty() || p == model::WeightPrecision::checkpoint) return;
    const std::string& pattern = op.weights.front();
    if (!detail::per_expert(pattern)) {
      if (have.count(pattern)) out[pattern] = p;
      return;
    }
    for (int64_t e = 0; e < op.experts; ++e)
      if (const std::string name = detail::substitute(pattern, e); have.count(name)) out[name] = p;
  };
  for (const auto& op : m.pre_ops) add_op(op);
  for (const auto& layer : m.layers)
    for (const auto& op : layer.ops) add_op(op);
  for (const auto& op : m.post_ops) add_op(op);
  return out;
}

}  // namespace dayzero::executor
