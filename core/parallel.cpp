#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace dayzero::core {

void parallel_blocks(size_t n, int threads, size_t block,
                     const std::function<void(int worker, size_t begin, size_t end)>& body,
                     const std::function<void(size_t done)>& progress, const std::atomic<bool>* cancel) {
  threads = std::max(1, threads);
  block = std::max<size_t>(1, block);
  std::atomic<size_t> done{0}, next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  int finished = 0;
  std::mutex mu;
  std::condition_variable cv;
  auto work = [&](int w) {
    try {
      while (!stop && !(cancel && cancel->load(std::memory_order_relaxed))) {
        const size_t b = next.fetch_add(block, std::memory_order_relaxed);
        if (b >= n) break;
        const size_t end = std::min(n, b + block);
        body(w, b, end);
        done += end - b;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      stop = true;
    }
    std::lock_guard<std::mutex> lock(mu);
    ++finished;
    cv.notify_one();
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w) pool.emplace_back(work, w);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished == threads; }))
      if (progress) progress(done.load());
  }
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace dayzero::core
