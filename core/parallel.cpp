#include "core/parallel.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dayzero::core {

struct WorkerPool::Impl {
  // The run in progress: set by run() under `mu` before the generation moves on.
  struct Job {
    size_t n = 0, block = 1;
    const BlockBody* body = nullptr;
    const std::atomic<bool>* cancel = nullptr;
  };
  std::mutex run_mu;  // one run at a time
  std::mutex mu;
  std::condition_variable start_cv, done_cv;
  Job job;
  uint64_t generation = 0;
  bool shutdown = false;
  int finished = 0;
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  std::vector<std::thread> threads;

  void work(int w) {
    uint64_t seen = 0;
    for (;;) {
      Job j;
      {
        std::unique_lock<std::mutex> lock(mu);
        start_cv.wait(lock, [&] { return shutdown || generation != seen; });
        if (shutdown) return;
        seen = generation;
        j = job;
      }
      try {
        while (!stop.load(std::memory_order_relaxed) && !(j.cancel && j.cancel->load(std::memory_order_relaxed))) {
          const size_t b = next.fetch_add(j.block, std::memory_order_relaxed);
          if (b >= j.n) break;
          const size_t end = std::min(j.n, b + j.block);
          (*j.body)(w, b, end);
          done += end - b;
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        stop = true;
      }
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      done_cv.notify_one();
    }
  }
};

WorkerPool::WorkerPool(int threads) : threads_(std::max(1, threads)), impl_(std::make_unique<Impl>()) {
  impl_->threads.reserve(static_cast<size_t>(threads_));
  for (int w = 0; w < threads_; ++w) impl_->threads.emplace_back([this, w] { impl_->work(w); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->shutdown = true;
  }
  impl_->start_cv.notify_all();
  for (auto& t : impl_->threads) t.join();
}

void WorkerPool::run(size_t n, size_t block, const BlockBody& body, const Progress& progress,
                     const std::atomic<bool>* cancel) {
  Impl& p = *impl_;
  std::lock_guard<std::mutex> one_run(p.run_mu);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(p.mu);
    p.job = {n, std::max<size_t>(1, block), &body, cancel};
    p.next = 0;
    p.done = 0;
    p.stop = false;
    p.error = nullptr;
    p.finished = 0;
    ++p.generation;
    p.start_cv.notify_all();
    while (!p.done_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return p.finished == threads_; }))
      if (progress) {
        lock.unlock();
        progress(p.done.load());
        lock.lock();
      }
    error = p.error;
  }
  if (error) std::rethrow_exception(error);
}

void parallel_blocks(size_t n, int threads, size_t block, const BlockBody& body, const Progress& progress,
                     const std::atomic<bool>* cancel) {
  WorkerPool(threads).run(n, block, body, progress, cancel);
}

}  // namespace dayzero::core
