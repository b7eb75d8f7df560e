// parallel_for: a fixed number of chunks handed out to std::thread workers through an
// atomic counter (the calling thread works too). Threads are started per call: the
// interpreter's jobs are large, so starting them costs little next to the work.
#include "ir/parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "ir/error.h"

namespace kiln::ir {

namespace {

constexpr double kSerialWork = 1 << 16;  // below this, starting threads costs more than it saves
constexpr double kChunkWork = 1 << 14;   // the least work worth a chunk of its own
constexpr int64_t kChunksPerThread = 4;  // a few chunks per thread even out uneven chunks
constexpr int kMaxThreads = 1024;

std::atomic<int> thread_override{0};
thread_local bool inside_parallel_for = false;

int threads_from_environment() {
  const char* text = std::getenv("KILN_THREADS");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (*end != '\0' || n < 1 || n > kMaxThreads)
    throw Error(fmt::format("KILN_THREADS must be an integer from 1 to {}, got '{}'", kMaxThreads, text));
  return static_cast<int>(n);
}

int default_thread_count() {
  static const int count = [] {
    if (int n = threads_from_environment()) return n;
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(std::min<unsigned>(hw, kMaxThreads));
  }();
  return count;
}

}  // namespace

int thread_count() {
  const int n = thread_override.load(std::memory_order_relaxed);
  return n > 0 ? n : default_thread_count();
}

void set_thread_count(int threads) {
  if (threads < 0 || threads > kMaxThreads)
    throw Error(fmt::format("set_thread_count: {} threads is outside 0..{}", threads, kMaxThreads));
  thread_override.store(threads, std::memory_order_relaxed);
}

void parallel_for(int64_t n, int64_t cost, const std::function<void(int64_t begin, int64_t end)>& body) {
  if (n <= 0) return;
  const double work = static_cast<double>(n) * static_cast<double>(std::max<int64_t>(cost, 1));
  const int threads = inside_parallel_for ? 1 : thread_count();
  if (threads <= 1 || n == 1 || work < kSerialWork) {
    body(0, n);
    return;
  }
  const int64_t by_work = static_cast<int64_t>(std::max(1.0, work / kChunkWork));
  const int64_t chunks = std::min({n, threads * kChunksPerThread, by_work});
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  const int64_t per_chunk = n / chunks, longer = n % chunks;  // the first `longer` chunks take one more item
  auto chunk_begin = [&](int64_t c) { return c * per_chunk + std::min(c, longer); };

  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work_loop = [&] {
    const bool was_inside = inside_parallel_for;
    inside_parallel_for = true;
    for (int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
      try {
        body(chunk_begin(c), chunk_begin(c + 1));
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next.store(chunks);  // the others stop after their current chunk
      }
    }
    inside_parallel_for = was_inside;
  };

  std::vector<std::thread> workers;
  const int64_t helpers = std::min<int64_t>(threads, chunks) - 1;
  workers.reserve(static_cast<size_t>(helpers));
  for (int64_t i = 0; i < helpers; ++i) {
    try {
      workers.emplace_back(work_loop);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones started (and this one) share the chunks
    }
  }
  work_loop();
  for (std::thread& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kiln::ir
