// kernels/L1_003_batched_matmul/thin_k.cuh's launch plan, run on the host: what the thin-K
// kernel assumes of its columns, lanes and rows a CTA, over random thin-K products.
//   - a thread's B registers (cols_per_thread(K) x K) stay at most 32 floats;
//   - the lanes are a power of two from one warp to kThreads, and a CTA's columns (lanes x cols)
//     reach N unless the lanes are at kThreads;
//   - rows_for: a power of two from one pass of the CTA's threads (kThreads / lanes) to
//     kMaxRows, at kMaxRows or at that pass whenever the grid would have fewer than
//     kMinCtasPerSm CTAs an SM, and fits() for the grid's y dimension.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "kernels/L1_003_batched_matmul/thin_k.cuh"

namespace kb::custom::L1_003::thin {
namespace {

constexpr int kSms = 132;

int64_t ctas(int64_t batch, int64_t m, int64_t k, int64_t n, int rows) {
  const int64_t tile_cols = int64_t{lanes_for(k, n)} * cols_per_thread(k);
  return (n + tile_cols - 1) / tile_cols * ((m + rows - 1) / rows) * batch;
}

TEST(L1003ThinKPlan, ColumnsLanesAndRowsFitTheKernel) {
  std::mt19937_64 rng(39);
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t batch = 1 + static_cast<int64_t>(rng() % 200);
    const int64_t m = 17 + static_cast<int64_t>(rng() % 5000);
    const int64_t k = static_cast<int64_t>(rng() % (kMaxK + 1));
    const int64_t n = 1 + static_cast<int64_t>(rng() % 5000);
    SCOPED_TRACE(testing::Message() << batch << " x " << m << " x " << k << " x " << n);
    EXPECT_LE(cols_per_thread(k) * k, 32);
    const int lanes = lanes_for(k, n);
    EXPECT_GE(lanes, 32);
    EXPECT_LE(lanes, kThreads);
    EXPECT_EQ(lanes & (lanes - 1), 0);
    if (lanes < kThreads) EXPECT_GE(int64_t{lanes} * cols_per_thread(k), n);
    if (lanes > 32) EXPECT_LT(int64_t{lanes / 2} * cols_per_thread(k), n);  // the smallest
    const int rows = rows_for(batch, m, k, n, kSms);
    EXPECT_EQ(rows & (rows - 1), 0);
    EXPECT_GE(rows, kThreads / lanes);
    EXPECT_LE(rows, kMaxRows);
    if (rows < kMaxRows) {  // halved only while the grid was short of CTAs
      EXPECT_LT(ctas(batch, m, k, n, 2 * rows), int64_t{kMinCtasPerSm} * kSms);
    }
    if (rows > kThreads / lanes && rows < kMaxRows) {
      EXPECT_GE(ctas(batch, m, k, n, rows), int64_t{kMinCtasPerSm} * kSms);
    }
    EXPECT_EQ(fits(m, rows), (m + rows - 1) / rows <= 65535);
  }
}

TEST(L1003ThinKPlan, TheMixedSweepsShapes) {
  // 97 x 431 x 5 x 1357: 4 columns a thread, 256 lanes (two column tiles), 64 rows.
  EXPECT_EQ(cols_per_thread(5), 4);
  EXPECT_EQ(lanes_for(5, 1357), 256);
  EXPECT_EQ(rows_for(97, 431, 5, 1357, kSms), kMaxRows);
  // 5 x 97 x 5 x 301: 128 lanes, one column tile; 10 CTAs of 64 rows: down to one pass of 2 rows.
  EXPECT_EQ(lanes_for(5, 301), 128);
  EXPECT_EQ(rows_for(5, 97, 5, 301, kSms), 2);
  // K 16: two columns a thread.
  EXPECT_EQ(cols_per_thread(16), 2);
  EXPECT_EQ(lanes_for(16, 4096), 256);
}

}  // namespace
}  // namespace kb::custom::L1_003::thin
