// Weight precisions in the cost model: the GEMM compute dtype each runs at, the
// roofline at that dtype's peak, the bytes a decode streams, and plans a device
// cannot run. Efficiencies are the defaults (simulate/efficiency.h): GEMM 0.70 of
// peak compute, 0.80 of HBM bandwidth. H100 SXM (catalog): 989.5 TFLOP/s BF16,
// 1,979 TOPS INT8 and 1,979 TFLOP/s FP8 dense, 3.35 TB/s; B200: 9 PFLOP/s FP4 dense,
// 8 TB/s.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "helpers.h"
#include "simulate/precisions.h"
#include "simulate/roofline.h"

namespace dayzero::simulate {
namespace {

using model::WeightPrecision;
using testing::expect_close;
using testing::load_cluster;
using testing::load_model;
using testing::plan;
using testing::run;
using topology::ComputeDtype;

TEST(Precisions, GemmComputeDtypePerPrecision) {
  const auto bf16_ckpt = load_model("Llama-3.1-8B");
  const auto fp8_ckpt = load_model("DeepSeek-V3");
  EXPECT_EQ(gemm_dtype(WeightPrecision::bf16, bf16_ckpt.config), ComputeDtype::bf16);
  EXPECT_EQ(gemm_dtype(WeightPrecision::fp8, bf16_ckpt.config), ComputeDtype::fp8);
  EXPECT_EQ(gemm_dtype(WeightPrecision::int8, bf16_ckpt.config), ComputeDtype::int8);        // W8A8
  EXPECT_EQ(gemm_dtype(WeightPrecision::int8_w8a16, bf16_ckpt.config), ComputeDtype::bf16);  // weight-only
  EXPECT_EQ(gemm_dtype(WeightPrecision::int4, bf16_ckpt.config), ComputeDtype::bf16);        // weight-only
  EXPECT_EQ(gemm_dtype(WeightPrecision::nvfp4, bf16_ckpt.config), ComputeDtype::fp4);        // W4A4
  EXPECT_EQ(gemm_dtype(WeightPrecision::checkpoint, bf16_ckpt.config), ComputeDtype::bf16);
  EXPECT_EQ(gemm_dtype(WeightPrecision::checkpoint, fp8_ckpt.config), ComputeDtype::fp8);
  // The simulator's per-precision table is the same function.
  const auto h100 = load_cluster("h100x1");
  Simulator sim(bf16_ckpt, h100);
  for (WeightPrecision p : model::kAllPrecisions)
    EXPECT_EQ(sim.costs().gemm_dtype[static_cast<size_t>(p)], gemm_dtype(p, bf16_ckpt.config));
  EXPECT_EQ(required_compute_dtype(WeightPrecision::int8), ComputeDtype::int8);
  EXPECT_EQ(required_compute_dtype(WeightPrecision::nvfp4), ComputeDtype::fp4);
  EXPECT_FALSE(required_compute_dtype(WeightPrecision::int8_w8a16));
  EXPECT_FALSE(required_compute_dtype(WeightPrecision::fp8));  // costed at BF16 without FP8 (Roofline::peak)
}

// One 8192-token x 4096 x 4096 GEMM on an H100: 2 x 8192 x 4096 x 4096 =
// 274,877,906,944 FLOPs. At the BF16 peak: 2.749e11 / (989.5e12 x 0.7) = 396.86 us;
// at the INT8 peak: / (1979e12 x 0.7) = 198.43 us. Its INT8 weights (16,793,600 B,
// scales included) take 16,793,600 / (3.35e12 x 0.8) = 6.27 us: compute-bound.
TEST(Precisions, RooflineRunsInt8GemmsAtTheInt8Peak) {
  const auto c = load_cluster("h100x1");
  const Efficiency eff;
  const Roofline rf{c.device_spec(), eff};
  const double flops = 2.0 * 8192 * 4096 * 4096;
  const double int8_bytes = 4096.0 * 4096 + 4096 * 4;
  expect_close(rf.gemm(flops, 4096.0 * 4096 * 2, ComputeDtype::bf16), 274'877'906'944.0 / (989.5e12 * 0.7));
  expect_close(rf.gemm(flops, int8_bytes, ComputeDtype::int8), 274'877'906'944.0 / (1979e12 * 0.7));
  EXPECT_NEAR(rf.gemm(flops, int8_bytes, ComputeDtype::int8) * 1e6, 198.43, 0.01);
}

// The same in a whole prefill: Llama-3.1-8B, 1,000 prompt tokens -> 1,024 rows,
// 2 x 6,979,321,856 FLOPs per row in the layers' GEMMs. BF16: 20.64 ms; W8A8 INT8 at
// 1,979 TOPS: 2 x 6,979,321,856 x 1,024 / (1979e12 x 0.7) = 10.32 ms; W8A16 stays at
// the BF16 peak (its weights, 6.98 GB, take 2.6 ms to read: compute-bound still).
TEST(Precisions, Int8PrefillAtInt8PeakW8a16AtBf16Peak) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x1");
  plan::Plan p = plan(1);
  const double flops = 2.0 * 6'979'321'856 * 1024;
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::int8;
  expect_close(run(m, c, p).prefill.by_kind_s.at(CostKind::gemm), flops / (1979e12 * 0.7));
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::int8_w8a16;
  expect_close(run(m, c, p).prefill.by_kind_s.at(CostKind::gemm), flops / (989.5e12 * 0.7));
}

// W8A16 decode of Llama-3.1-8B on one H100 streams half the weight bytes of BF16.
// Layer GEMM weights: 6,979,321,856 parameters in 32 x 7 matrices whose output rows
// add up to 32 x (4096 + 1024 + 1024 + 4096 + 14336 + 14336 + 4096) = 1,376,256.
//   BF16:  2 x 6,979,321,856                      = 13,958,643,712 B
//   W8A16: 6,979,321,856 + 1,376,256 x 2 (BF16)   =  6,982,074,368 B (0.5002 x)
// One token is weight-streaming: 6,982,074,368 / (3.35e12 x 0.8) = 2.605 ms, above its
// 64 padded rows of BF16 math (2 x 6.98e9 x 64 / (989.5e12 x 0.7) = 1.29 ms).
TEST(Precisions, W8a16DecodeStreamsHalfTheBf16Bytes) {
  const auto m = load_model("Llama-3.1-8B");
  const auto c = load_cluster("h100x1");
  plan::Plan p = plan(1);
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::bf16;
  const auto bf16 = run(m, c, p);
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::int8_w8a16;
  const auto w8a16 = run(m, c, p);
  expect_close(bf16.decode.by_kind_s.at(CostKind::gemm), 13'958'643'712.0 / (3.35e12 * 0.8));
  expect_close(w8a16.decode.by_kind_s.at(CostKind::gemm), 6'982'074'368.0 / (3.35e12 * 0.8));
  EXPECT_NEAR(w8a16.decode.by_kind_s.at(CostKind::gemm) / bf16.decode.by_kind_s.at(CostKind::gemm), 0.5, 0.001);
  // Resident weights: the layers at W8A16 + embedding and head (BF16, 1,050,673,152 B
  // each) + norms (532,480 B).
  EXPECT_EQ(w8a16.ranks[0].weights_bytes, 6'982'074'368 + 2 * 1'050'673'152 + 532'480);
  EXPECT_EQ(bf16.ranks[0].weights_bytes, 16'060'522'496);
}

// W8A8 INT8 holds one byte per weight + an F32 scale per output row:
// 6,979,321,856 + 1,376,256 x 4 = 6,984,826,880 B of layer weights.
// NVFP4 on a B200: 6,979,321,856 x (0.5 + 1/16) = 3,925,868,544 B + 4 B per matrix
// (224 matrices: 896 B) = 3,925,869,440 B, and its prefill GEMMs run at the FP4 peak:
// 2 x 6,979,321,856 x 1,024 / (9e15 x 0.7) = 2.269 ms (its weights: 0.61 ms to read).
TEST(Precisions, Int8AndNvfp4WeightBytesAndNvfp4AtTheFp4Peak) {
  const auto m = load_model("Llama-3.1-8B");
  plan::Plan p = plan(1);
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::int8;
  const auto int8 = run(m, load_cluster("h100x1"), p);
  EXPECT_EQ(int8.ranks[0].weights_bytes, 6'984'826'880 + 2 * 1'050'673'152 + 532'480);

  const auto b200 = load_cluster("hgx-b200");
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::nvfp4;
  EXPECT_NO_THROW(validate_plan_precisions(p, b200.device_spec(), "b200-plan.json"));
  const auto nvfp4 = run(m, b200, p);
  EXPECT_EQ(nvfp4.ranks[0].weights_bytes, 3'925'869'440 + 2 * 1'050'673'152 + 532'480);
  expect_close(nvfp4.prefill.by_kind_s.at(CostKind::gemm), 2.0 * 6'979'321'856 * 1024 / (9e15 * 0.7));
  expect_close(nvfp4.decode.by_kind_s.at(CostKind::gemm), 3'925'869'440.0 / (8e12 * 0.8));
}

std::string precision_error(const plan::Plan& p, const topology::Cluster& c) {
  try {
    validate_plan_precisions(p, c.device_spec(), "plan.json");
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

// NVFP4 (W4A4) needs FP4 tensor cores: an H100 has none, so the plan is refused,
// naming the field, the precision and the device; INT8 (W8A8) needs INT8 ones, which
// the CPU host lacks. The weight-only precisions run anywhere.
TEST(Precisions, PlansTheDeviceCannotRunAreRefused) {
  const auto h100 = load_cluster("h100x1");
  plan::Plan p = plan(1);
  p.dtypes.experts = WeightPrecision::nvfp4;
  const std::string e = precision_error(p, h100);
  EXPECT_NE(e.find("plan.json: field 'dtypes.experts' = nvfp4: needs fp4 tensor cores"), std::string::npos) << e;
  EXPECT_NE(e.find("the device H100-SXM has none"), std::string::npos) << e;
  EXPECT_NE(e.find("int4 (W4A16)"), std::string::npos) << e;  // what to plan instead
  p.dtypes.experts = WeightPrecision::checkpoint;
  p.dtypes.attention = WeightPrecision::nvfp4;
  EXPECT_NE(precision_error(p, h100).find("field 'dtypes.attention' = nvfp4"), std::string::npos);

  p = plan(1);
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::int8;
  EXPECT_EQ(precision_error(p, h100), "");
  const auto cpu = load_cluster("cpu-host-1x4");
  EXPECT_NE(precision_error(p, cpu).find("field 'dtypes.attention' = int8: needs int8 tensor cores"),
            std::string::npos);
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::int8_w8a16;
  EXPECT_EQ(precision_error(p, cpu), "");
  p.dtypes.attention = p.dtypes.dense_mlp = WeightPrecision::fp8;
  EXPECT_EQ(precision_error(p, cpu), "");  // fp8 keeps its weight-only fallback
}

}  // namespace
}  // namespace dayzero::simulate
