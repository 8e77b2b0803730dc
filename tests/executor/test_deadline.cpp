// The deadline of MpiCommunicator's waits (executor/deadline.h), on a fake clock:
// the backoff schedule, a wait that ends in time, one that times out (when, and
// how many polls it took), and the accepted timeouts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "executor/deadline.h"

namespace dayzero::executor {
namespace {

// Time moves only by pauses; a yield (pause 0) takes 0.1 us.
struct FakeClock {
  double now_s = 1000;
  double slept_s = 0;  // in sleeps (pauses > 0)
  int64_t yields = 0;
  WaitClock clock() {
    return {[this] { return now_s; },
            [this](double s) {
              if (s <= 0) {
                ++yields;
                now_s += 1e-7;
              } else {
                slept_s += s;
                now_s += s;
              }
            }};
  }
};

TEST(Deadline, BackoffSpinsThenDoublesToTheCap) {
  EXPECT_EQ(backoff_pause_s(0), 0);
  EXPECT_EQ(backoff_pause_s(kSpinPolls - 1), 0);
  EXPECT_DOUBLE_EQ(backoff_pause_s(kSpinPolls), 1e-6);
  EXPECT_DOUBLE_EQ(backoff_pause_s(kSpinPolls + 1), 2e-6);
  EXPECT_DOUBLE_EQ(backoff_pause_s(kSpinPolls + 9), 512e-6);
  EXPECT_DOUBLE_EQ(backoff_pause_s(kSpinPolls + 10), kMaxPause_s);  // 1024 us, capped at 1 ms
  EXPECT_DOUBLE_EQ(backoff_pause_s(kSpinPolls + 63), kMaxPause_s);  // no shift overflow
  EXPECT_DOUBLE_EQ(backoff_pause_s(std::numeric_limits<int64_t>::max()), kMaxPause_s);
}

TEST(Deadline, DoneInTimeReturnsTrueWithoutSleeping) {
  FakeClock fake;
  int polls = 0;
  EXPECT_TRUE(poll_until([&] { return ++polls == 5; }, 3.0, fake.clock()));
  EXPECT_EQ(polls, 5);
  EXPECT_EQ(fake.yields, 4);  // a yield between polls, no sleep
  EXPECT_EQ(fake.slept_s, 0);
}

TEST(Deadline, NeverDoneTimesOutAtTheDeadlineNotLater) {
  FakeClock fake;
  const double start_s = fake.now_s;
  int64_t polls = 0;
  EXPECT_FALSE(poll_until([&] { return ++polls, false; }, 3.0, fake.clock()));
  // The last pause is cut to the deadline: it ends at 3 s, not up to 1 ms past it.
  EXPECT_NEAR(fake.now_s - start_s, 3.0, 1e-9);
  // Mostly asleep: the spin, the doublings to 1 ms, then about 3 s / 1 ms sleeps.
  EXPECT_EQ(fake.yields, kSpinPolls);
  EXPECT_LE(polls, kSpinPolls + 11 + static_cast<int64_t>(3.0 / kMaxPause_s) + 2);
  EXPECT_GE(polls, static_cast<int64_t>(3.0 / kMaxPause_s) - 10);
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
