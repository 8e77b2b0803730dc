#include "executor/threads.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace dayzero::executor {

namespace {

constexpr int kMaxThreads = 1024;  // a sanity bound on DAYZERO_THREADS / set_kernel_threads

// A positive integer from the environment; 0 when unset or empty. `max`: the
// largest accepted. `strict`: throw on anything else (our own variable),
// otherwise treat it as unset (a launcher's).
int env_positive(const char* name, int max, bool strict) {
  const char* s = std::getenv(name);
  if (!s || !*s) return 0;
  const std::string v = s;
  const bool digits = v.find_first_not_of("0123456789") == std::string::npos && v.size() <= 9;
  const int n = digits ? std::stoi(v) : 0;
  if (n >= 1 && n <= max) return n;
  if (strict)
    throw std::invalid_argument(std::string("environment variable ") + name + " = '" + v +
                                "': expected a thread count from 1 to " + std::to_string(max));
  return 0;
}

int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

thread_local bool t_in_chunk = false;  // this thread is running a chunk of a parallel job

void run_chunk(detail::ChunkFn fn, const void* ctx, int64_t begin, int64_t end, std::exception_ptr& error) {
  t_in_chunk = true;
  try {
    fn(ctx, begin, end);
  } catch (...) {
    error = std::current_exception();
  }
  t_in_chunk = false;
}

// How long a thread polls before it sleeps on a condition variable: for a new job
// (workers) or for the job's last chunk (the caller). Waking a sleeping thread
// costs ~50-100 us on this 2-vCPU VM (the idle vCPU halts; measured with
// tests/executor/test_threads.cpp ReportsWhenTwoThreadsPay), more than most
// decode kernels' share of work, while back-to-back kernels come within microseconds.
constexpr auto kSpin = std::chrono::microseconds(200);

template <class Pred>
bool spin_until(Pred&& done) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    if (i % 64 == 63 && std::chrono::steady_clock::now() > end) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

struct Job {
  int64_t n = 0, chunks = 0;
  detail::ChunkFn fn = nullptr;
  const void* ctx = nullptr;
  std::atomic<int64_t> next{0}, done{0};   // the next chunk to claim; chunks finished
  std::vector<std::exception_ptr> errors;  // by chunk
};

// threads - 1 workers. A job's chunks are claimed in order from an atomic
// counter by the caller and the workers, so a worker slow to get a core (another
// process on it) does not hold the caller up: the caller runs the chunks itself.
// Which thread runs a chunk does not change its bounds (nor, in the kernels, the
// results). Lifetime: a worker counts itself in active_ before it reads job_; the
// caller clears job_ and waits for active_ == 0 before its Job goes away.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, int64_t chunks, detail::ChunkFn fn, const void* ctx) {
    Job job;
    job.n = n;
    job.chunks = chunks;
    job.fn = fn;
    job.ctx = ctx;
    job.errors.assign(static_cast<size_t>(chunks), nullptr);
    job_.store(&job);
    {
      std::lock_guard lock(m_);
      ++generation_;
    }
    wake_.notify_all();
    claim(job);
    wait_until([&] { return job.done.load() == job.chunks; });
    job_.store(nullptr);
    wait_until([&] { return active_.load() == 0; });
    for (const auto& e : job.errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  void claim(Job& job) {
    for (int64_t c = job.next.fetch_add(1); c < job.chunks; c = job.next.fetch_add(1)) {
      run_chunk(job.fn, job.ctx, job.n * c / job.chunks, job.n * (c + 1) / job.chunks,
                job.errors[static_cast<size_t>(c)]);  // each chunk its own slot
      if (job.done.fetch_add(1) + 1 == job.chunks) notify_caller();
    }
  }
  template <class Pred>
  void wait_until(Pred&& ready) {
    if (spin_until(ready)) return;
    std::unique_lock lock(m_);
    done_.wait(lock, ready);
  }
  void notify_caller() {
    { std::lock_guard lock(m_); }  // a caller between its check and its wait has the lock
    done_.notify_one();
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      const auto fresh = [&] { return stop_.load() || generation_.load() != seen; };
      if (!spin_until(fresh)) {
        std::unique_lock lock(m_);
        wake_.wait(lock, fresh);
      }
      if (stop_) return;
      seen = generation_.load();
      active_.fetch_add(1);
      if (Job* job = job_.load()) claim(*job);
      if (active_.fetch_sub(1) == 1) notify_caller();
    }
  }

  std::mutex m_;
  std::condition_variable wake_, done_;  // workers: a new job; the caller: chunks done / workers out
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> generation_{0};  // one per job; changed under m_
  std::atomic<Job*> job_{nullptr};       // the running job, or nullptr
  std::atomic<int> active_{0};           // workers that may be looking at job_
};

// Process-wide: the thread count (0 until first asked for), and the pool, started
// on first parallel use. g_dispatch: one job at a time; guards g_pool.
std::mutex g_config;
std::atomic<int> g_threads{0};
std::mutex g_dispatch;
std::unique_ptr<Pool> g_pool;

}  // namespace

int default_kernel_threads() {
  if (const int forced = env_positive("DAYZERO_THREADS", kMaxThreads, true)) return forced;
  const int hw = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int ranks = env_positive("OMPI_COMM_WORLD_LOCAL_SIZE", 999999999, false);
  if (ranks == 0) ranks = env_positive("MPI_LOCALNRANKS", 999999999, false);
  int n = std::max(1, hw / std::max(1, ranks));
  if (const int cpus = allowed_cpus(); cpus > 0) n = std::min(n, cpus);
  return n;
}

int kernel_threads() {
  if (const int n = g_threads.load(std::memory_order_acquire)) return n;
  std::lock_guard lock(g_config);
  if (g_threads.load() == 0) g_threads.store(default_kernel_threads(), std::memory_order_release);
  return g_threads.load();
}

void set_kernel_threads(int n) {
  if (n < 1 || n > kMaxThreads)
    throw std::invalid_argument("set_kernel_threads: " + std::to_string(n) + " threads; expected 1 to " +
                                std::to_string(kMaxThreads));
  if (t_in_chunk) throw std::logic_error("set_kernel_threads called inside a parallel_for chunk");
  std::lock_guard dispatch(g_dispatch);  // waits for a running job
  std::lock_guard lock(g_config);
  g_threads.store(n, std::memory_order_release);
  if (g_pool && g_pool->threads() != n) g_pool.reset();
}

int64_t parallel_chunks(int64_t n, double work_per_item) {
  if (n <= 0) return 0;
  const double by_work = static_cast<double>(n) * std::max(0.0, work_per_item) / kMinChunkWork;
  const int64_t k = std::min<int64_t>(kernel_threads(), n);
  return by_work >= static_cast<double>(k) ? k : std::max<int64_t>(1, static_cast<int64_t>(by_work));
}

namespace detail {

void parallel_for_impl(int64_t n, double work_per_item, ChunkFn fn, const void* ctx) {
  if (n <= 0) return;
  const int64_t chunks = t_in_chunk ? 1 : parallel_chunks(n, work_per_item);
  if (chunks > 1) {
    std::unique_lock dispatch(g_dispatch, std::try_to_lock);
    if (dispatch.owns_lock()) {
      const int threads = kernel_threads();
      if (!g_pool || g_pool->threads() != threads) {
        g_pool.reset();
        g_pool = std::make_unique<Pool>(threads);
      }
      g_pool->run(n, std::min<int64_t>(chunks, threads), fn, ctx);
      return;
    }
    // Another thread's job holds the workers: this call runs on its own thread.
  }
  fn(ctx, 0, n);
}

}  // namespace detail

}  // namespace dayzero::executor
