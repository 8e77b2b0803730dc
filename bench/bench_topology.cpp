// bench_topology: builds a 4,096-device cluster graph (512 HGX H200 nodes, rail-optimized
// network in scalable units of 32 nodes) and costs 10,000 collectives of the shapes a plan
// search forms (TP all-reduce in a node, EP all-to-all over 8 nodes, DP all-reduce across
// 64 nodes on one rail, PP send/recv between neighbouring nodes, all-gather over 2 nodes),
// first with cold caches, then again with warm ones. Prints timings; exits 0.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_main.h"
#include "topology/cluster.h"
#include "topology/collective_model.h"
#include "topology/device.h"

namespace {

using namespace dayzero::topology;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr int kNodes = 512;
constexpr int kCollectives = 10000;

struct Job {
  Collective c;
  std::vector<DeviceId> group;
  double size_bytes;
};

std::vector<Job> make_jobs(const Cluster& cl) {
  std::mt19937 rng(12345);  // fixed seed: the same workload every run
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<Job> jobs;
  for (int i = 0; i < kCollectives; ++i) {
    const double size = static_cast<double>(1ull << uniform(10, 30));  // 1 KiB .. 1 GiB
    const int kind = uniform(0, 99);
    Job j{Collective::all_reduce, {}, size};
    if (kind < 40) {  // TP = 8 inside one node
      j.group = cl.node_devices(static_cast<uint32_t>(uniform(0, kNodes - 1)));
    } else if (kind < 60) {  // EP = 64 over 8 consecutive nodes
      j.c = Collective::all_to_all;
      const int first = 8 * uniform(0, kNodes / 8 - 1);
      for (int n = first; n < first + 8; ++n)
        for (uint32_t l = 0; l < 8; ++l) j.group.push_back(cl.device(static_cast<uint32_t>(n), l));
    } else if (kind < 80) {  // DP = 64 across nodes, one rail
      const int first = 64 * uniform(0, kNodes / 64 - 1);
      const auto rail = static_cast<uint32_t>(uniform(0, 7));
      for (int n = first; n < first + 64; ++n) j.group.push_back(cl.device(static_cast<uint32_t>(n), rail));
    } else if (kind < 95) {  // PP hop to the next node
      j.c = Collective::send_recv;
      const auto n = static_cast<uint32_t>(uniform(0, kNodes - 2));
      const auto l = static_cast<uint32_t>(uniform(0, 7));
      j.group = {cl.device(n, l), cl.device(n + 1, l)};
    } else {  // all-gather over two nodes
      j.c = Collective::all_gather;
      const auto n = static_cast<uint32_t>(2 * uniform(0, kNodes / 2 - 1));
      for (uint32_t m = n; m < n + 2; ++m)
        for (uint32_t l = 0; l < 8; ++l) j.group.push_back(cl.device(m, l));
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

double run(CollectiveModel& model, const std::vector<Job>& jobs) {
  double checksum = 0;
  for (const auto& j : jobs) checksum += model.cost(j.c, j.group, j.size_bytes).time_s;
  return checksum;
}

}  // namespace

int run() {
  const auto catalog = DeviceCatalog::load_builtin(DAYZERO_DATA_DIR);
  const std::string json = R"({"name": "h200-512x8", "device": "H200-SXM", "nodes": 512, "devices_per_node": 8,
    "host": {"pcie_switches": 4}, "intra_node": {"fabric": "nvswitch"},
    "nics": {"per_node": 8, "bw_Bps": 50e9},
    "inter_node": {"fabric": "rail-optimized", "nodes_per_leaf": 32}})";

  auto t0 = Clock::now();
  Cluster cluster(parse_cluster_config(json, "bench"), catalog);
  const double build_s = seconds_since(t0);
  std::printf("graph: %u devices, %zu vertices, %zu links, built in %.1f ms\n", cluster.num_devices(),
              cluster.vertices().size(), cluster.links().size(), build_s * 1e3);

  const auto jobs = make_jobs(cluster);
  CollectiveModel model(cluster);
  t0 = Clock::now();
  const double sum_cold = run(model, jobs);
  const double cold_s = seconds_since(t0);
  std::printf("%d collectives, cold caches: %.3f s (%zu distinct groups costed, %zu shortest-path trees)\n",
              kCollectives, cold_s, model.cache_entries(), model.paths_computed());

  t0 = Clock::now();
  const double sum_warm = run(model, jobs);
  const double warm_s = seconds_since(t0);
  std::printf("%d collectives, warm caches: %.3f ms (%.0f ns per collective, %.2f M collectives/s)\n", kCollectives,
              warm_s * 1e3, warm_s / kCollectives * 1e9, kCollectives / warm_s / 1e6);

  t0 = Clock::now();
  const auto all = cluster.all_devices();
  const auto big = model.cost(Collective::all_reduce, all, 1ull << 30);
  std::printf("all_reduce of 1 GiB over all %u devices: %.3f ms predicted (%s/%s, busbw %.1f GB/s), costed in %.3f s\n",
              cluster.num_devices(), big.time_s * 1e3, std::string(algorithm_name(big.algorithm)).c_str(),
              std::string(protocol_name(big.protocol)).c_str(), big.busbw_Bps / 1e9, seconds_since(t0));
  std::printf("checksum %.9g %.9g\n", sum_cold, sum_warm);
  return sum_cold == sum_warm ? 0 : 1;
}

int main() {
  return dayzero::bench::guarded_main("bench_topology", [] { return run(); });
}
