// calibrate --bench's fit (serve/serving_fit.h) against rows made from known figures,
// and the engine overheads table it writes (serve/engine_overheads.h).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "serve/engine_overheads.h"
#include "serve/serving_fit.h"

namespace dayzero::serve {
namespace {

using simulate::TimeFigure;
size_t fi(TimeFigure f) { return static_cast<size_t>(f); }

// A row whose parts are `gemm_memory` and `attention_compute` seconds at the start
// figures, `steps` engine steps in its TTFT and one per output token.
FitRow row(const std::string& device, Engine e, double ttft_gemm, double ttft_attn, double ttft_steps,
           double tpot_gemm) {
  FitRow r;
  r.device = device;
  r.model = "m";
  r.engine = e;
  r.ttft.figure_s[fi(TimeFigure::gemm_memory)] = ttft_gemm;
  r.ttft.figure_s[fi(TimeFigure::attention_compute)] = ttft_attn;
  r.ttft.steps = ttft_steps;
  r.tpot.figure_s[fi(TimeFigure::gemm_memory)] = tpot_gemm;
  r.tpot.steps = 1;
  return r;
}

// Rows measured exactly as the model says with known figures: weight streaming 1.25x
// slower than the start figures (gemm_memory 0.8 -> 0.64), attention 2x slower, 1 ms per
// vLLM step, 30 ms per request, 2 ms per request in flight and admission after 5 steps.
// The fit finds them, and a row's prediction is its measurement.
TEST(ServingFit, RecoversTheFiguresRowsWereMadeWith) {
  std::vector<FitRow> rows;
  for (int i = 1; i <= 12; ++i) {
    FitRow r = row("H100-SXM", Engine::vllm, 0.01 * i, 0.02 * (13 - i), 3 + i % 4, 0.002 + 0.001 * (i % 5));
    r.ttft.inflight = 4 * (1 + i % 3);
    r.tpot_s = 1.25 * r.tpot.figure_s[fi(TimeFigure::gemm_memory)] + 1e-3;
    r.ttft_s = 1.25 * r.ttft.figure_s[fi(TimeFigure::gemm_memory)] +
               2.0 * r.ttft.figure_s[fi(TimeFigure::attention_compute)] + 1e-3 * r.ttft.steps + 0.03 +
               2e-3 * r.ttft.inflight + 5 * r.tpot_s;
    rows.push_back(r);
  }
  const simulate::Efficiency start;
  const ServingFit fit = fit_serving(rows, start);
  const simulate::Efficiency e = fit.efficiency(fit.scales_for("H100-SXM"));
  EXPECT_NEAR(e.gemm_memory, start.gemm_memory / 1.25, 1e-4);
  EXPECT_NEAR(e.attention_compute, start.attention_compute / 2, 1e-4);
  EXPECT_NEAR(fit.engines.at(Engine::vllm).step_overhead_s, 1e-3, 1e-6);
  EXPECT_NEAR(fit.engines.at(Engine::vllm).request_overhead_s, 0.03, 1e-5);
  EXPECT_NEAR(fit.engines.at(Engine::vllm).request_overhead_per_inflight_s, 2e-3, 1e-6);
  EXPECT_NEAR(fit.engines.at(Engine::vllm).admission_delay_steps, 5, 1e-3);
  EXPECT_EQ(fit.engines.at(Engine::vllm).rows, 12);
  for (const auto& r : rows) {
    EXPECT_NEAR(fit.ttft_s(r) / r.ttft_s, 1, 1e-4);
    EXPECT_NEAR(fit.tpot_s(r) / r.tpot_s, 1, 1e-4);
  }
  // Figures without data stay at the start; a device without rows gets the shared ones.
  EXPECT_DOUBLE_EQ(e.gemm_compute, start.gemm_compute);
  EXPECT_EQ(&fit.scales_for("B200"), &fit.shared);
}

// Step 2b: two devices whose weights stream at different shares of the start figure
// (1.25x and 2x slower), and one engine's request overheads (40 ms, 1 ms per request in
// flight, admission after 3 steps). Step 1's single set of figures fits neither device,
// and overheads fitted beside it are off; refitted at each device's own figures they
// are the ones the rows were made with, and every row's prediction is its measurement.
// (No pull toward the shared figures here: prior_rows 0.)
TEST(ServingFit, RequestOverheadsAreRefittedAtEachDevicesOwnFigures) {
  std::vector<FitRow> rows;
  for (const auto& [device, slower] : {std::pair<std::string, double>{"H100-SXM", 1.25}, {"B200", 2.0}})
    for (int i = 1; i <= 12; ++i) {
      FitRow r = row(device, Engine::trtllm, 0.01 * i + 0.002 * (i % 3), 0, 2, 0.002 + 0.001 * (i % 5));
      r.overlap_scheduling = true;
      r.ttft.inflight = 2 * (1 + i % 4);
      r.tpot_s = slower * r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
      r.ttft_s = slower * r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + 0.04 + 1e-3 * r.ttft.inflight + 3 * r.tpot_s;
      rows.push_back(r);
    }
  FitOptions o;
  o.prior_rows = 0;
  const simulate::Efficiency start;
  const ServingFit fit = fit_serving(rows, start, o);
  EXPECT_NEAR(fit.efficiency(fit.scales_for("H100-SXM")).gemm_memory, start.gemm_memory / 1.25, 1e-4);
  EXPECT_NEAR(fit.efficiency(fit.scales_for("B200")).gemm_memory, start.gemm_memory / 2, 1e-4);
  const EngineOverheads& eo = fit.engines.at(Engine::trtllm);
  EXPECT_NEAR(eo.request_overhead_s, 0.04, 1e-4);
  EXPECT_NEAR(eo.request_overhead_per_inflight_s, 1e-3, 1e-5);
  EXPECT_NEAR(eo.admission_delay_steps, 3, 1e-2);
  for (const auto& r : rows) EXPECT_NEAR(fit.ttft_s(r) / r.ttft_s, 1, 1e-3) << r.device;
}

// A disaggregated run (FitRow::fit_ttft false) joins the TPOT pass only: rows of such
// runs whose TPOT says weights stream 1.25x slower and whose TTFT (two pools and a KV
// transfer, nothing the TTFT terms describe) is ten times anything the terms give leave
// the request overheads where the aggregated rows put them, and move the figures.
TEST(ServingFit, DisaggregatedRunsJoinTheTpotFitOnly) {
  std::vector<FitRow> rows;
  for (int i = 1; i <= 12; ++i) {
    FitRow r = row("B200", Engine::trtllm, 0.01 * i, 0, 2, 0.002 + 0.001 * (i % 5));
    r.tpot_s = 1.25 * r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
    r.ttft_s = 1.25 * r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + 0.02;
    rows.push_back(r);
  }
  for (int i = 1; i <= 12; ++i) {
    FitRow r = row("GB200", Engine::trtllm, 0.01 * i, 0, 2, 0.003 + 0.001 * (i % 3));
    r.tpot_s = 1.25 * r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
    r.ttft_s = 10.0;
    r.fit_ttft = false;
    r.prompt_tokens = 15000;
    rows.push_back(r);
  }
  rows[3].prompt_tokens = 8192;
  rows[4].prompt_tokens = 1024;
  const simulate::Efficiency start;
  const ServingFit fit = fit_serving(rows, start);
  EXPECT_NEAR(fit.engines.at(Engine::trtllm).request_overhead_s, 0.02, 1e-5);
  // The longest prompt whose TTFT was fitted: the disaggregated runs' 15,000 are not.
  EXPECT_EQ(fit.engines.at(Engine::trtllm).longest_prompt_tokens, 8192);
  EXPECT_EQ(fit.overheads("t").for_engine(Engine::trtllm).longest_prompt_tokens, 8192);
  EXPECT_NEAR(fit.efficiency(fit.scales_for("GB200")).gemm_memory, start.gemm_memory / 1.25, 1e-4);
  for (size_t i = 12; i < rows.size(); ++i) EXPECT_NEAR(fit.tpot_s(rows[i]) / rows[i].tpot_s, 1, 1e-4);
}

// Step 5: disaggregated runs whose TTFT is what the fitted terms give plus 180 ms (one
// handoff each) set the engine's handoff time to 180 ms, and only theirs: the request
// overhead stays where the aggregated rows put it, and each disaggregated row's
// prediction is its measurement. The absurd outlier (ten
// times the rest) moves the weighted fit's answer no more than a median would.
TEST(ServingFit, DisaggregatedRunsSetTheEnginesHandoffTime) {
  std::vector<FitRow> rows;
  for (int i = 1; i <= 12; ++i) {
    FitRow r = row("B200", Engine::sglang, 0.01 * i, 0, 2, 0.002 + 0.001 * (i % 5));
    r.tpot_s = r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
    r.ttft_s = r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + 0.02;
    rows.push_back(r);
  }
  for (int i = 1; i <= 12; ++i) {
    FitRow r = row("B200", Engine::sglang, 0.02 * i, 0, 2, 0.002 + 0.001 * (i % 5));
    r.tpot_s = r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
    r.ttft.kv_transfer_s = 0.001 * i;
    r.ttft.handoffs = 1;
    r.ttft_s = r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + r.ttft.kv_transfer_s + 0.02 + 0.18;
    r.fit_ttft = false;
    rows.push_back(r);
  }
  rows.back().ttft_s *= 10;
  const ServingFit fit = fit_serving(rows, simulate::Efficiency{});
  const EngineOverheads& eo = fit.engines.at(Engine::sglang);
  EXPECT_NEAR(eo.request_overhead_s, 0.02, 1e-5);
  EXPECT_NEAR(eo.handoff_s, 0.18, 1e-3);
  for (size_t i = 12; i + 1 < rows.size(); ++i) EXPECT_NEAR(fit.ttft_s(rows[i]) / rows[i].ttft_s, 1, 1e-3);
  EXPECT_NEAR(fit.ttft_s(rows[0]) / rows[0].ttft_s, 1, 1e-4);  // no handoff in an aggregated run
  EXPECT_DOUBLE_EQ(fit.overheads("t").for_engine(Engine::sglang).handoff_s, eo.handoff_s);
}

// The fit predicts a disaggregated row as the simulation serves it: the engine's
// admission delay twice (each pool's engine takes the request up), k x TPOT each time.
TEST(ServingFit, ADisaggregatedRowWaitsForTwoAdmissions) {
  ServingFit fit;
  fit.shared.fill(1.0);
  EngineOverheads eo;
  eo.admission_delay_steps = 3;
  eo.handoff_s = 0.1;
  fit.engines[Engine::sglang] = eo;
  FitRow agg = row("B200", Engine::sglang, 0.5, 0, 2, 0.01);
  FitRow dis = agg;
  dis.ttft.handoffs = 1;
  dis.fit_ttft = false;
  EXPECT_NEAR(fit.ttft_s(agg), 0.5 + 3 * 0.01, 1e-12);
  EXPECT_NEAR(fit.ttft_s(dis), 0.5 + 2 * 3 * 0.01 + 0.1, 1e-12);
}

// An engine measured only aggregated takes the handoff time of the engines whose
// disaggregated runs were measured (their mean), not 0: the router and the KV
// connector's setup are the same kind of work in every engine.
TEST(ServingFit, AnEngineWithoutDisaggregatedRunsTakesTheMeasuredEnginesHandoff) {
  std::vector<FitRow> rows;
  for (const auto& [engine, handoff_s] : {std::pair{Engine::sglang, 0.1}, {Engine::trtllm, 0.3}})
    for (int i = 1; i <= 12; ++i) {
      FitRow r = row("B200", engine, 0.02 * i, 0, 2, 0.002 + 0.001 * (i % 5));
      r.tpot_s = r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
      r.ttft.handoffs = 1;
      r.ttft_s = r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + handoff_s;
      r.fit_ttft = false;
      rows.push_back(r);
    }
  for (int i = 1; i <= 12; ++i) {
    FitRow r = row("B200", Engine::vllm, 0.01 * i, 0, 2, 0.002 + 0.001 * (i % 5));
    r.tpot_s = r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
    r.ttft_s = r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + 0.02;
    rows.push_back(r);
  }
  const ServingFit fit = fit_serving(rows, simulate::Efficiency{});
  EXPECT_NEAR(fit.engines.at(Engine::sglang).handoff_s, 0.1, 1e-3);
  EXPECT_NEAR(fit.engines.at(Engine::trtllm).handoff_s, 0.3, 1e-3);
  EXPECT_NEAR(fit.engines.at(Engine::vllm).handoff_s, 0.2, 2e-3);
  EXPECT_NEAR(fit.engines.at(Engine::vllm).request_overhead_s, 0.02, 1e-5);  // its own runs' still
}

// A device without runs takes the figures fitted to its architecture's measured
// devices (step 3): H200 those of H100's rows, GB200 those of B200's, while a device
// whose architecture was not measured (MI300X) takes the shared ones. A measured
// device's own figures do not depend on the architectures.
TEST(ServingFit, ADeviceWithoutRunsTakesItsArchitecturesFigures) {
  std::vector<FitRow> rows;
  for (const auto& [device, slow] : {std::pair{"H100-SXM", 1.25}, {"B200", 1.8}})
    for (int i = 1; i <= 60; ++i) {
      FitRow r = row(device, Engine::vllm, 0.01 * i, 0, 2, 0.002 + 0.001 * (i % 5));
      r.tpot_s = slow * r.tpot.figure_s[fi(TimeFigure::gemm_memory)] + 1e-3;
      r.ttft_s = slow * r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + 2e-3 + 0.03;
      rows.push_back(r);
    }
  FitOptions o;
  using topology::DeviceArchitecture;
  o.architectures = {{"H100-SXM", DeviceArchitecture::hopper}, {"H200-SXM", DeviceArchitecture::hopper},
                     {"B200", DeviceArchitecture::blackwell},  {"GB200", DeviceArchitecture::blackwell},
                     {"MI300X", DeviceArchitecture::cdna3},    {"A100-80GB-SXM", DeviceArchitecture::ampere}};
  for (const char* d : {"H100-SXM", "H200-SXM", "B200", "GB200", "A100-80GB-SXM"}) o.vendors[d] = "NVIDIA";
  o.vendors["MI300X"] = "AMD";
  const ServingFit fit = fit_serving(rows, simulate::Efficiency{}, o);
  const ServingFit plain = fit_serving(rows, simulate::Efficiency{});
  const size_t g = fi(TimeFigure::gemm_memory);
  const double shared = fit.shared[g];
  // The shared figure: between the two devices' 1.25 and 1.8 (a median more than a
  // mean, as the fit weighs |relative error|).
  EXPECT_GE(shared, 1.25 - 1e-6);
  EXPECT_LE(shared, 1.8 + 1e-6);
  // One device measured per architecture: the architecture's figure is that device's
  // (both pulled alike toward the shared one), away from the shared figure.
  EXPECT_NEAR(fit.scales_for("H200-SXM")[g], fit.scales_for("H100-SXM")[g], 1e-3);
  EXPECT_NEAR(fit.scales_for("GB200")[g], fit.scales_for("B200")[g], 1e-3);
  EXPECT_GT(fit.scales_for("GB200")[g] - fit.scales_for("H200-SXM")[g], 0.2);
  EXPECT_EQ(fit.scales_for("H200-SXM"), fit.architectures.at(DeviceArchitecture::hopper).scales);
  EXPECT_EQ(fit.architectures.at(DeviceArchitecture::hopper).device_rows.at("H100-SXM"), 60);
  EXPECT_EQ(&fit.scales_for("MI300X"), &fit.shared);
  EXPECT_EQ(&plain.scales_for("H200-SXM"), &plain.shared);
  EXPECT_EQ(fit.scales_for("H100-SXM"), plain.scales_for("H100-SXM"));
  EXPECT_EQ(fit.scales_for("B200"), plain.scales_for("B200"));
  // The table writes the architecture's figures for H200 with where they come from; the
  // shared ones for A100 (an NVIDIA GPU of an architecture no run measured) over the start
  // figures its entry held, its tile height kept; and keeps MI300X's entry (no AMD device
  // measured: the shared figures describe NVIDIA's kernels) and a device without an
  // architecture as they were.
  simulate::EfficiencyTable base;
  simulate::Efficiency a100_start, mi300x_start, host;
  a100_start.gemm_compute = 0.8;
  a100_start.tile_rows = 128;
  mi300x_start.gemm_compute = 0.45;
  host.gemm_compute = 0.5;
  host.tile_rows = 1;
  base.set_device("A100-80GB-SXM", a100_start, "start figures");
  base.set_device("MI300X", mi300x_start, "SemiAnalysis");
  base.set_device("cpu-host", host, "the host's");
  const simulate::EfficiencyTable t = fit.table(base, "test.");
  EXPECT_DOUBLE_EQ(t.for_device("A100-80GB-SXM").gemm_memory, fit.efficiency(fit.shared).gemm_memory);
  EXPECT_DOUBLE_EQ(t.for_device("A100-80GB-SXM").gemm_compute, fit.efficiency(fit.shared).gemm_compute);
  EXPECT_EQ(t.for_device("A100-80GB-SXM").tile_rows, 128);
  EXPECT_NE(t.source_for("A100-80GB-SXM").find("nor of its architecture (ampere); the shared figures"),
            std::string::npos)
      << t.source_for("A100-80GB-SXM");
  EXPECT_DOUBLE_EQ(t.for_device("MI300X").gemm_compute, 0.45);
  EXPECT_EQ(t.source_for("MI300X"), "SemiAnalysis");
  EXPECT_DOUBLE_EQ(t.for_device("cpu-host").gemm_compute, 0.5);
  EXPECT_EQ(t.source_for("cpu-host"), "the host's");
  EXPECT_DOUBLE_EQ(t.for_device("H200-SXM").gemm_memory, fit.efficiency(fit.scales_for("H200-SXM")).gemm_memory);
  EXPECT_NE(t.source_for("H200-SXM")
                .find("no measured runs; the figures fitted to the hopper devices' runs "
                      "(H100-SXM 60 runs)"),
            std::string::npos)
      << t.source_for("H200-SXM");
}

// Step 4: a device without runs whose copy bandwidth was measured takes gemm_memory =
// copy / mem_bw_Bps; a device of an architecture without runs takes its measured
// siblings' mean; a device whose architecture has runs and that was not measured keeps
// the architecture's figures; a measured device with runs keeps its own fit.
TEST(ServingFit, AMeasuredCopySetsTheStreamingShareOfADeviceWithoutRuns) {
  std::vector<FitRow> rows;
  for (int i = 1; i <= 60; ++i) {
    FitRow r = row("B200", Engine::vllm, 0.01 * i, 0, 2, 0.002 + 0.001 * (i % 5));
    r.tpot_s = 1.5 * r.tpot.figure_s[fi(TimeFigure::gemm_memory)] + 1e-3;
    r.ttft_s = 1.5 * r.ttft.figure_s[fi(TimeFigure::gemm_memory)] + 2e-3 + 0.03;
    rows.push_back(r);
  }
  using topology::DeviceArchitecture;
  FitOptions o;
  o.architectures = {{"H100-SXM", DeviceArchitecture::hopper},
                     {"H200-SXM", DeviceArchitecture::hopper},
                     {"B200", DeviceArchitecture::blackwell},
                     {"GB200", DeviceArchitecture::blackwell},
                     {"B300", DeviceArchitecture::blackwell}};
  o.measured_copy_fraction = {{"H200-SXM", 0.9}, {"B300", 0.7}, {"B200", 0.5}};
  const simulate::Efficiency start;
  const ServingFit fit = fit_serving(rows, start, o);
  const size_t g = fi(TimeFigure::gemm_memory);
  // Measured, no runs: 0.9 of the bandwidth, every other figure the shared one's
  // (hopper has no runs).
  EXPECT_NEAR(fit.efficiency(fit.scales_for("H200-SXM")).gemm_memory, 0.9, 1e-12);
  for (size_t f = 0; f < simulate::kTimeFigures; ++f) {
    if (f == g) continue;
    EXPECT_EQ(fit.scales_for("H200-SXM")[f], fit.shared[f]) << f;
  }
  // Hopper's other device: no runs, not measured, its architecture unmeasured by runs:
  // the measured sibling's fraction.
  EXPECT_NEAR(fit.efficiency(fit.scales_for("H100-SXM")).gemm_memory, 0.9, 1e-12);
  // B300 measured, no runs: its own 0.7 over blackwell's fitted figures.
  EXPECT_NEAR(fit.efficiency(fit.scales_for("B300")).gemm_memory, 0.7, 1e-12);
  EXPECT_EQ(fit.scales_for("B300")[fi(TimeFigure::kernel_overhead)],
            fit.architectures.at(DeviceArchitecture::blackwell).scales[fi(TimeFigure::kernel_overhead)]);
  // GB200: blackwell has runs, GB200 unmeasured: blackwell's figures, no copy.
  EXPECT_EQ(&fit.scales_for("GB200"), &fit.architectures.at(DeviceArchitecture::blackwell).scales);
  // B200 has runs: its fit (1.5x the start's time), not its measured 0.5.
  EXPECT_NEAR(fit.efficiency(fit.scales_for("B200")).gemm_memory, start.gemm_memory / 1.5, 0.01);
  // The table says where each came from.
  const simulate::EfficiencyTable t = fit.table(simulate::EfficiencyTable{}, "test.");
  EXPECT_NEAR(t.for_device("H100-SXM").gemm_memory, 0.9, 1e-12);
  EXPECT_NE(t.source_for("H200-SXM")
                .find("the shared figures, with gemm_memory 0.900, the copy bandwidth measured on "
                      "this device"),
            std::string::npos)
      << t.source_for("H200-SXM");
  EXPECT_NE(t.source_for("H100-SXM").find("measured on its architecture's devices"), std::string::npos)
      << t.source_for("H100-SXM");
  EXPECT_NE(t.source_for("B300").find("the figures fitted to the blackwell devices' runs (B200 60 runs), with "
                                      "gemm_memory 0.700"),
            std::string::npos)
      << t.source_for("B300");
}

// An efficiency never exceeds the peak: rows faster than the start figures at peak
// clamp the figure at 1, and the fit still explains what it can with the overheads.
TEST(ServingFit, EfficienciesStayWithinThePeak) {
  std::vector<FitRow> rows;
  for (int i = 1; i <= 6; ++i) {
    FitRow r = row("B200", Engine::trtllm, 0.01 * i, 0, 2, 0.001 * i);
    r.ttft_s = 0.5 * r.ttft.figure_s[fi(TimeFigure::gemm_memory)];  // would need gemm_memory 1.6
    r.tpot_s = 0.5 * r.tpot.figure_s[fi(TimeFigure::gemm_memory)];
    rows.push_back(r);
  }
  const ServingFit fit = fit_serving(rows, simulate::Efficiency{});
  EXPECT_DOUBLE_EQ(fit.efficiency(fit.shared).gemm_memory, 1.0);
  EXPECT_DOUBLE_EQ(fit.efficiency(fit.scales_for("B200")).gemm_memory, 1.0);
  EXPECT_GE(fit.engines.at(Engine::trtllm).step_overhead_s, 0);
  EXPECT_THROW(fit_serving({}, simulate::Efficiency{}), std::invalid_argument);
}

std::filesystem::path write(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("dayzero_overheads_" + name + ".json");
  std::ofstream(p) << text;
  return p;
}

TEST(EngineOverheads, RoundTripAndErrorsNameTheField) {
  EngineOverheadTable t;
  EngineOverheads o;
  o.step_overhead_s = 6e-4;
  o.request_overhead_s = 0.03;
  o.admission_delay_steps = 9.5;
  o.handoff_s = 0.045;
  o.rows = 411;
  o.longest_prompt_tokens = 8192;
  o.ttft_band = {-0.3, 0.4};
  o.tpot_band = {-0.1, 0.12};
  o.source = "test";
  t.set(Engine::vllm, o);
  const auto file = std::filesystem::temp_directory_path() / "dayzero_overheads_roundtrip.json";
  t.save(file, "test table");
  const EngineOverheadTable back = EngineOverheadTable::load(file);
  EXPECT_DOUBLE_EQ(back.for_engine(Engine::vllm).request_overhead_s, 0.03);
  EXPECT_DOUBLE_EQ(back.for_engine(Engine::vllm).tpot_band.p90, 0.12);
  EXPECT_EQ(back.for_engine(Engine::vllm).longest_prompt_tokens, 8192);
  EXPECT_EQ(back.for_engine(Engine::sglang).rows, 0);  // absent: zeros
  const EngineProfile p = back.apply(default_profile(Engine::vllm));
  EXPECT_DOUBLE_EQ(p.step_overhead_s, 6e-4);
  EXPECT_DOUBLE_EQ(p.admission_delay_steps, 9.5);
  EXPECT_DOUBLE_EQ(p.handoff_s, 0.045);

  const auto expect_error = [](const std::string& name, const std::string& text, const std::string& field) {
    try {
      (void)EngineOverheadTable::load(write(name, text));
      ADD_FAILURE() << name << ": no error";
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  expect_error("engine", R"({"engines": {"tgi": {"source": "x"}}})", "engines.tgi");
  expect_error("negative", R"({"engines": {"vllm": {"step_overhead_s": -1, "source": "x"}}})",
               "engines.vllm.step_overhead_s");
  expect_error("source", R"({"engines": {"vllm": {"step_overhead_s": 0.001}}})", "engines.vllm.source");
  expect_error("delay", R"({"engines": {"vllm": {"admission_delay_steps": 1000, "source": "x"}}})",
               "engines.vllm.admission_delay_steps");
  expect_error("handoff", R"({"engines": {"vllm": {"handoff_s": 2, "source": "x"}}})", "engines.vllm.handoff_s");
  expect_error("unknown", R"({"engines": {"vllm": {"source": "x", "speed": 1}}})", "engines.vllm.speed");
  expect_error("prompt", R"({"engines": {"vllm": {"source": "x", "longest_prompt_tokens": -1}}})",
               "engines.vllm.longest_prompt_tokens");
  expect_error("band", R"({"engines": {"vllm": {"source": "x", "ttft_error_band": {"p10": 0.5, "p90": 0.1}}}})",
               "ttft_error_band.p10");
}

}  // namespace
}  // namespace dayzero::serve
