#pragma once
// Waiting for non-blocking work against a deadline, the way PyTorch's process
// groups bound a collective (a timeout per operation, then an error instead of a
// hang). MpiCommunicator polls its requests with poll_until; the clock is a
// parameter so the tests drive it without MPI or real sleeps.
//
// The first kSpinPolls polls are separated only by a yield (a collective between
// ranks in step completes in microseconds; a sleep would add its latency), then the
// pauses are sleeps doubling up to kMaxPause_s, so a rank waiting long for a slow
// or dead peer does not hold a core its peers (oversubscribed ranks) may need.

#include <cstdint>
#include <functional>
#include <string>

namespace dayzero::executor {

// The default deadline of one collective or point-to-point transfer: 10 minutes,
// PyTorch's default for NCCL process groups (pytorch/pytorch#110947). A wait here
// is the peers' compute between two collectives (or a slower rank's weight
// loading), seconds on the CPU backend; `dayzero run --collective-timeout` changes it.
inline constexpr double kDefaultCollectiveTimeout_s = 600;
// The largest accepted: one day (beyond it a hang is not told from a wait).
inline constexpr double kMaxCollectiveTimeout_s = 86400;

// Empty when `timeout_s` is a usable deadline (0 < timeout_s <= kMaxCollectiveTimeout_s,
// NaN refused), else why not ("must be > 0 seconds, not -1").
std::string collective_timeout_problem(double timeout_s);

// Polls followed by a yield only; then sleeps of 1 us doubling up to kMaxPause_s
// (1 ms: a rank that waits that long is waiting for its peers' compute anyway).
inline constexpr int64_t kSpinPolls = 1000;
inline constexpr double kMaxPause_s = 1e-3;
// The pause after poll `attempt` (0-based) came back not done: 0 (a yield) for the
// first kSpinPolls, then 1 us, 2 us, 4 us, ... kMaxPause_s.
double backoff_pause_s(int64_t attempt);

struct WaitClock {
  std::function<double()> now_s;        // monotonic seconds
  std::function<void(double)> pause_s;  // 0: yield the core; > 0: sleep that long
};
WaitClock steady_wait_clock();  // std::chrono::steady_clock and std::this_thread

// Polls `done` until it returns true (then true), or until `timeout_s` has passed
// since the call (then false; the last poll follows the last pause, so a `done`
// that turns true by the deadline is seen).
bool poll_until(const std::function<bool()>& done, double timeout_s, const WaitClock& clock = steady_wait_clock());

}  // namespace dayzero::executor
