#include "serve/stats.h"

#include <algorithm>
#include <cmath>

namespace dayzero::serve {

namespace {

// Linear interpolation between the closest ranks: position q (n - 1) in the sorted samples.
double percentile_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

LatencyStats latency_stats(std::vector<double> samples) {
  LatencyStats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (double x : samples) sum += x;
  s.count = static_cast<int64_t>(samples.size());
  s.mean = sum / static_cast<double>(samples.size());
  s.p50 = percentile_sorted(samples, 0.50);
  s.p90 = percentile_sorted(samples, 0.90);
  s.p99 = percentile_sorted(samples, 0.99);
  return s;
}

LatencyStats weighted_latency_stats(std::vector<std::pair<double, int64_t>> samples) {
  LatencyStats s;
  std::sort(samples.begin(), samples.end());
  int64_t n = 0;
  double sum = 0;
  for (const auto& [v, c] : samples) {
    n += c;
    sum += v * static_cast<double>(c);
  }
  if (n == 0) return s;
  s.count = n;
  s.mean = sum / static_cast<double>(n);
  // The value at (fractional) rank r of the expanded samples.
  auto at = [&](double r) {
    int64_t seen = 0;
    for (const auto& [v, c] : samples) {
      if (r < static_cast<double>(seen + c)) return v;
      seen += c;
    }
    return samples.back().first;
  };
  auto pct = [&](double q) {
    const double pos = q * static_cast<double>(n - 1);
    const double lo = std::floor(pos);
    const double a = at(lo), b = at(std::min(lo + 1, static_cast<double>(n - 1)));
    return a + (b - a) * (pos - lo);
  };
  s.p50 = pct(0.50);
  s.p90 = pct(0.90);
  s.p99 = pct(0.99);
  return s;
}

}  // namespace dayzero::serve
