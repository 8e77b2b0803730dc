// bench_simulate: how many plan evaluations per second the simulator sustains on
// one core, for DeepSeek-V3 on 64 x 8 H200 (512 devices). It sits inside the plan
// search loop, so the figure that matters is the warm one (collective costs cached
// per group, as they are after the first plans of a search).
//
//   build/bench/bench_simulate
#include <chrono>
#include <cstdio>

#include "bench_main.h"
#include "plan/plan_json.h"
#include "simulate/simulator.h"
#include "topology/device.h"

using namespace dayzero;

int run() {
  const auto model = model::load_model(std::string(DAYZERO_DATA_DIR) + "/models/DeepSeek-V3");
  const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  const auto cluster = topology::Cluster::load(std::string(DAYZERO_DATA_DIR) + "/clusters/h200-64x8.json", catalog);

  // Attention DP=512 (TP=1), experts EP=256 x TP=2, FP8 checkpoint, batch 8192.
  plan::Plan plan;
  plan.attention = {1, 512};
  plan.moe = {2, 256, 1};
  plan.workload.batch = 8192;
  plan.workload.input_len = 4096;
  plan.workload.output_len = 1024;
  plan.workload.routing_zipf_s = 0.6;
  plan::validate_plan(plan, model, cluster.num_devices(), "bench");

  auto t0 = std::chrono::steady_clock::now();
  simulate::Simulator sim(model, cluster);
  const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  t0 = std::chrono::steady_clock::now();
  const auto first = sim.simulate(plan, {false});
  const double cold_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Warm: the search varies batch and lengths; groups (and their cached costs) repeat.
  constexpr int kIters = 200'000;
  double checksum = 0;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kIters; ++i) {
    plan.workload.batch = 512 * (1 + i % 32);
    plan.workload.input_len = 1024 * (1 + i % 8);
    checksum += sim.simulate(plan, {false, false}).tpot_s;
  }
  const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("DeepSeek-V3 on %s (%u devices): plan tp1 x dp512 / experts tp2 x ep256\n", cluster.name().c_str(),
              cluster.num_devices());
  std::printf("simulator setup (model costs): %.3f ms; first plan (cold collective caches): %.3f ms\n", setup_s * 1e3,
              cold_s * 1e3);
  std::printf("first plan: fits %s, TTFT %.3f s, TPOT %.2f ms, %.0f tokens/s\n", first.fits ? "yes" : "no",
              first.ttft_s, first.tpot_s * 1e3, first.throughput_tokens_per_s);
  std::printf("%d warm evaluations in %.3f s: %.0f plans/s on one core (%.2f us each)  [checksum %.6f]\n", kIters,
              warm_s, kIters / warm_s, warm_s / kIters * 1e6, checksum);
  return 0;
}

int main() {
  return dayzero::bench::guarded_main("bench_simulate", [] { return run(); });
}
