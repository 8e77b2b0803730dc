#pragma once
// Work over [0, n) on a pool of threads, the way the search evaluates plans: blocks
// taken in order by whichever worker is free (one atomic counter, touched once per
// block), so that workers finish together however uneven the blocks' costs are, and
// progress reported from the calling thread. A worker's exception never reaches
// std::terminate: the first one stops the other workers at their next block and is
// rethrown on the caller's thread, after every worker has finished the run.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

namespace dayzero::core {

using BlockBody = std::function<void(int worker, size_t begin, size_t end)>;
using Progress = std::function<void(size_t done)>;

// Threads started once and reused by every run: a search runs a hundred or more
// waves of work, and starting threads for each cost it 3 % of its time on 2 cores
// (bench_search). Worker w of every run is the same thread, so what a caller keeps
// per worker (a simulator and its caches) stays warm on one core's thread.
class WorkerPool {
 public:
  explicit WorkerPool(int threads);  // at least 1
  ~WorkerPool();                     // finishes nothing: runs are synchronous; joins the threads
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return threads_; }
  // body(worker, begin, end) handles items [begin, end); progress(done), when set, is
  // called on the calling thread about every 100 ms until the workers are done. When
  // `cancel` is set (by anyone), workers take no further block: the caller sees it
  // set. One run at a time (runs from several threads are serialized).
  void run(size_t n, size_t block, const BlockBody& body, const Progress& progress = {},
           const std::atomic<bool>* cancel = nullptr);

 private:
  struct Impl;
  int threads_;
  std::unique_ptr<Impl> impl_;
};

// One run on a pool of its own.
void parallel_blocks(size_t n, int threads, size_t block, const BlockBody& body, const Progress& progress = {},
                     const std::atomic<bool>* cancel = nullptr);

}  // namespace dayzero::core
