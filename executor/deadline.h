#pragma once
// Waiting for non-blocking work against a deadline, the way PyTorch's process
// groups bound a collective (a timeout per operation, then an error instead of a
// hang). MpiCommunicator polls its requests with poll_until; the clock is a
// parameter so the tests drive it without MPI or real sleeps.
//
// A wait goes through three phases, as a blocking MPI call's would: for its first
// kBusy_s it polls back to back (OpenMPI's blocking calls poll without a pause;
// a collective between ranks in step completes in microseconds, and even a yield,
// a system call, would add to the collective times the runner measures); until
// kSpin_s it yields between polls (OpenMPI's yield_when_idle, for oversubscribed
// ranks); after that each pause is a sleep of kPauseFraction of the time waited so
// far, at most kMaxPause_s: a rank waiting long for a slow or dead peer gives its
// core to the others, and a sleep adds at most a tenth to a wait (or 1 ms) when
// the peer does come.

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

inline constexpr double kBusy_s = 50e-6;
inline constexpr double kSpin_s = 2e-3;
inline constexpr double kPauseFraction = 0.1;
inline constexpr double kMaxPause_s = 1e-3;
// The pause after a poll that came back not done, `waited_s` into the wait: -1 (none:
// poll again at once) before kBusy_s, 0 (a yield) before kSpin_s, then
// min(kPauseFraction * waited_s, kMaxPause_s).
double backoff_pause_s(double waited_s);

struct WaitClock {
  std::function<double()> now_s;        // monotonic seconds
  std::function<void(double)> pause_s;  // 0: yield the core; > 0: sleep that long
};
const WaitClock& steady_wait_clock();  // std::chrono::steady_clock and std::this_thread

// Polls `done` (a callable returning bool) until it returns true (then true), or
// until `timeout_s` has passed since the call (then false; the last poll follows
// the last pause, so a `done` that turns true by the deadline is seen). A template
// so that the poll itself (each collective's MPI_Testsome) is not behind a
// std::function.
template <class Done>
bool poll_until(Done&& done, double timeout_s, const WaitClock& clock = steady_wait_clock()) {
  const double start_s = clock.now_s(), deadline_s = start_s + timeout_s;
  for (;;) {
    if (done()) return true;
    const double now_s = clock.now_s();
    if (now_s >= deadline_s) return false;
    const double pause_s = backoff_pause_s(now_s - start_s);
    if (pause_s < 0) continue;
    clock.pause_s(pause_s < deadline_s - now_s ? pause_s : deadline_s - now_s);
  }
}

}  // namespace dayzero::executor
