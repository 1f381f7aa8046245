// kernels/L1_003_batched_matmul/fma_tile.cuh's tall tile, run on the host: which products take
// it (the shapes session 43 measured on either side of the rule), that it runs unsplit where it
// is taken on 132 SMs (custom.cu plans its splits toward one CTA an SM), that its loader's
// copies fit, and that it refuses products wider than its columns.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "kernels/L1_003_batched_matmul/fma_tile.cuh"

namespace kb::custom::L1_003::small {
namespace {

constexpr int kSms = 132;

TEST(L1003TallTile, TakenWhereMeasuredFaster) {
  struct Shape {
    int64_t batch, m, n;
  };
  for (const Shape s :
       {Shape{84, 401, 27}, Shape{84, 401, 13}, Shape{128, 512, 32}, Shape{16, 2048, 17},
        Shape{32, 1000, 20}, Shape{129, 255, 27}, Shape{130, 383, 28}}) {
    SCOPED_TRACE(testing::Message() << s.batch << " x " << s.m << " x " << s.n);
    EXPECT_TRUE(takes_tall_tile(s.batch, s.m, s.n));
    EXPECT_EQ(fma_tile_rows(s.batch, s.m, s.n), kTall);
  }
  // Slower there (padding 1.2 and 1.33, too few rows), or not a 32-column product.
  for (const Shape s : {Shape{100, 313, 27}, Shape{100, 313, 13}, Shape{200, 130, 9},
                        Shape{50, 401, 27}, Shape{64, 200, 24}, Shape{10, 777, 31},
                        Shape{7, 301, 31}, Shape{128, 512, 33}, Shape{4096, 64, 8}}) {
    SCOPED_TRACE(testing::Message() << s.batch << " x " << s.m << " x " << s.n);
    EXPECT_FALSE(takes_tall_tile(s.batch, s.m, s.n));
  }
  EXPECT_EQ(fma_tile_rows(2000, 30, 20), kShort);
}

TEST(L1003TallTile, UnsplitWhereTaken) {
  std::mt19937_64 rng(43);
  int taken = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t batch = 1 + static_cast<int64_t>(rng() % 300);
    const int64_t m = 65 + static_cast<int64_t>(rng() % 4000);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 4000);
    const int64_t n = 1 + static_cast<int64_t>(rng() % 32);
    if (!takes_tall_tile(batch, m, n)) continue;
    ++taken;
    SCOPED_TRACE(testing::Message() << batch << " x " << m << " x " << k << " x " << n);
    EXPECT_GE(batch * ((m + kTall - 1) / kTall), kTallMinTiles);
    EXPECT_EQ(plan_split_k(batch, m, k, n, kSms, fma_split_rule(kTall, kShort)).splits, 1);
  }
  EXPECT_GT(taken, 1000);
}

// The other tiles keep the rule they had before the tall tile: toward four 64 x 64 tiles'
// threads an SM, at least 4 k-steps a split.
TEST(L1003TallTile, OtherTilesSplitAsBefore) {
  EXPECT_EQ(fma_split_rule(kTile, kTile).ctas_per_sm, 4);
  EXPECT_EQ(fma_split_rule(kShort, kTile).ctas_per_sm, 8);
  EXPECT_EQ(fma_split_rule(kTile, kShort).ctas_per_sm, 8);
  EXPECT_EQ(fma_split_rule(kShort, kShort).ctas_per_sm, 16);
  EXPECT_EQ(fma_split_rule(kTall, kShort).ctas_per_sm, 1);
  for (const int rows : {kShort, kTile, kTall}) {
    EXPECT_EQ(fma_split_rule(rows, kShort).min_k_tiles, 4);
    EXPECT_EQ(fma_split_rule(rows, kShort).k_tile, kStep);
    EXPECT_EQ(fma_split_rule(rows, kShort).tile_m, rows);
  }
}

TEST(L1003TallTile, ThreadsAndCopiesFit) {
  static_assert(kThreadsOf<kTall, kShort> == 128 && kRowsPerThread<kTall> == 8);
  static_assert(kThreadsOf<kTile, kTile> == 256 && kRowsPerThread<kTile> == kPer);
  using Plain = StageLoader<kTall, kShort, false>;
  using Vec = StageLoader<kTall, kShort, true>;
  EXPECT_EQ(Plain::kLoadsA, 16);  // A rows x 16 k over 128 threads, within row_ok's 32 bits
  EXPECT_EQ(Plain::kLoadsB * Plain::kKStride, kStep);
  EXPECT_EQ(Vec::kLoadsB * Vec::kKStride, kStep);
  EXPECT_EQ((kMinBlocksOf<kTall, kShort> * kThreadsOf<kTall, kShort>), 512);  // 128 registers
}

// The tall tile covers kShort columns: asked for a wider product it refuses before any launch
// (this runs without a GPU: no CUDA call is made).
TEST(L1003TallTile, RefusesWiderProducts) {
  GemmArgs p{};
  p.m = 401;
  p.n = kShort + 1;
  p.k = 661;
  EXPECT_EQ(launch_fma_bmm(p, kTall, 1, 84, false, false, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace kb::custom::L1_003::small
