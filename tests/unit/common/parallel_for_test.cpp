// parallel_for and parallel_reduce (common/parallel_for.h): every element once, results that do
// not depend on the thread count, and a body's exception back in the caller.
#include "common/parallel_for.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace kb {
namespace {

// Restores the default thread count however a test ends.
struct Threads {
  explicit Threads(int n) { set_parallel_threads(n); }
  ~Threads() { set_parallel_threads(0); }
};

TEST(ParallelFor, VisitsEveryElementOnceAtEveryThreadCount) {
  for (int threads : {1, 2, 3, 8}) {
    const Threads scope(threads);
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{100003}}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      parallel_for(
          n,
          [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) seen[static_cast<size_t>(i)]++;
          },
          997);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << threads << " threads, n " << n;
      }
    }
  }
}

// A float sum rounds differently in another order: combined in chunk order, it is the same at
// every thread count. A maximum and a count equal the serial loop's.
TEST(ParallelFor, ReductionsAreTheSameAtEveryThreadCount) {
  std::vector<double> v(300001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<double>(i)) * 1e3 + 1e-7;
  const auto n = static_cast<int64_t>(v.size());
  auto sum = [&] {
    return parallel_reduce(
        n, 0.0,
        [&](int64_t b, int64_t e) {
          double s = 0;
          for (int64_t i = b; i < e; ++i) s += v[static_cast<size_t>(i)];
          return s;
        },
        [](double a, double b) { return a + b; }, 4096);
  };
  auto max_and_count = [&] {
    return parallel_reduce(
        n, std::pair<double, int64_t>{-INFINITY, 0},
        [&](int64_t b, int64_t e) {
          std::pair<double, int64_t> r{-INFINITY, 0};
          for (int64_t i = b; i < e; ++i) {
            r.first = std::max(r.first, v[static_cast<size_t>(i)]);
            r.second += v[static_cast<size_t>(i)] > 0;
          }
          return r;
        },
        [](auto a, auto b) {
          return std::pair<double, int64_t>{std::max(a.first, b.first), a.second + b.second};
        },
        4096);
  };
  std::pair<double, int64_t> serial{-INFINITY, 0};
  for (double x : v) {
    serial.first = std::max(serial.first, x);
    serial.second += x > 0;
  }
  double one_thread_sum = 0;
  {
    const Threads scope(1);
    one_thread_sum = sum();
    EXPECT_EQ(max_and_count(), serial);
  }
  for (int threads : {2, 3, 8}) {
    const Threads scope(threads);
    EXPECT_EQ(sum(), one_thread_sum) << threads << " threads";  // bit for bit
    EXPECT_EQ(max_and_count(), serial) << threads << " threads";
  }
}

TEST(ParallelFor, ABodysExceptionReachesTheCaller) {
  const Threads scope(4);
  EXPECT_THROW(parallel_for(
                   100000,
                   [](int64_t begin, int64_t) {
                     if (begin >= 50000) throw std::runtime_error("chunk failed");
                   },
                   1000),
               std::runtime_error);
}

TEST(ParallelFor, ThreadCountIsSetOrTheHardwares) {
  EXPECT_GE(parallel_threads(), 1);
  const Threads scope(5);
  EXPECT_EQ(parallel_threads(), 5);
}

}  // namespace
}  // namespace kb
