// The deadline of MpiCommunicator's waits (executor/deadline.h), on a fake clock:
// the backoff schedule, a wait that ends in time, one that times out (when, and
// how many polls it took), how late a peer that comes after a long wait is seen,
// and the accepted timeouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "executor/deadline.h"

namespace dayzero::executor {
namespace {

// Reading the clock takes 10 ns (a poll's cost), a yield (pause 0) 0.1 us, a
// sleep what it asks for.
constexpr double kRead_s = 1e-8, kYield_s = 1e-7;
struct FakeClock {
  double now_s = 1000;
  double slept_s = 0;  // in sleeps (pauses > 0)
  int64_t yields = 0;
  WaitClock clock() {
    return {[this] { return now_s += kRead_s; },
            [this](double s) {
              if (s <= 0) {
                ++yields;
                now_s += kYield_s;
              } else {
                slept_s += s;
                now_s += s;
              }
            }};
  }
};

TEST(Deadline, BackoffPollsThenYieldsThenSleepsATenthOfTheWaitUpToTheCap) {
  EXPECT_EQ(backoff_pause_s(0), -1);  // poll again at once
  EXPECT_EQ(backoff_pause_s(0.999 * kBusy_s), -1);
  EXPECT_EQ(backoff_pause_s(kBusy_s), 0);  // yield
  EXPECT_EQ(backoff_pause_s(0.999 * kSpin_s), 0);
  EXPECT_DOUBLE_EQ(backoff_pause_s(kSpin_s), 2e-4);  // 0.1 x 2 ms
  EXPECT_DOUBLE_EQ(backoff_pause_s(5e-3), 5e-4);
  EXPECT_DOUBLE_EQ(backoff_pause_s(10e-3), kMaxPause_s);
  EXPECT_DOUBLE_EQ(backoff_pause_s(600), kMaxPause_s);
  EXPECT_EQ(backoff_pause_s(std::nan("")), -1);
}

TEST(Deadline, DoneInTimeReturnsTrueWithoutSleeping) {
  FakeClock fake;
  int polls = 0;
  EXPECT_TRUE(poll_until([&] { return ++polls == 5; }, 3.0, fake.clock()));
  EXPECT_EQ(polls, 5);
  EXPECT_EQ(fake.yields, 0);  // polled back to back: no yield, no sleep
  EXPECT_EQ(fake.slept_s, 0);
}

TEST(Deadline, NeverDoneTimesOutAtTheDeadlineNotLater) {
  FakeClock fake;
  const double start_s = fake.now_s;
  int64_t polls = 0;
  EXPECT_FALSE(poll_until([&] { return ++polls, false; }, 3.0, fake.clock()));
  // The last pause is cut to the deadline: it ends at 3 s, not up to 1 ms past it.
  EXPECT_NEAR(fake.now_s - start_s, 3.0, 5 * kRead_s);
  // Mostly asleep: back-to-back polls for 50 us, yields until 2 ms, then pauses
  // growing by a tenth to 1 ms (17 of them), then about 3 s / 1 ms sleeps.
  const double busy_polls = kBusy_s / kRead_s, yield_polls = (kSpin_s - kBusy_s) / (kRead_s + kYield_s);
  EXPECT_NEAR(static_cast<double>(fake.yields), yield_polls, 3);
  EXPECT_NEAR(fake.slept_s, 3.0 - kSpin_s, 1e-4);  // less the clock reads between sleeps
  const double sleep_polls = 3.0 / kMaxPause_s;
  EXPECT_LE(static_cast<double>(polls), busy_polls + yield_polls + sleep_polls + 25);
  EXPECT_GE(static_cast<double>(polls), busy_polls + yield_polls + sleep_polls - 25);
}

// A peer that comes after a long wait is seen at most a tenth of the wait (or
// 1 ms) late: the sleeps add little to the collective times the runner measures.
TEST(Deadline, ALateArrivalIsSeenWithinATenthOfTheWait) {
  for (const double ready_after_s : {1e-4, 3e-3, 8e-3, 0.5, 20.0}) {
    FakeClock fake;
    const double ready_s = fake.now_s + ready_after_s;
    EXPECT_TRUE(poll_until([&] { return fake.now_s >= ready_s; }, 60.0, fake.clock()));
    const double late_s = fake.now_s - ready_s;
    EXPECT_GE(late_s, 0);
    EXPECT_LE(late_s, std::min(kPauseFraction * ready_after_s, kMaxPause_s) + kYield_s + 2 * kRead_s) << ready_after_s;
  }
}

TEST(Deadline, DoneExactlyAtTheDeadlineIsSeen) {
  FakeClock fake;
  const double deadline_s = fake.now_s + 0.5;
  EXPECT_TRUE(poll_until([&] { return fake.now_s >= deadline_s; }, 0.5, fake.clock()));
}

TEST(Deadline, AlreadyDoneDoesNotPause) {
  FakeClock fake;
  EXPECT_TRUE(poll_until([] { return true; }, 1e-9, fake.clock()));
  EXPECT_EQ(fake.yields, 0);
}

TEST(Deadline, RealClockTimesOutOnTime) {
  const auto t0 = steady_wait_clock().now_s();
  EXPECT_FALSE(poll_until([] { return false; }, 0.05));
  const double waited_s = steady_wait_clock().now_s() - t0;
  EXPECT_GE(waited_s, 0.05);
  EXPECT_LT(waited_s, 1.0);  // generous: a loaded CI machine
}

TEST(Deadline, TimeoutsOutsideTheBoundsAreRefusedWithTheValue) {
  EXPECT_EQ(collective_timeout_problem(3), "");
  EXPECT_EQ(collective_timeout_problem(kDefaultCollectiveTimeout_s), "");
  EXPECT_EQ(collective_timeout_problem(kMaxCollectiveTimeout_s), "");
  EXPECT_EQ(collective_timeout_problem(0.001), "");
  EXPECT_EQ(collective_timeout_problem(0), "must be > 0 seconds, not 0");
  EXPECT_EQ(collective_timeout_problem(-1.5), "must be > 0 seconds, not -1.5");
  EXPECT_EQ(collective_timeout_problem(86401), "must be at most 86400 seconds (one day), not 86401");
  EXPECT_NE(collective_timeout_problem(std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(collective_timeout_problem(std::nan("")), "must be a number of seconds, not NaN");
}

}  // namespace
}  // namespace dayzero::executor
