#pragma once
// Latency statistics as serving benchmarks report them: mean and percentiles.

#include <cstdint>
#include <utility>
#include <vector>

namespace dayzero::serve {

struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  int64_t count = 0;
};

// Of plain samples. Percentiles by linear interpolation between the closest ranks
// (numpy's default, as vLLM's and SGLang's benchmark scripts compute them).
LatencyStats latency_stats(std::vector<double> samples);
// Of (value, count) pairs: `count` samples of each value (inter-token gaps shared
// by every sequence of a step).
LatencyStats weighted_latency_stats(std::vector<std::pair<double, int64_t>> samples);

}  // namespace dayzero::serve
