// Weights converted to the plan's precision when a run loads them
// (executor/weight_convert.h), against hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "executor/quantize.h"
#include "executor/weight_convert.h"
#include "helpers.h"
#include "model/model.h"

namespace dayzero::executor {
namespace {

using testing::f32_weight;

float scale_at(const OwnedWeight& o, size_t i) {
  float s;
  std::memcpy(&s, o.scales.data() + i * sizeof(float), sizeof s);
  return s;
}

TEST(WeightConvert, Fp8BlockScalesAreEachBlocksAmaxOver448) {
  // [3, 200]: column blocks [0, 128) and [128, 200); the second block is all zero.
  Tensor t({3, 200});
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 128; ++c) t.row(r)[c] = static_cast<float>((r + 1) * (c + 1)) / 100.0f - 1.0f;
  const StoredWeight w = f32_weight(t);
  OwnedWeight o;
  to_fp8_block(w, o);
  ASSERT_EQ(o.view.kind, model::StorageKind::fp8_block);
  ASSERT_EQ(o.data.size(), 600u);
  ASSERT_EQ(o.scales.size(), 2 * sizeof(float));  // ceil(3/128) x ceil(200/128) blocks
  // The first block's largest |value| is row 2, column 127: 3 * 128 / 100 - 1 = 2.84.
  EXPECT_FLOAT_EQ(scale_at(o, 0), 2.84f / 448.0f);
  EXPECT_EQ(scale_at(o, 1), 1.0f);  // an all-zero block keeps scale 1
  const Tensor back = dequantize(o.view);
  EXPECT_FLOAT_EQ(back.row(2)[127], 2.84f);  // amax is 448 x scale: exact
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 200; ++c) {
      const float x = t.row(r)[c], y = back.row(r)[c];
      // E4M3 keeps 3 mantissa bits: within half an ulp, 1/16 of the value; values below
      // the smallest normal (2^-6 x scale) within half the subnormal step (2^-10 x scale).
      EXPECT_LE(std::fabs(y - x), std::max(std::fabs(x) / 16, std::ldexp(2.84f / 448.0f, -10)) * 1.0001f)
          << r << "," << c;
    }
  EXPECT_EQ(o.bytes(), 600 + 8);
}

TEST(WeightConvert, Bf16IsTheRoundedValue) {
  const Tensor t({2, 3}, {1.0f, 3.14159f, -2.71828f, 1e-3f, 65504.0f, 0.0f});
  OwnedWeight o;
  to_bf16(f32_weight(t), o);
  EXPECT_EQ(o.view.dtype, model::DType::bf16);
  EXPECT_EQ(o.bytes(), 12);
  std::vector<float> want(t.data.begin(), t.data.end());
  round_to_storage(want, plan::KvDtype::bf16);
  EXPECT_EQ(dequantize(o.view).data, want);
}

TEST(WeightConvert, PlannedConversionsFollowTheParts) {
  const model::Model m = model::load_model(std::string(DAYZERO_FIXTURES_DIR) + "/tiny/llama");
  std::vector<std::string> all;
  for (const auto& w : m.weights) all.push_back(w.name);
  plan::PlanDtypes d;
  EXPECT_TRUE(planned_conversions(m, d, all).empty());  // checkpoint everywhere
  d.attention = model::WeightPrecision::fp8;
  d.embedding = model::WeightPrecision::bf16;
  const auto conv = planned_conversions(m, d, all);
  EXPECT_EQ(conv.at("model.layers.0.self_attn.q_proj.weight"), model::WeightPrecision::fp8);
  EXPECT_EQ(conv.at("model.layers.1.self_attn.o_proj.weight"), model::WeightPrecision::fp8);
  EXPECT_EQ(conv.at("model.embed_tokens.weight"), model::WeightPrecision::bf16);
  EXPECT_EQ(conv.count("model.layers.0.mlp.up_proj.weight"), 0u);      // dense_mlp: checkpoint
  EXPECT_EQ(conv.count("model.layers.0.input_layernorm.weight"), 0u);  // norms are never converted
  EXPECT_TRUE(converts_to(model::WeightPrecision::fp8));
  EXPECT_FALSE(converts_to(model::WeightPrecision::int8));
  EXPECT_EQ(planned_precision(d, model::Part::router), model::WeightPrecision::checkpoint);
}

}  // namespace
}  // namespace dayzero::executor
