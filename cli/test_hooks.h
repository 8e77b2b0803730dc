#pragma once
// Test-only hooks of `dayzero run`, read from the environment here and nowhere
// else; unset in normal use (then they cost nothing):
//   DAYZERO_TEST_HANG_RANK=r  world rank r stops before its forward step
//   DAYZERO_TEST_HANG_AT=k    k (0: the first prefill chunk; default 1), prints
//                             "dayzero: rank r: test hook: hanging before step k (pid P)"
//                             on stderr and sleeps until it is killed.
// The rank-failure tests (tests/executor/mpi_rank_failure.sh) use it to hang a
// rank mid-run, or to know which process to kill with SIGKILL and when.

#include <cstdint>
#include <functional>

namespace dayzero::cli {

// The executor::RunnerOptions::before_step for world rank `rank`: empty unless the
// variables select it. Throws std::runtime_error naming a variable that is not a
// non-negative integer.
std::function<void(int64_t step)> test_hang_hook(int rank);

}  // namespace dayzero::cli
