// Host loops over element ranges on several threads, with results that do not depend on the
// number of threads: `kb problems lint` and `kb-executor --lint` walk outputs of 10^8 elements and
// generate inputs of 2^28 on the host.
//
// [0, n) is cut into chunks of `grain` elements (the last one shorter) whatever the thread count;
// threads take chunks in turn. parallel_reduce combines the chunks' results in chunk order, left
// to right, so its result is the same at every thread count, and equal to the serial loop's
// whenever combining is exact (max, min with the first of equal values kept, counts).
//
// Thread safety: the functions may be called from any thread; `body` runs concurrently on
// disjoint ranges. The first exception a body throws is rethrown in the caller, after every
// thread has stopped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace kb {

constexpr int64_t kParallelGrain = int64_t{1} << 16;

// The threads a loop uses: set_parallel_threads's value, or std::thread::hardware_concurrency.
int parallel_threads();
// n >= 1 threads from now on (1: every loop runs serially in the caller); 0: the hardware's.
void set_parallel_threads(int n);

// body(begin, end) for each chunk of [0, n); on one thread, or when n <= grain, a single
// body(0, n) in the caller.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body,
                  int64_t grain = kParallelGrain);

// combine(...combine(combine(init, chunk(c0)), chunk(c1))..., chunk(cLast)) over the chunks.
template <typename T, typename Chunk, typename Combine>
T parallel_reduce(int64_t n, T init, Chunk chunk, Combine combine, int64_t grain = kParallelGrain) {
  const int64_t chunks = n <= 0 ? 0 : (n + grain - 1) / grain;
  std::vector<T> parts(static_cast<size_t>(chunks));
  parallel_for(
      chunks,
      [&](int64_t first, int64_t last) {
        for (int64_t c = first; c < last; ++c) {
          parts[static_cast<size_t>(c)] = chunk(c * grain, std::min(n, (c + 1) * grain));
        }
      },
      1);
  for (T& part : parts) init = combine(init, part);
  return init;
}

}  // namespace kb
