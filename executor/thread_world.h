#pragma once
// A world of N ranks as threads of one process, their collectives through shared
// memory: what MpiCommunicator does (sums in rank order, so results are
// bit-identical to it; all-to-all-v; point to point; split) without a launcher.
// For tests of sharded plans in one process, and for several ranks sharing one GPU
// on a machine without MPI (tests/cuda).
//
// No wait is endless: a rank that throws marks the world failed and every rank
// waiting in a collective throws too (AllRanksError naming the failed rank); a wait
// longer than the world's timeout throws CollectiveTimeout.

#include <functional>
#include <memory>
#include <vector>

#include "executor/communicator.h"

namespace dayzero::executor {

class ThreadWorld {
 public:
  explicit ThreadWorld(int size, double timeout_s = 120);
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const;
  // Runs fn(comm) on `size` threads, rank r's with rank r's communicator, and waits
  // for all; then rethrows the first rank's exception (in rank order), if any.
  void run(const std::function<void(Communicator&)>& fn);

  struct Shared;  // the world's state (thread_world.cpp)

 private:
  std::shared_ptr<Shared> world_;
};

}  // namespace dayzero::executor
