// bench_serve: the request-level serving simulation's speed, on one core: 10,000
// requests of DeepSeek-V3 (2,048 + 512 tokens, 256 in flight) on 2 x 8 H200 under
// each engine's scheduler, for a plan with many attention-DP replicas (EP 16 x DP 16:
// 625 requests per replica simulated) and one with few (TP 8 x DP 2 with EP 16:
// 5,000 per replica), and a request rate instead of a concurrency.
//
//   build/bench/bench_serve
#include <chrono>
#include <cstdio>

#include "bench_main.h"
#include "plan/plan_json.h"
#include "serve/simulation.h"
#include "topology/device.h"

using namespace dayzero;

int run() {
  const auto model = model::load_model(std::string(DAYZERO_DATA_DIR) + "/models/DeepSeek-V3");
  const auto catalog = topology::DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  const auto cluster = topology::Cluster::load(std::string(DAYZERO_DATA_DIR) + "/clusters/h200-2x8.json", catalog);
  const auto eff = simulate::EfficiencyTable::load_builtin(DAYZERO_DATA_DIR).for_device(cluster.device_spec().name);
  simulate::Simulator sim(model, cluster, eff);

  struct Layout {
    const char* name;
    int tp, dp;
  };
  for (const Layout& l : {Layout{"tp1 dp16 | ep16", 1, 16}, Layout{"tp8 dp2 | ep16", 8, 2}}) {
    plan::Plan p;
    p.attention = {l.tp, l.dp};
    p.moe = {1, 16, 1};
    p.workload = {256, 2048, 512, 0, 0.5, {}, 0};
    plan::validate_plan(p, model, cluster.num_devices(), "bench");
    for (serve::Engine e : serve::kAllEngines)
      for (bool rate : {false, true}) {
        serve::ServeOptions o;
        o.engine = serve::default_profile(e, {cluster.device_spec().mem_bytes, false, l.tp, 1, true});
        o.client.shape = {2048, 512, 0};
        o.client.requests = 10'000;
        if (rate) {
          o.client.kind = serve::ClientKind::open_loop;
          o.client.rate_per_s = 20;
        } else {
          o.client.concurrency = 256;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const serve::ServeResult r = serve::simulate_serving(sim, p, o);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf(
            "%-16s %-7s %-14s 10,000 requests (%lld per replica, %lld steps) in %.3f s: TTFT %.0f ms, "
            "TPOT %.1f ms, %.0f output tokens/s\n",
            l.name, std::string(serve::engine_name(e)).c_str(), rate ? "20 req/s" : "256 in flight",
            static_cast<long long>(r.requests), static_cast<long long>(r.steps), wall, r.ttft_s.mean * 1e3,
            r.tpot_s.mean * 1e3, r.output_tokens_per_s);
      }
  }
  return 0;
}

int main() {
  return dayzero::bench::guarded_main("bench_serve", [] { return run(); });
}
