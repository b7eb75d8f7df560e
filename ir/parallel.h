// A small parallel-for for the reference interpreter and HostTensor conversions:
// splits [0, n) into contiguous chunks run on std::thread workers. Callers make every
// item's result depend on the item alone, so results are the same for any number of
// threads; only the split changes.
#pragma once
#include <cstdint>
#include <functional>

namespace kiln::ir {

// The number of threads parallel_for uses: set_thread_count's value when set, else
// KILN_THREADS when it holds a positive integer, else std::thread::hardware_concurrency.
int thread_count();

// Overrides thread_count for this process (tests compare 1 thread with many);
// 0 restores the default.
void set_thread_count(int threads);

// Calls body(begin, end) on disjoint chunks covering [0, n), from several threads at
// once. `cost` is a rough amount of work per item (e.g. elements touched): small jobs
// run on the calling thread, and no chunk is much smaller than ~16K units of work.
// A parallel_for inside a body runs serially. The first exception a body throws is
// rethrown here after every worker has stopped.
void parallel_for(int64_t n, int64_t cost, const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace kiln::ir
