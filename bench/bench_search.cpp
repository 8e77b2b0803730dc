// bench_search: the plan space of the 3T-parameter MoE on 64 x 8 H200
// (scenarios/3t-moe-h200-64x8.json), compact and full: plans in the space, pruned
// by each rule, costed, wall time and plans considered per second, on every core of
// this machine and on one, and the speedup. Each figure is the best of --repeat runs
// (default 5; the runs alternate, so a noisy neighbour hurts both alike), beside the
// speedup the same machine gives a loop that only computes (what its cores can give).
// The search is `dayzero plan`'s: held to the scenario's engine's memory share.
// (The pruned search's answer equals the exhaustive one's: tests/search/test_space.cpp,
// on every bundled scenario; this full space, exhaustively, would keep more plans than
// kMaxKeptPlans.)
//
//   build/bench/bench_search [SCENARIO] [--repeat N]
#include <sys/resource.h>
#include <algorithm>
#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_main.h"
#include "search/search.h"
#include "search/session.h"
#include "serve/engine_settings.h"

using namespace dayzero;

namespace {

// CPU seconds (user + system) of the whole process so far.
double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Run {
  search::SearchResult r;
  double cpu_s = 0;  // CPU time of the search, every thread
};

Run run(const search::Session& l, const search::Scenario& s, int threads) {
  search::SearchOptions o;
  o.threads = threads;
  // As `dayzero plan` searches: plans the scenario's engine (vLLM) can hold at their batch.
  o.engine_memory = serve::engine_memory_rules(s.engine, l.model, l.cluster.device_spec());
  const double c0 = cpu_s();
  Run out{search::run_search(s, l.model, l.cluster, l.efficiency, o), 0};
  out.cpu_s = cpu_s() - c0;
  return out;
}

void print(const char* space, const Run& run) {
  const search::SearchResult& r = run.r;
  size_t feasible = 0;
  for (const auto& e : r.all) feasible += e.meets_sla ? 1 : 0;
  std::printf(
      "  %s, %d thread(s): %.3f s; space %lld plans in %lld layouts; pruned %lld (memory %lld, ttft %lld, tpot %lld, "
      "bound %lld), costed %lld; %.3g plans considered/s; %zu costed meet the SLA, %zu on the Pareto front; "
      "%.3f CPU s\n",
      space, r.threads, r.wall_s, static_cast<long long>(r.space_plans), static_cast<long long>(r.space_layouts),
      static_cast<long long>(r.pruned.total()), static_cast<long long>(r.pruned.memory),
      static_cast<long long>(r.pruned.ttft), static_cast<long long>(r.pruned.tpot),
      static_cast<long long>(r.pruned.bound), static_cast<long long>(r.evaluated),
      static_cast<double>(r.candidates) / r.wall_s, feasible, r.pareto.size(), run.cpu_s);
}

// The speedup of `threads` threads over one on a loop of arithmetic alone, best of 5.
double spin_speedup(int threads) {
  auto spin = [](int n, long iterations) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<double> sink(static_cast<size_t>(n) * 16, 0);  // a cache line apart
    for (int i = 0; i < n; ++i)
      pool.emplace_back([&, i] {
        double x = 0;
        for (long k = 0; k < iterations; ++k) x += static_cast<double>(k % 7) * 1e-9;
        sink[static_cast<size_t>(i) * 16] = x;
      });
    for (auto& t : pool) t.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double one = 1e300, many = 1e300;
  for (int r = 0; r < 5; ++r) {
    one = std::min(one, spin(1, 100'000'000));
    many = std::min(many, spin(threads, 100'000'000 / threads));
  }
  return one / many;
}

}  // namespace

int run(int argc, char** argv) {
  std::string file = std::string(DAYZERO_DATA_DIR) + "/3t-moe-h200-64x8.json";
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: bench_search [SCENARIO] [--repeat N]  (default: the 3T MoE on 64 x 8 H200, 5 runs)\n");
      return 0;
    }
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else file = argv[i];
  }
  const search::Session l = search::load_session(file, DAYZERO_DATA_DIR);
  std::printf("scenario %s: %.2f T params on %u x %s\n", l.scenario.name.c_str(),
              static_cast<double>(l.model.params_total()) / 1e12, l.cluster.num_devices(),
              l.cluster.device_spec().name.c_str());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("this machine: %d threads run a loop of arithmetic %.2fx as fast as one\n", cores, spin_speedup(cores));
  for (search::SpaceKind kind : {search::SpaceKind::compact, search::SpaceKind::full}) {
    search::Scenario s = l.scenario;
    s.space.kind = kind;
    const char* name = kind == search::SpaceKind::compact ? "compact" : "full";
    run(l, s, cores);  // warm-up: the page cache, the allocator
    Run many = run(l, s, cores), one = run(l, s, 1);
    for (int i = 1; i < repeat; ++i) {
      Run a = run(l, s, cores), b = run(l, s, 1);
      if (a.r.wall_s < many.r.wall_s) many = std::move(a);
      if (b.r.wall_s < one.r.wall_s) one = std::move(b);
    }
    print(name, many);
    print(name, one);
    std::printf("  %s: %d threads %.2fx of 1 (best of %d each; CPU time %.2fx of 1 thread's); best plan %s\n", name,
                many.r.threads, one.r.wall_s / many.r.wall_s, repeat, many.cpu_s / one.cpu_s,
                many.r.top.empty() ? "-" : search::layout_name(many.r.all[many.r.top.front()]).c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  return dayzero::bench::guarded_main("bench_search", [&] { return run(argc, argv); });
}
