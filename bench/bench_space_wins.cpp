// bench_space_wins: where each dimension the full space added wins. For a named
// bundled scenario per dimension, the best plan of the space DayZero searched before
// (compact: powers of two, one copy of the experts, even stages, one pool) against
// the best plan of that space with the one dimension added, under the scenario's
// objective, with what bounds each plan's decode step.
//
//   build/bench/bench_space_wins
#include <cstdio>
#include <functional>
#include <string>

#include "bench_main.h"
#include "search/ranking.h"
#include "search/search.h"
#include "search/session.h"
#include "serve/engine_settings.h"

using namespace dayzero;

namespace {

struct Case {
  const char* dimension;
  const char* scenario;
  std::function<void(search::SpaceOverrides&)> add;  // the dimension, over the compact space
};

std::string figure(const search::Evaluated& e, search::Objective o) {
  char buf[160];
  const auto& p = e.prediction;
  if (o == search::Objective::latency)
    std::snprintf(buf, sizeof buf, "TPOT %.2f ms (%.1f tok/s/dev)", p.tpot_s * 1e3,
                  p.throughput_tokens_per_s_per_device);
  else
    std::snprintf(buf, sizeof buf, "%.1f tok/s/dev (TPOT %.1f ms)", p.throughput_tokens_per_s_per_device,
                  p.tpot_s * 1e3);
  return buf;
}

}  // namespace

int run() {
  const Case cases[] = {
      {"non-power-of-two sizes", "kimi-k2.5-h200-2x8",
       [](search::SpaceOverrides& o) {
         o.kind = search::SpaceKind::full;  // divisor sizes (and half-step batches) ...
         o.moe_dp = {1};                    // ... without the other new dimensions
         o.stage_splits = {search::StageSplit::even};
       }},
      {"moe dp > 1 (copies of the expert set)", "deepseek-v3-h200-2x8-latency",
       [](search::SpaceOverrides& o) {
         o.moe_dp = {1, 2, 4, 8};
       }},
      {"uneven pipeline stages", "glm-5-h100-2x8-eth",
       [](search::SpaceOverrides& o) {
         o.stage_splits = {search::StageSplit::even, search::StageSplit::balanced};
       }},
      {"redundant hot experts (EPLB, one slot per GPU)", "3t-moe-h200-64x8",
       [](search::SpaceOverrides& o) {
         o.redundant_per_rank = {0, 1};
       }},
      {"disaggregated prefill / decode pools", "deepseek-v3-h200-4x8-chat-disagg",
       [](search::SpaceOverrides& o) { o.disaggregated = true; }},
  };
  for (const Case& c : cases) {
    const search::Session l =
        search::load_session(std::string(DAYZERO_DATA_DIR) + "/" + c.scenario + ".json", DAYZERO_DATA_DIR);
    search::Scenario old_space = l.scenario;
    old_space.space.kind = search::SpaceKind::compact;
    old_space.space.moe_dp.clear();
    old_space.space.stage_splits.clear();
    old_space.space.redundant_per_rank.clear();
    old_space.space.disaggregated = false;
    search::Scenario new_space = old_space;
    c.add(new_space.space);
    search::SearchOptions so;  // as `dayzero plan` searches: plans the scenario's engine can hold at their batch
    so.engine_memory = serve::engine_memory_rules(l.scenario.engine, l.model, l.cluster.device_spec());
    const search::SearchResult a = search::run_search(old_space, l.model, l.cluster, l.efficiency, so);
    const search::SearchResult b = search::run_search(new_space, l.model, l.cluster, l.efficiency, so);
    std::printf("%s, on %s (objective %s):\n", c.dimension, c.scenario,
                std::string(search::objective_name(l.scenario.objective)).c_str());
    if (a.top.empty() || b.top.empty()) {
      std::printf("  no feasible plan\n");
      continue;
    }
    const search::Evaluated& x = a.all[a.top.front()];
    const search::Evaluated& y = b.all[b.top.front()];
    const search::Objective o = l.scenario.objective;
    std::printf("  old space: %s, batch %lld: %s; decode bound by %s\n", search::layout_name(x).c_str(),
                static_cast<long long>(x.plan.workload.batch), figure(x, o).c_str(),
                search::main_cost(x.prediction.decode).c_str());
    std::printf("  with it:   %s, batch %lld: %s; decode bound by %s\n", search::layout_name(y).c_str(),
                static_cast<long long>(y.plan.workload.batch), figure(y, o).c_str(),
                search::main_cost(y.prediction.decode).c_str());
    std::printf("  %s\n", search::better(y, x, o) ? "the new dimension wins" : "no win");
  }
  return 0;
}

int main() {
  return dayzero::bench::guarded_main("bench_space_wins", [] { return run(); });
}
