#pragma once
// The CPU kernels' worker threads: one process-wide pool of kernel_threads() - 1
// persistent workers plus the calling thread. parallel_for splits [0, n) into
// contiguous chunks, one per thread, and runs small work inline (no thread hop).
// Idle workers poll for ~200 us before they sleep, so back-to-back kernels (decode)
// do not pay a wake-up each.
//
// Determinism is the kernels' side of the contract: they split work so that every
// output element is computed by exactly one chunk, by the same code in the same
// order whatever the chunking (executor/kernels.h), so results do not depend on
// the thread count. The pool only guarantees the chunk boundaries: for a fixed
// (n, work, kernel_threads()) they are always the same.
//
// Several threads may call parallel_for at once (e.g. two Runners in one process
// on different threads): one call at a time gets the workers, the others run
// inline on their own thread. A parallel_for inside a chunk runs inline.

#include <cstdint>
#include <exception>

namespace dayzero::executor {

// Threads the kernels use (>= 1). The default, computed once: env DAYZERO_THREADS
// when set (a positive integer; anything else throws std::invalid_argument naming
// it), else std::thread::hardware_concurrency() divided by the MPI ranks on this
// node (env OMPI_COMM_WORLD_LOCAL_SIZE, or MPI_LOCALNRANKS for MPICH; 1 without
// either), at least 1, and at most the CPUs this process may run on
// (sched_getaffinity: mpirun may bind a rank to one core).
int kernel_threads();
// Overrides the default for the whole process (n >= 1, else std::invalid_argument).
// Waits for a running parallel_for, then restarts the workers.
void set_kernel_threads(int n);
// The default above, recomputed from the environment now.
int default_kernel_threads();

// Work below which splitting does not pay: a chunk should cost at least this many
// work units (~ one float multiply-add each, ~0.07 ns in SSE2 Eigen, ~0.5 ns in
// scalar double loops) for the thread hop to be worth it. Measured on the 2-vCPU
// AMD EPYC (Zen 4) VM this was written on, multiply-adds over an L1-resident array
// split in 2 (tests/executor/test_threads.cpp ReportsWhenTwoThreadsPay, best of
// 300, machine otherwise idle): 51k units 3.6 -> 2.4 us, 205k 14.4 -> 8.4 us, 820k
// 57.6 -> 34.5 us; a polling worker picks a job up in ~1-2 us. A sleeping worker
// takes ~50-100 us to wake (the idle vCPU halts), but then the caller has claimed
// its chunks itself (see parallel_for), so small jobs lose little.
inline constexpr double kMinChunkWork = 50'000;

// How many chunks parallel_for(n, work_per_item, ...) uses: min(kernel_threads(),
// n, floor(n * work_per_item / kMinChunkWork)), at least 1 (0 when n <= 0).
int64_t parallel_chunks(int64_t n, double work_per_item);

// Calls fn(begin, end) on the chunks [n*c/k, n*(c+1)/k), c = 0..k-1, k =
// parallel_chunks(n, work_per_item), each once: the caller and the workers claim
// them in order (a worker late to wake leaves its chunks to the caller), so the
// bounds are fixed but not which thread runs which. Returns when all are done.
// An exception thrown by a chunk is rethrown here (the lowest chunk's, after every
// chunk has finished); no chunk is left running.
namespace detail {
using ChunkFn = void (*)(const void* ctx, int64_t begin, int64_t end);
void parallel_for_impl(int64_t n, double work_per_item, ChunkFn fn, const void* ctx);
}  // namespace detail

template <class Fn>
void parallel_for(int64_t n, double work_per_item, const Fn& fn) {
  detail::parallel_for_impl(
      n, work_per_item, [](const void* ctx, int64_t b, int64_t e) { (*static_cast<const Fn*>(ctx))(b, e); }, &fn);
}

}  // namespace dayzero::executor
