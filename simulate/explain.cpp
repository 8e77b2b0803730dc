#include "simulate/explain.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace dayzero::simulate {

namespace {
std::string gb(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}
}  // namespace

std::string explain_memory(const Prediction& pred, double host_capacity_bytes) {
  const auto it = std::find_if(pred.ranks.begin(), pred.ranks.end(),
                               [&](const RankMemory& r) { return r.rank == pred.fullest_rank; });
  if (it == pred.ranks.end()) return "";
  const RankMemory& f = *it;
  std::vector<std::pair<int64_t, const char*>> parts = {{f.weights_bytes, "weights"},
                                                        {f.kv_cache_bytes, "KV cache"},
                                                        {f.activation_bytes, "activations"},
                                                        {f.buffer_bytes, "comm buffers"},
                                                        {f.overhead_bytes, "runtime overhead"}};
  std::sort(parts.begin(), parts.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::string s = "rank " + std::to_string(f.rank) + " (stage " + std::to_string(f.stage) + ") holds " +
                  gb(f.total_bytes) + " of " + gb(f.capacity_bytes) + ": " + parts[0].second + " " +
                  gb(parts[0].first) + ", " + parts[1].second + " " + gb(parts[1].first);
  if (!f.fits()) s += "; over by " + gb(f.total_bytes - f.capacity_bytes);
  if (pred.engine_kv.checked && !pred.engine_kv.fits) {
    const EngineKvCheck& k = pred.engine_kv;
    char share[64];
    std::snprintf(share, sizeof share, "%.2f of the %s", k.memory_fraction,
                  k.share_of_free ? "memory left free" : "device's memory");
    s += "; the serving engine's memory share (" + std::string(share) + ") leaves " + gb(k.free_bytes) +
         " per rank of stage " + std::to_string(k.stage) + " for KV cache, the batch needs " + gb(k.needed_bytes);
  }
  if (!pred.host_fits)
    s += "; offloaded experts need " + gb(static_cast<int64_t>(pred.host_bytes_per_node)) +
         " of host memory per node, more than its " + gb(static_cast<int64_t>(host_capacity_bytes));
  return s;
}

}  // namespace dayzero::simulate
