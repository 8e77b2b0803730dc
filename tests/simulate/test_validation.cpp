// Validation and calibration against hand-computed cases. A test device with round
// figures: 10 GB/s memory, 100 GFLOP/s fp32; figures: GEMM 0.5 compute / 0.8 memory,
// attention 0.25 / 0.5, element-wise 0.4, 1 us per call, no tile rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "helpers.h"
#include "simulate/calibration.h"
#include "simulate/validation.h"

namespace dayzero::simulate {
namespace {

using testing::expect_close;

topology::DeviceSpec test_device() {
  topology::DeviceSpec d;
  d.name = "test-cpu";
  d.mem_bytes = 1e9;
  d.mem_bw_Bps = 10e9;
  d.peak_flops_per_s = {{topology::ComputeDtype::fp32, 100e9}};
  return d;
}

Efficiency test_eff() {
  Efficiency e;
  e.gemm_compute = 0.5;
  e.gemm_memory = 0.8;
  e.attention_compute = 0.25;
  e.attention_memory = 0.5;
  e.elementwise_memory = 0.4;
  e.kernel_overhead_s = 1e-6;
  e.tile_rows = 1;
  return e;
}

plan::OpMeasurement op(const std::string& phase, const std::string& kind, int64_t flops, int64_t bytes, int64_t calls,
                       double min_s, int rank = 0) {
  plan::OpMeasurement o;
  o.rank = rank;
  o.phase = phase;
  o.name = kind + "_op";
  o.kind = kind;
  o.variant = "f32";
  o.shape = {8, 64};
  o.calls = calls;
  o.iterations = 5;
  o.min_s = o.mean_s = min_s;
  o.flops = flops;
  o.bytes = bytes;
  return o;
}

TEST(SimulateValidation, PredictsOneOpWithTheSimulatorsRoofline) {
  const auto d = test_device();
  const auto e = test_eff();
  // GEMM, 2 MFLOP and 100 kB: compute 2e6 / (100e9 x 0.5) = 40 us > memory 1e5 / (10e9 x 0.8) = 12.5 us; + 1 us.
  const auto prefill_gemm = op("prefill", "gemm", 2'000'000, 100'000, 1, 0);
  expect_close(predict_op_s(prefill_gemm, d, e), 41e-6);
  EXPECT_EQ(bound_of(prefill_gemm, d, e), "compute");
  // GEMV, 20 kFLOP and 100 kB: memory 12.5 us > compute 0.4 us; + 1 us.
  const auto decode_gemm = op("decode", "gemm", 20'000, 100'000, 1, 0);
  expect_close(predict_op_s(decode_gemm, d, e), 13.5e-6);
  EXPECT_EQ(bound_of(decode_gemm, d, e), "memory");
  // expert_gemm and router are GEMMs too.
  expect_close(predict_op_s(op("decode", "expert_gemm", 20'000, 100'000, 1, 0), d, e), 13.5e-6);
  expect_close(predict_op_s(op("decode", "router", 20'000, 100'000, 1, 0), d, e), 13.5e-6);
  // Attention, 1 MFLOP and 20 kB: compute 1e6 / (100e9 x 0.25) = 40 us > memory 2e4 / (10e9 x 0.5) = 4 us; + 1 us.
  expect_close(predict_op_s(op("prefill", "attention", 1'000'000, 20'000, 1, 0), d, e), 41e-6);
  // Element-wise ops cost bytes only: 4e4 / (10e9 x 0.4) = 10 us (the FLOPs are ignored); + 1 us.
  for (const char* kind : {"norm", "rope", "activation", "moe_combine", "embedding"})
    expect_close(predict_op_s(op("prefill", kind, 999'999'999, 40'000, 1, 0), d, e), 11e-6);
  EXPECT_THROW((void)predict_op_s(op("prefill", "softmax", 1, 1, 1, 0), d, e), std::invalid_argument);
}

TEST(SimulateValidation, GemmRowsRoundUpToTilesAndDtypeFallsBack) {
  auto d = test_device();
  auto e = test_eff();
  e.tile_rows = 64;
  // 8 rows -> 64: 2e6 x 64 / 8 = 16 MFLOP at 100e9 x 0.5 = 320 us; + 1 us. Attention is not padded.
  expect_close(costed_flops(op("prefill", "gemm", 2'000'000, 100, 1, 0), e), 16e6);
  expect_close(predict_op_s(op("prefill", "gemm", 2'000'000, 100, 1, 0), d, e), 321e-6);
  expect_close(costed_flops(op("prefill", "attention", 2'000'000, 100, 1, 0), e), 2e6);
  // A bf16 figure is used when asked for; fp32 asked of a bf16-only device falls back to bf16.
  d.peak_flops_per_s = {{topology::ComputeDtype::fp32, 100e9}, {topology::ComputeDtype::bf16, 400e9}};
  e.tile_rows = 1;
  expect_close(predict_op_s(op("prefill", "gemm", 2'000'000, 100, 1, 0), d, e, topology::ComputeDtype::bf16),
               2e6 / (400e9 * 0.5) + 1e-6);
  d.peak_flops_per_s = {{topology::ComputeDtype::bf16, 400e9}};
  expect_close(predict_op_s(op("prefill", "gemm", 2'000'000, 100, 1, 0), d, e, topology::ComputeDtype::fp32),
               2e6 / (400e9 * 0.5) + 1e-6);
}

// A CUDA run's GEMMs of BF16 weights, and of block-scaled FP8 ones at more than 8 rows,
// multiply BF16 on the tensor cores; its other ops, and the CPU's, compute in float32.
// On a device of 100 GFLOP/s fp32 and 400 bf16, a BF16 GEMM of 2 MFLOP and 10 kB (8 x 64)
// takes 2e6 / (400e9 x 0.5) = 10 us (its bytes 1e4 / (10e9 x 0.8) = 1.25 us) + 1 us.
TEST(SimulateValidation, CudaGemmsOfBf16AndFp8WeightsArePricedAtTheBf16Peak) {
  auto d = test_device();
  d.peak_flops_per_s = {{topology::ComputeDtype::fp32, 100e9}, {topology::ComputeDtype::bf16, 400e9}};
  const auto e = test_eff();
  auto g = op("prefill", "gemm", 2'000'000, 10'000, 1, 11e-6);
  using topology::ComputeDtype;
  EXPECT_EQ(op_compute_dtype(g, "cuda"), ComputeDtype::fp32);  // variant f32
  g.variant = "bf16";
  EXPECT_EQ(op_compute_dtype(g, "cuda"), ComputeDtype::bf16);
  EXPECT_EQ(op_compute_dtype(g, "cpu"), ComputeDtype::fp32);
  g.variant = "fp8_block";
  EXPECT_EQ(op_compute_dtype(g, "cuda"), ComputeDtype::fp32);  // 8 rows: the FP8 GEMV
  g.shape = {9, 64};
  EXPECT_EQ(op_compute_dtype(g, "cuda"), ComputeDtype::bf16);
  g.shape = {9, 60};  // an inner size cuBLASLt's BF16 kernels do not take: float32
  EXPECT_EQ(op_compute_dtype(g, "cuda"), ComputeDtype::fp32);
  auto attention = op("prefill", "attention", 1'000'000, 20'000, 1, 41e-6);
  attention.variant = "bf16";
  EXPECT_EQ(op_compute_dtype(attention, "cuda"), ComputeDtype::fp32);

  plan::Measurements m;
  m.backend = "cuda";
  g.shape = {8, 64};
  g.variant = "bf16";
  auto g2 = g;  // twice the FLOPs: 20 us + 1 us
  g2.flops = 4'000'000;
  g2.min_s = g2.mean_s = 21e-6;
  m.ops = {g, g2};
  const ValidationReport r = validate(m, d, e);
  ASSERT_EQ(r.ops.size(), 2u);
  expect_close(r.ops[0].predicted_s, 11e-6);
  EXPECT_EQ(r.ops[0].bound, "compute");
  // Calibration against the BF16 peak: ideal 5 and 10 us, overhead min(11 - 5, 21 - 10) =
  // 6 us, GEMM compute (5 + 10) / (5 + 15) = 0.75. Against float32's (the CPU's) the ideal
  // times exceed the measured ones and the figure would sit at its ceiling.
  EXPECT_NEAR(fit_calibration(m, d, e).efficiency.gemm_compute, 0.75, 1e-9);
  m.backend = "cpu";
  expect_close(validate(m, d, e).ops[0].predicted_s, 2e6 / (100e9 * 0.5) + 1e-6);
  EXPECT_NEAR(fit_calibration(m, d, e).efficiency.gemm_compute, 1.0, 1e-12);
}

// A run whose FP8 block GEMMs ran as the engines' W8A8 (Measurements::fp8_block_gemm)
// prices them at the FP8 peak where the path takes their sizes (inner a multiple of
// 128, outer of 16): 16 rows x 128 in x 32 out = 131,072 FLOP at 800 GFLOP/s x 0.5 =
// 0.32768 us (its 100 bytes: 0.0125 us) + 1 us; at BF16's 400 GFLOP/s 0.65536 us. An
// outer size of 24, an inner of 64, or at most the GEMV's 8 rows keep the BF16 path's
// and the GEMV's dtypes; a run without W8A8, BF16.
TEST(SimulateValidation, W8a8RunsPriceTheirFp8GemmsAtTheFp8Peak) {
  auto d = test_device();
  d.peak_flops_per_s = {{topology::ComputeDtype::fp32, 100e9},
                        {topology::ComputeDtype::bf16, 400e9},
                        {topology::ComputeDtype::fp8, 800e9}};
  using topology::ComputeDtype;
  const auto w8a8 = plan::Fp8BlockGemm::w8a8;
  auto g = op("prefill", "expert_gemm", 2 * 16 * 128 * 32, 100, 1, 3e-6);
  g.variant = "fp8_block";
  g.shape = {16, 128};
  EXPECT_EQ(op_compute_dtype(g, "cuda", kCpuComputeDtype, w8a8), ComputeDtype::fp8);
  EXPECT_EQ(op_compute_dtype(g, "cuda", kCpuComputeDtype), ComputeDtype::bf16);
  EXPECT_EQ(op_compute_dtype(g, "cpu", kCpuComputeDtype, w8a8), ComputeDtype::fp32);
  auto odd = g;
  odd.flops = 2 * 16 * 128 * 24;
  EXPECT_EQ(op_compute_dtype(odd, "cuda", kCpuComputeDtype, w8a8), ComputeDtype::bf16);
  auto narrow = g;
  narrow.shape = {16, 64};
  narrow.flops = 2 * 16 * 64 * 32;
  EXPECT_EQ(op_compute_dtype(narrow, "cuda", kCpuComputeDtype, w8a8), ComputeDtype::bf16);
  auto gemv = g;
  gemv.shape = {8, 128};
  gemv.flops = 2 * 8 * 128 * 32;
  EXPECT_EQ(op_compute_dtype(gemv, "cuda", kCpuComputeDtype, w8a8), ComputeDtype::fp32);

  plan::Measurements m;
  m.backend = "cuda";
  m.fp8_block_gemm = w8a8;
  m.ops = {g};
  const ValidationReport r = validate(m, d, test_eff());
  ASSERT_EQ(r.ops.size(), 1u);
  expect_close(r.ops[0].predicted_s, 0.32768e-6 + 1e-6);
  EXPECT_EQ(r.ops[0].bound, "compute");
  m.fp8_block_gemm = plan::Fp8BlockGemm::bf16;
  expect_close(validate(m, d, test_eff()).ops[0].predicted_s, 0.65536e-6 + 1e-6);
}

plan::Measurements two_phase_run() {
  plan::Measurements m;
  m.ops = {op("prefill", "gemm", 2'000'000, 100'000, 2, 50e-6),  // predicted 41 us
           op("prefill", "norm", 0, 40'000, 2, 10e-6),           // predicted 11 us
           op("decode", "gemm", 20'000, 100'000, 4, 15e-6)};     // predicted 13.5 us
  m.prefill_s = 150e-6;
  m.decode_step_s = {40e-6, 30e-6};
  return m;
}

TEST(SimulateValidation, ReportPerOpPerKindAndEndToEnd) {
  const auto r = validate(two_phase_run(), test_device(), test_eff());
  ASSERT_EQ(r.ops.size(), 3u);
  expect_close(r.ops[0].predicted_total_s, 82e-6);
  expect_close(r.ops[0].measured_total_s, 100e-6);
  expect_close(r.ops[0].error_pct, 100 * (41.0 - 50) / 50);  // -18 %
  ASSERT_EQ(r.groups.size(), 3u);                            // prefill gemm, prefill norm, decode gemm
  EXPECT_EQ(r.groups[0].phase + "/" + r.groups[0].kind, "prefill/gemm");
  EXPECT_EQ(r.groups[1].phase + "/" + r.groups[1].kind, "prefill/norm");
  EXPECT_EQ(r.groups[2].phase + "/" + r.groups[2].kind, "decode/gemm");
  expect_close(r.groups[1].error_pct, 100 * (22.0 - 20) / 20);  // +10 %
  expect_close(r.groups[2].error_pct, 100 * (54.0 - 60) / 60);  // -10 %
  // Prefill: ops predicted 82 + 22 = 104 us against the measured step of 150 us
  // (the measured ops alone: 100 + 20 = 120 us).
  expect_close(r.prefill.predicted_s, 104e-6);
  expect_close(r.prefill.measured_ops_s, 120e-6);
  expect_close(r.prefill.error_pct, 100 * (104.0 - 150) / 150);
  // Decode, per step over 2 steps: 54 / 2 = 27 us against the mean step 35 us
  // (ops alone 60 / 2 = 30 us).
  EXPECT_EQ(r.decode.steps, 2);
  expect_close(r.decode.predicted_s, 27e-6);
  expect_close(r.decode.measured_ops_s, 30e-6);
  expect_close(r.decode.measured_s, 35e-6);
  expect_close(r.decode.error_pct, 100 * (27.0 - 35) / 35);
  EXPECT_DOUBLE_EQ(r.collectives_s, 0.0);
}

TEST(SimulateValidation, SlowestRankSetsTheStepAndCollectivesAreApart) {
  plan::Measurements m = two_phase_run();
  m.ops.push_back(op("prefill", "gemm", 2'000'000, 100'000, 3, 45e-6, 1));  // rank 1: 3 x 41 = 123 us > 104 us
  plan::CollectiveMeasurement c;
  c.collective = core::Collective::all_reduce;
  c.ranks = 2;
  c.calls = 4;
  c.min_s = 5e-6;  // rank 0: 20 us
  m.collectives.push_back(c);
  c.rank = 1;
  c.calls = 10;
  c.min_s = 3e-6;  // rank 1: 30 us
  m.collectives.push_back(c);
  const auto r = validate(m, test_device(), test_eff());
  EXPECT_EQ(r.prefill.rank, 1);
  expect_close(r.prefill.predicted_s, 123e-6);
  expect_close(r.prefill.measured_ops_s, 135e-6);
  expect_close(r.collectives_s, 30e-6);
  EXPECT_EQ(r.decode.rank, 0);
  // A run without decode steps has no decode figure.
  m.decode_step_s.clear();
  EXPECT_FALSE(validate(m, test_device(), test_eff()).decode.measured);
  // An unknown kind names the op.
  m.ops[1].kind = "softmax";
  try {
    (void)validate(m, test_device(), test_eff());
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ops[1].kind"), std::string::npos) << e.what();
  }
}

// Ideal times at peak (100 GFLOP/s, 10 GB/s), t = min_s per call:
//   A gemm      1e7 FLOP, 1e5 B: compute 100 us, memory 10 us;  t 201 us, 1 call
//   B gemm      1e4 FLOP, 1e6 B: compute 0.1 us, memory 100 us; t 126 us, 2 calls
//   C1 norm              1e4 B:                   memory 1 us;   t 3 us,   4 calls
//   C2 rope              1e5 B:                   memory 10 us;  t 22 us,  1 call
//   D attention 1e4 FLOP, 1e5 B: compute 0.1 us, memory 10 us;  t 21 us,  1 call
// Overhead = min(t - ideal) = min(101, 26, 2, 12, 11) us = 2 us (C1).
// With the start figures A is compute-bound (200 us vs 12.5), B memory-bound,
// D memory-bound (0.4 us vs 20). Figures from the totals less 2 us per call:
//   gemm_compute 100 / 199; gemm_memory 2 x 100 / (2 x 124);
//   elementwise_memory (4 x 1 + 10) / (4 x 1 + 20) = 14 / 24; attention_memory 10 / 19;
//   attention_compute has no op: stays 0.25. No op changes group: one round.
plan::Measurements calibration_run() {
  plan::Measurements m;
  m.ops = {op("prefill", "gemm", 10'000'000, 100'000, 1, 201e-6), op("decode", "gemm", 10'000, 1'000'000, 2, 126e-6),
           op("decode", "norm", 0, 10'000, 4, 3e-6), op("prefill", "rope", 0, 100'000, 1, 22e-6),
           op("decode", "attention", 10'000, 100'000, 1, 21e-6)};
  m.prefill_s = 300e-6;
  m.decode_step_s = {400e-6};
  return m;
}

TEST(SimulateCalibration, FitsEachGroupToItsMeasuredTotal) {
  const Calibration c = fit_calibration(calibration_run(), test_device(), test_eff());
  const Efficiency& e = c.efficiency;
  expect_close(e.kernel_overhead_s, 2e-6);
  expect_close(e.gemm_compute, 100.0 / 199);
  expect_close(e.gemm_memory, 100.0 / 124);
  expect_close(e.elementwise_memory, 14.0 / 24);
  expect_close(e.attention_memory, 10.0 / 19);
  EXPECT_DOUBLE_EQ(e.attention_compute, 0.25);
  EXPECT_EQ(e.tile_rows, 1);
  EXPECT_EQ(c.rounds, 1);
  EXPECT_EQ(c.ops, 5);
  ASSERT_EQ(c.figures.size(), 6u);
  EXPECT_EQ(c.figures[0].name, "kernel_overhead_s");
  EXPECT_EQ(c.figures[3].name, "attention_compute");
  EXPECT_EQ(c.figures[3].ops, 0);
  EXPECT_EQ(c.figures[5].name, "elementwise_memory");
  EXPECT_EQ(c.figures[5].ops, 2);
  expect_close(c.figures[5].ideal_s, 14e-6);
  expect_close(c.figures[5].measured_s, 24e-6);
  // Each group's predicted total now equals its measured total: A alone is
  // gemm_compute, so A's prediction is its measurement.
  const auto r = validate(calibration_run(), test_device(), e);
  expect_close(r.ops[0].predicted_s, 201e-6);
  expect_close(r.ops[4].predicted_s, 21e-6);
  expect_close(r.ops[2].predicted_total_s + r.ops[3].predicted_total_s, 4 * 3e-6 + 22e-6);
}

TEST(SimulateCalibration, ClampsWhatIsFasterThanPeakAndNeedsTimings) {
  plan::Measurements m;
  // 1 MB in 50 us is 20 GB/s, twice the device's 10 GB/s: overhead 0 (clamped), gemm_memory 1 (clamped).
  m.ops = {op("decode", "gemm", 1'000, 1'000'000, 1, 50e-6)};
  const Calibration c = fit_calibration(m, test_device(), test_eff());
  EXPECT_DOUBLE_EQ(c.efficiency.kernel_overhead_s, 0.0);
  EXPECT_TRUE(c.figures[0].clamped);
  EXPECT_DOUBLE_EQ(c.efficiency.gemm_memory, 1.0);
  EXPECT_TRUE(c.figures[2].clamped);
  m.ops[0].min_s = 0;  // a run without per-op timing
  EXPECT_THROW((void)calibrate(m, test_device(), test_eff()), std::invalid_argument);
}

TEST(SimulateCalibration, WritesAnEfficiencyTableTheSimulatorLoads) {
  const Calibration c = fit_calibration(calibration_run(), test_device(), test_eff());
  const auto file = std::filesystem::temp_directory_path() / "dayzero_test_calibration.json";
  Efficiency table_default;  // the shipped defaults
  save_calibration(file, c, "dayzero calibrate run.json", table_default, "shipped default");
  const EfficiencyTable t = EfficiencyTable::load(file);
  expect_close(t.for_device("test-cpu").gemm_memory, 100.0 / 124);
  expect_close(t.for_device("test-cpu").kernel_overhead_s, 2e-6);
  EXPECT_EQ(t.source_for("test-cpu"), "dayzero calibrate run.json");
  EXPECT_DOUBLE_EQ(t.for_device("H100-SXM").gemm_compute, table_default.gemm_compute);
  EXPECT_EQ(t.source_for("H100-SXM"), "shipped default");
  std::filesystem::remove(file);
}

// Issue 16 (found while fuzzing): tile_rows is kept in an int, and 2^32 + 64 was read as
// 64. It is now read no larger than an int.
TEST(EfficiencyTable, TileRowsIsNotNarrowedSilently) {
  nlohmann::json j = {{"default", {{"tile_rows", (int64_t{1} << 32) + 64}, {"source", "s"}}}};
  EXPECT_THROW((void)EfficiencyTable::from_json(j, "e.json"), core::InputError);
  j["default"]["tile_rows"] = 128;
  EXPECT_EQ(EfficiencyTable::from_json(j, "e.json").default_efficiency().tile_rows, 128);
}

}  // namespace
}  // namespace dayzero::simulate
