// kernels/L1_003_batched_matmul/fma_tile.cuh, run on the host: which tile a product takes, the
// split-K rule of each tile, and that every tile's threads and copies fit its loader.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/L1_003_batched_matmul/fma_tile.cuh"

namespace kb::custom::L1_003::small {
namespace {

TEST(L1003FmaTile, ShortProductsTakeTheShortTiles) {
  EXPECT_EQ(fma_tile_rows(17), kShort);
  EXPECT_EQ(fma_tile_rows(kShort), kShort);
  EXPECT_EQ(fma_tile_rows(kShort + 1), kTile);
  EXPECT_EQ(fma_tile_cols(1), kShort);
  EXPECT_EQ(fma_tile_cols(kShort + 1), kTile);
}

// The grid's y dimension holds at most 65,535 row tiles (custom.cu routes larger M elsewhere).
TEST(L1003FmaTile, RowTilesFitTheGridsYDimension) {
  EXPECT_TRUE(row_tiles_fit(1));
  EXPECT_TRUE(row_tiles_fit(int64_t{kTile} * 65535));
  EXPECT_FALSE(row_tiles_fit(int64_t{kTile} * 65535 + 1));  // 1 x 4,194,241 x 5 x 5
  EXPECT_FALSE(row_tiles_fit(5000000));
}

// Toward four 64 x 64 tiles' threads an SM, at least 4 k-steps a split.
TEST(L1003FmaTile, SplitsTowardFourFullTilesThreadsAnSm) {
  EXPECT_EQ(fma_split_rule(kTile, kTile).ctas_per_sm, 4);
  EXPECT_EQ(fma_split_rule(kShort, kTile).ctas_per_sm, 8);
  EXPECT_EQ(fma_split_rule(kTile, kShort).ctas_per_sm, 8);
  EXPECT_EQ(fma_split_rule(kShort, kShort).ctas_per_sm, 16);
  EXPECT_EQ(fma_split_rule(kTile, kWide).ctas_per_sm, 2);  // the wide tile's (it never splits)
  for (const int rows : {kShort, kTile}) {
    EXPECT_EQ(fma_split_rule(rows, kShort).min_k_tiles, 4);
    EXPECT_EQ(fma_split_rule(rows, kShort).k_tile, kStep);
    EXPECT_EQ(fma_split_rule(rows, kShort).tile_m, rows);
  }
}

template <int kRows, int kCols>
void expect_loader_fits() {
  using Plain = StageLoader<kRows, kCols, false>;
  using Vec = StageLoader<kRows, kCols, true>;
  constexpr int kK = kStepOf<kRows, kCols>, kThreads = kThreadsOf<kRows, kCols>;
  EXPECT_EQ(Plain::kLoadsA * kThreads, kRows * kK);  // A: each float once
  EXPECT_LE(Plain::kLoadsA, 32);                     // row_ok's bits
  EXPECT_EQ(Plain::kLoadsB * Plain::kKStride, kK);
  EXPECT_EQ(Vec::kLoadsB * Vec::kKStride, kK);
  EXPECT_EQ(Plain::kLoadsB * kThreads, kK * kCols);    // B: each float once
  EXPECT_EQ(Vec::kLoadsB * kThreads * 4, kK * kCols);  // in float4s
  constexpr int kP = kPerOf<kRows, kCols>;
  EXPECT_EQ(kThreads * kP * kP, kRows * kCols);  // every output once (and out_index below)
  EXPECT_EQ(kStep % kK, 0);                      // a split (whole kStep ranges) ends on a stage
  // The registers a thread may use (65,536 an SM over kMinBlocksOf CTAs): 64 for 4 x 4 outputs,
  // 128 for the wide tile's 8 x 8.
  EXPECT_EQ(65536 / (kMinBlocksOf<kRows, kCols> * kThreads), kP == 8 ? 128 : 64);
}

TEST(L1003FmaTile, ThreadsAndCopiesFit) {
  static_assert(kThreadsOf<kTile, kTile> == 256 && kThreadsOf<kShort, kShort> == 64);
  static_assert(kThreadsOf<kTile, kWide> == 128);
  static_assert(kPerOf<kTile, kTile> == 4 && kPerOf<kTile, kWide> == 8);
  expect_loader_fits<kTile, kTile>();
  expect_loader_fits<kTile, kShort>();
  expect_loader_fits<kShort, kTile>();
  expect_loader_fits<kShort, kShort>();
  expect_loader_fits<kTile, kWide>();
}

// out_index: the threads of a tile own each of its outputs exactly once.
template <int kRows, int kCols>
void expect_outputs_once() {
  constexpr int kP = kPerOf<kRows, kCols>, kQuads = kQuadsOf<kRows, kCols>;
  constexpr int kThreadCols = kCols / kP;
  std::vector<int> owner(kRows * kCols, 0);
  for (int t = 0; t < kThreadsOf<kRows, kCols>; ++t) {
    const int tx = t % kThreadCols, ty = t / kThreadCols;
    for (int i = 0; i < kP; ++i)
      for (int j = 0; j < kP; ++j)
        ++owner[out_index<kRows, kQuads>(ty, i) * kCols + out_index<kCols, kQuads>(tx, j)];
  }
  for (const int count : owner) ASSERT_EQ(count, 1);
}

TEST(L1003FmaTile, ThreadsOwnEachOutputOnce) {
  expect_outputs_once<kTile, kTile>();
  expect_outputs_once<kShort, kTile>();
  expect_outputs_once<kTile, kShort>();
  expect_outputs_once<kShort, kShort>();
  expect_outputs_once<kTile, kWide>();
}

}  // namespace
}  // namespace kb::custom::L1_003::small
