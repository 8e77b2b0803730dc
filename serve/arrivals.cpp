#include "serve/arrivals.h"

#include <algorithm>
#include <cmath>

#include "core/arith.h"
#include "model/random.h"

namespace dayzero::serve::detail {

namespace {

// A uniform draw in (0, 1) from a counter-based generator.
double unit(uint64_t counter) {
  return (static_cast<double>(model::splitmix64(counter) >> 11) + 0.5) / 9007199254740992.0;
}

}  // namespace

Arrivals::Arrivals(const Client& c, int dp) : closed_(c.kind == ClientKind::closed_loop), client_(c) {
  const auto share = [dp](int64_t n) { return core::ceil_div(n, dp); };
  // A closed loop with fewer requests in flight than replicas keeps only that many
  // busy: the replica stands for one of them and serves its share of the requests.
  const int64_t busy = closed_ ? std::clamp<int64_t>(c.concurrency, 1, dp) : dp;
  total_ = c.kind == ClientKind::open_loop && !c.trace.empty() ? share(static_cast<int64_t>(c.trace.size()))
                                                               : core::ceil_div(c.requests, busy);
  if (closed_) {
    for (int64_t i = 0; i < std::min(share(c.concurrency), total_); ++i) queue_.push_back({0.0, next_shape()});
  } else if (!c.trace.empty()) {
    for (size_t i = 0; i < c.trace.size(); i += static_cast<size_t>(dp)) queue_.push_back(c.trace[i]);
  } else {
    // Poisson: exponential gaps at the replica's rate, from a counter-based generator.
    const double rate = c.rate_per_s / dp;
    double t = 0;
    for (int64_t i = 0; i < total_; ++i) {
      t += -std::log(unit(c.seed * 1000003 + static_cast<uint64_t>(i))) / rate;
      queue_.push_back({t, next_shape()});
    }
  }
  sent_ = static_cast<int64_t>(queue_.size());
}

Request Arrivals::pop() {
  Request r = queue_.front();
  queue_.pop_front();
  return r;
}

void Arrivals::on_finish(double now) {
  if (closed_ && sent_ < total_) {
    queue_.push_back({now, next_shape()});
    ++sent_;
  }
}

// A length uniform in [floor(ratio x n), n] (at least 1), as `sample_uniform` draws it.
int64_t Arrivals::draw(int64_t n, uint64_t counter) const {
  const int64_t low = std::max<int64_t>(1, static_cast<int64_t>(client_.range_ratio * static_cast<double>(n)));
  if (low >= n) return n;
  const auto span = static_cast<uint64_t>(n - low + 1);
  return low + static_cast<int64_t>(model::splitmix64(counter) % span);
}

// The lengths of the replica's next request.
RequestShape Arrivals::next_shape() {
  RequestShape s = client_.shape;
  if (client_.range_ratio < 1.0) {
    const uint64_t k = (client_.seed + 1) * 0x9E3779B97F4A7C15ULL + 2 * drawn_;
    s.input_len = draw(s.input_len, k);
    s.output_len = draw(s.output_len, k + 1);
    s.cached_prefix = std::min(s.cached_prefix, s.input_len - 1);
  }
  ++drawn_;
  return s;
}

}  // namespace dayzero::serve::detail
