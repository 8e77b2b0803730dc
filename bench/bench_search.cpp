// bench_search: the whole plan space of the 3T-parameter MoE on 64 x 8 H200
// (scenarios/3t-moe-h200-64x8.json): plans evaluated, plans per second, wall time,
// on every core of this machine and on one.
//
//   build/bench/bench_search [SCENARIO]
#include <cstdio>
#include <thread>

#include "search/search.h"
#include "search/session.h"

using namespace dayzero;

int main(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : std::string(DAYZERO_DATA_DIR) + "/3t-moe-h200-64x8.json";
  const search::Session session = search::load_session(file, DAYZERO_DATA_DIR);
  const auto& s = session.scenario;
  const auto& m = session.model;
  const auto& c = session.cluster;
  const auto& eff = session.efficiency;
  std::printf("scenario %s: %.2f T params on %u x %s\n", s.name.c_str(), static_cast<double>(m.params_total()) / 1e12,
              c.num_devices(), c.device_spec().name.c_str());
  for (int threads : {static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), 1}) {
    search::SearchOptions o;
    o.threads = threads;
    const auto r = search::run_search(s, m, c, eff, o);
    size_t feasible = 0;
    for (const auto& e : r.all) feasible += e.meets_sla ? 1 : 0;
    std::printf(
        "%d thread(s): %.3f s; space %lld plans in %lld layouts; %lld costed, pruned %lld (memory %lld, ttft %lld, "
        "tpot %lld); %.3g plans considered/s, %.3g costed/s; %zu feasible, %zu on the Pareto front\n",
        r.threads, r.wall_s, static_cast<long long>(r.space_plans), static_cast<long long>(r.space_layouts),
        static_cast<long long>(r.evaluated), static_cast<long long>(r.pruned.total()),
        static_cast<long long>(r.pruned.memory), static_cast<long long>(r.pruned.ttft),
        static_cast<long long>(r.pruned.tpot), static_cast<double>(r.candidates) / r.wall_s,
        static_cast<double>(r.evaluated) / r.wall_s, feasible, r.pareto.size());
    if (!r.top.empty()) std::printf("  best: %s\n", search::layout_name(r.all[r.top.front()]).c_str());
  }
  return 0;
}
