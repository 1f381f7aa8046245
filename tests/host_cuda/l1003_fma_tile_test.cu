// kernels/L1_003_batched_matmul/fma_tile.cuh, run on the host: which tile a product takes, the
// split-K rule of each tile, and that every tile's threads and copies fit its loader.
#include <gtest/gtest.h>

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

// Toward four 64 x 64 tiles' threads an SM, at least 4 k-steps a split.
TEST(L1003FmaTile, SplitsTowardFourFullTilesThreadsAnSm) {
  EXPECT_EQ(fma_split_rule(kTile, kTile).ctas_per_sm, 4);
  EXPECT_EQ(fma_split_rule(kShort, kTile).ctas_per_sm, 8);
  EXPECT_EQ(fma_split_rule(kTile, kShort).ctas_per_sm, 8);
  EXPECT_EQ(fma_split_rule(kShort, kShort).ctas_per_sm, 16);
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
  EXPECT_EQ((Plain::kLoadsA * kThreadsOf<kRows, kCols>), kRows * kStep);  // A: each float once
  EXPECT_LE(Plain::kLoadsA, 32);                                          // row_ok's bits
  EXPECT_EQ(Plain::kLoadsB * Plain::kKStride, kStep);
  EXPECT_EQ(Vec::kLoadsB * Vec::kKStride, kStep);
  EXPECT_EQ((kMinBlocksOf<kRows, kCols> * kThreadsOf<kRows, kCols>), 1024);  // 64 registers
}

TEST(L1003FmaTile, ThreadsAndCopiesFit) {
  static_assert(kThreadsOf<kTile, kTile> == 256 && kThreadsOf<kShort, kShort> == 64);
  expect_loader_fits<kTile, kTile>();
  expect_loader_fits<kTile, kShort>();
  expect_loader_fits<kShort, kTile>();
  expect_loader_fits<kShort, kShort>();
}

}  // namespace
}  // namespace kb::custom::L1_003::small
