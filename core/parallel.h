#pragma once
// Work over [0, n) on a pool of threads, the way the search evaluates plans: blocks
// taken in order by whichever worker is free (one atomic counter, touched once per
// block), so that workers finish together however uneven the blocks' costs are, and
// progress reported from the calling thread. A worker's exception never reaches std::terminate: the first
// one stops the other workers at their next block and is rethrown on the caller's
// thread, after every worker has joined.

#include <atomic>
#include <cstddef>
#include <functional>

namespace dayzero::core {

// body(worker, begin, end) handles items [begin, end); progress(done), when set, is
// called on the calling thread about every 100 ms until the workers are done. When
// `cancel` is set (by anyone), workers take no further block: the caller sees it set.
void parallel_blocks(size_t n, int threads, size_t block,
                     const std::function<void(int worker, size_t begin, size_t end)>& body,
                     const std::function<void(size_t done)>& progress = {}, const std::atomic<bool>* cancel = nullptr);

}  // namespace dayzero::core
