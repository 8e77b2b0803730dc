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

double backoff_pause_s(double waited_s) {
  if (!(waited_s >= kBusy_s)) return -1;  // NaN too
  if (waited_s < kSpin_s) return 0;
  return std::min(kMaxPause_s, kPauseFraction * waited_s);
}

const WaitClock& steady_wait_clock() {
  using Clock = std::chrono::steady_clock;
  static const WaitClock clock{[] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); },
                               [](double s) {
                                 if (s <= 0) std::this_thread::yield();
                                 else std::this_thread::sleep_for(std::chrono::duration<double>(s));
                               }};
  return clock;
}

}  // namespace dayzero::executor
