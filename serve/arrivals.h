#pragma once
// The requests one attention-DP replica receives: its share of a client's closed
// loop, Poisson arrivals or trace, with lengths drawn as the benchmark clients draw
// them. Internal to the serving simulation (serve/simulation.cpp).

#include <cstdint>
#include <deque>

#include "serve/workload.h"

namespace dayzero::serve::detail {

class Arrivals {
 public:
  Arrivals(const Client& c, int dp);
  bool empty() const { return queue_.empty(); }
  double next_time() const { return queue_.front().arrival_s; }
  Request pop();
  // Closed loop: a finished request makes room for the next one, arriving now.
  void on_finish(double now);
  int64_t total() const { return total_; }

 private:
  int64_t draw(int64_t n, uint64_t counter) const;
  RequestShape next_shape();

  bool closed_;
  const Client& client_;
  uint64_t drawn_ = 0;
  std::deque<Request> queue_;
  int64_t total_ = 0, sent_ = 0;
};

}  // namespace dayzero::serve::detail
