// A small parallel loop: runs fn(0) ... fn(n - 1) on a few worker threads and waits
// for all of them. Used to compile tuning candidates at once (NVRTC and the compile
// cache are thread-safe). Each call should catch its own errors; one that escapes is
// rethrown on the calling thread after every worker has stopped.
#pragma once
#include <cstddef>
#include <functional>

namespace kiln::runtime {

// `threads` <= 0: one per hardware thread. Never more threads than items.
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace kiln::runtime
