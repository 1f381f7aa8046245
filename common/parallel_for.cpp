#include "common/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace kb {
namespace {

std::atomic<int> g_threads{0};  // 0: the hardware's

}  // namespace

int parallel_threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void set_parallel_threads(int n) {
  g_threads.store(std::max(0, n), std::memory_order_relaxed);
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body, int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  const int64_t threads = std::min<int64_t>(parallel_threads(), chunks);
  if (threads <= 1) {
    body(0, n);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (int64_t c = next.fetch_add(1); c < chunks; c = next.fetch_add(1)) {
        body(c * grain, std::min(n, (c + 1) * grain));
      }
    } catch (...) {
      next.store(chunks);  // the others stop after their current chunk
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace kb
