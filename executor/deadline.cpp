#include "executor/deadline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <thread>

namespace dayzero::executor {

namespace {
std::string seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}
}  // namespace

std::string collective_timeout_problem(double timeout_s) {
  if (std::isnan(timeout_s)) return "must be a number of seconds, not NaN";
  if (timeout_s <= 0) return "must be > 0 seconds, not " + seconds(timeout_s);
  if (timeout_s > kMaxCollectiveTimeout_s)
    return "must be at most " + seconds(kMaxCollectiveTimeout_s) + " seconds (one day), not " + seconds(timeout_s);
  return {};
}

double backoff_pause_s(int64_t attempt) {
  if (attempt < kSpinPolls) return 0;
  const int64_t doublings = attempt - kSpinPolls;
  if (doublings >= 30) return kMaxPause_s;  // 2^30 us is far past the cap
  return std::min(kMaxPause_s, 1e-6 * static_cast<double>(int64_t{1} << doublings));
}

WaitClock steady_wait_clock() {
  using Clock = std::chrono::steady_clock;
  return {[] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); },
          [](double s) {
            if (s <= 0) std::this_thread::yield();
            else std::this_thread::sleep_for(std::chrono::duration<double>(s));
          }};
}

bool poll_until(const std::function<bool()>& done, double timeout_s, const WaitClock& clock) {
  const double deadline_s = clock.now_s() + timeout_s;
  for (int64_t attempt = 0;; ++attempt) {
    if (done()) return true;
    const double now_s = clock.now_s();
    if (now_s >= deadline_s) return false;
    clock.pause_s(std::min(backoff_pause_s(attempt), deadline_s - now_s));
  }
}

}  // namespace dayzero::executor
