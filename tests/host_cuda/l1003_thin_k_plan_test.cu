// kernels/L1_003_batched_matmul/thin_k.cuh's launch plan, run on the host: what the thin-K
// kernel assumes of its columns, lanes and rows a CTA, over random thin-K products.
//   - a thread's B registers (cols_per_thread(K) x K) stay at most 32 floats;
//   - the lanes are a power of two from one warp to kThreads (kFewRowLanes at M <= kFewRows), a
//     CTA's columns (lanes x cols) reach min(N, kWideTileCols) unless the lanes are at that
//     bound, and no other lanes of those reaching it leave fewer columns idle in the last tile;
//   - plan_thin_k's rows: first a power of two from max(one pass of the CTA's threads, K / 2) to
//     kMaxRows, at kMaxRows or at that floor whenever the grid would have fewer than
//     kMinCtasPerSm CTAs an SM; then M shared evenly among as many CTAs, in whole passes (no
//     CTA more than one pass over another's share), and fits() for the grid's y dimension;
//   - staging only at N not a multiple of 4, 4 columns a thread, and more than one column tile
//     or a CTA's kStagedMinCtaFloats of one tile of at least 128 lanes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "kernels/L1_003_batched_matmul/thin_k.cuh"

namespace kb::custom::L1_003::thin {
namespace {

constexpr int kSms = 132;

int64_t row_tiles(int64_t m, int rows) {
  return (m + rows - 1) / rows;
}

int64_t ctas(int64_t batch, int64_t m, int64_t k, int64_t n, int rows) {
  const int64_t tile_cols = int64_t{lanes_for(m, k, n)} * cols_per_thread(k);
  return (n + tile_cols - 1) / tile_cols * ((m + rows - 1) / rows) * batch;
}

int64_t idle_columns(int lanes, int64_t k, int64_t n) {
  const int64_t tile = int64_t{lanes} * cols_per_thread(k);
  return (n + tile - 1) / tile * tile - n;
}

TEST(L1003ThinKPlan, ColumnsLanesAndRowsFitTheKernel) {
  std::mt19937_64 rng(39);
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t batch = 1 + static_cast<int64_t>(rng() % 200);
    const int64_t m = 1 + static_cast<int64_t>(rng() % 5000);
    const int64_t k = static_cast<int64_t>(rng() % (kMaxK + 1));
    const int64_t n = 1 + static_cast<int64_t>(rng() % 5000);
    SCOPED_TRACE(testing::Message() << batch << " x " << m << " x " << k << " x " << n);
    EXPECT_LE(cols_per_thread(k) * k, 32);
    const int lanes = lanes_for(m, k, n);
    const int max_lanes = m <= kFewRows ? kFewRowLanes : kThreads;
    EXPECT_GE(lanes, 32);
    EXPECT_LE(lanes, max_lanes);
    EXPECT_EQ(lanes & (lanes - 1), 0);
    const int64_t wide = std::min<int64_t>(n, kWideTileCols);
    if (lanes < max_lanes) EXPECT_GE(int64_t{lanes} * cols_per_thread(k), wide);
    for (int other = 32; other <= max_lanes; other *= 2) {
      if (other != lanes && int64_t{other} * cols_per_thread(k) >= wide)
        EXPECT_GE(idle_columns(other, k, n), idle_columns(lanes, k, n)) << other << " lanes";
    }
    const ThinPlan plan = plan_thin_k(batch, m, k, n, kSms);
    EXPECT_EQ(plan.lanes, lanes);
    // Some power of two P from the floor to kMaxRows, kMaxRows or the floor whenever the grid
    // of P rows a CTA would be short of CTAs, whose row tiles plan.rows shares evenly.
    const int pass = kThreads / lanes;
    const int floor_rows = std::min(kMaxRows, std::max<int>(pass, static_cast<int>((k + 1) / 2)));
    const int64_t target = int64_t{kMinCtasPerSm} * kSms;
    bool found = false;
    for (int p = 1; p <= kMaxRows; p *= 2) {
      if (p < floor_rows || even_rows(m, p, pass) != plan.rows) continue;
      const bool halved_while_short = p == kMaxRows || ctas(batch, m, k, n, 2 * p) < target;
      const bool stopped = p / 2 < floor_rows || ctas(batch, m, k, n, p) >= target;
      found = found || (halved_while_short && stopped);
    }
    EXPECT_TRUE(found) << plan.rows << " rows";
    EXPECT_LE(plan.rows, kMaxRows);
    EXPECT_EQ(plan.rows % pass, 0);
    const int64_t tile_cols = int64_t{lanes} * cols_per_thread(k);
    const bool much_of_one_tile = lanes >= 128 && int64_t{plan.rows} * n >= kStagedMinCtaFloats;
    EXPECT_EQ(plan.staged,
              n % 4 != 0 && cols_per_thread(k) == 4 && (n > tile_cols || much_of_one_tile));
    EXPECT_EQ(fits(m, plan.rows), row_tiles(m, plan.rows) <= 65535);
  }
}

TEST(L1003ThinKPlan, EvenRowsShareTheRowTiles) {
  for (int64_t m = 1; m <= 3000; ++m) {
    for (int rows = 1; rows <= kMaxRows; rows *= 2) {
      for (int pass = 1; pass <= rows; pass *= 2) {
        SCOPED_TRACE(testing::Message() << m << " rows, " << rows << " a CTA, passes of " << pass);
        const int even = even_rows(m, rows, pass);
        EXPECT_EQ(even % pass, 0);
        EXPECT_LE(even, rows);
        EXPECT_EQ(row_tiles(m, even), row_tiles(m, rows));
        EXPECT_LT(even - pass, (m + row_tiles(m, rows) - 1) / row_tiles(m, rows));
      }
    }
  }
}

TEST(L1003ThinKPlan, TheMixedSweepsShapes) {
  // 97 x 431 x 5 x 1357 (seed 77's): 4 columns a thread; three tiles of 512 columns (128 lanes)
  // leave 179 idle, two of 1,024 691; 7 row tiles of 64 shared as 62 (passes of 2); staged.
  EXPECT_EQ(cols_per_thread(5), 4);
  EXPECT_EQ(lanes_for(431, 5, 1357), 128);
  EXPECT_EQ(plan_thin_k(97, 431, 5, 1357, kSms).rows, 62);
  EXPECT_TRUE(plan_thin_k(97, 431, 5, 1357, kSms).staged);
  // 79 x 397 x 5 x 1291 (seed 2027's): the same, 128 lanes. At N 2,048 both fill: the wider.
  EXPECT_EQ(lanes_for(397, 5, 1291), 128);
  EXPECT_EQ(lanes_for(512, 5, 2048), 256);
  EXPECT_EQ(lanes_for(512, 5, 1000), 256);  // one tile of 1,024 or two of 512: the wider
  // 5 x 97 x 5 x 301: 128 lanes, one column tile; 10 CTAs of 64 rows: down to 4 rows (K / 2
  // rounded up is 3), not one pass of 2.
  EXPECT_EQ(lanes_for(97, 5, 301), 128);
  EXPECT_EQ(plan_thin_k(5, 97, 5, 301, kSms).rows, 4);
  // 1 x 509 x 15 x 1881 (seed 123's): 256 lanes of 2 columns, 8 rows (not 2: K / 2).
  EXPECT_EQ(cols_per_thread(16), 2);
  EXPECT_EQ(lanes_for(509, 15, 1881), 256);
  EXPECT_EQ(plan_thin_k(1, 509, 15, 1881, kSms).rows, 8);
  EXPECT_EQ(lanes_for(4096, 16, 4096), 256);
  // 120 x 323 x 7 x 249: 64 lanes (one tile of 256 columns), 720 CTAs of 56 rows (6 of 64
  // would leave one of 3); in place (one tile spans N).
  EXPECT_EQ(lanes_for(323, 7, 249), 64);
  EXPECT_EQ(plan_thin_k(120, 323, 7, 249, kSms).rows, 56);
  EXPECT_FALSE(plan_thin_k(120, 323, 7, 249, kSms).staged);
  // One tile: staged where a CTA writes >= kStagedMinCtaFloats at >= 128 lanes (session 53's
  // measured winners and losers, thin_k.cuh's stages_rows).
  EXPECT_FALSE(plan_thin_k(64, 70, 5, 999, kSms).staged);    // 8 rows x 999
  EXPECT_FALSE(plan_thin_k(200, 77, 3, 501, kSms).staged);   // 26 x 501 = 13,026
  EXPECT_FALSE(plan_thin_k(50, 200, 4, 777, kSms).staged);   // 16 x 777
  EXPECT_FALSE(plan_thin_k(400, 100, 3, 249, kSms).staged);  // 64 lanes
  EXPECT_TRUE(plan_thin_k(100, 300, 5, 501, kSms).staged);   // 30 x 501 = 15,030
  EXPECT_TRUE(plan_thin_k(16, 1000, 3, 1001, kSms).staged);  // 16 x 1001
  EXPECT_TRUE(plan_thin_k(200, 77, 3, 1001, kSms).staged);   // 26 x 1001
  // 65 x 7 x 9 x 1399 (seed 99's, few rows): 64 lanes of 2 columns, passes of 4 rows.
  EXPECT_EQ(lanes_for(7, 9, 1399), kFewRowLanes);
}

}  // namespace
}  // namespace kb::custom::L1_003::thin
