// kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/thin.cuh's takes() and plan(), run on
// the host: what thin_kernel assumes of its grid, over the shapes takes() accepts.
//   - channel groups: co_groups x group_co covers C_out with no empty group, group_co <= 8 (the
//     kernel's template argument), co_groups <= 8;
//   - channel splits: a power of two, at most kMaxSplits and C_in, each group of whole warps;
//   - tiles: each image's pooled windows covered by tiles of kThreads / splits windows, none
//     empty;
//   - takes(): 3x3 with dilation 1 only; pooled widths up to kMaxWpNarrowCo for C_out <= 16, up to
//     kMaxWp past that, and only while N 2Hp 2Wp C_out <= kMaxWideOutputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/thin.cuh"

namespace kb::custom::L2_010::thin {
namespace {

constexpr int kSms = 132;

TEST(L2010ThinPlan, GroupsSplitsAndTilesFitTheKernel) {
  std::mt19937_64 rng(39);
  int taken = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 130), c_in = 1 + static_cast<int>(rng() % 70);
    const int c_out = 1 + static_cast<int>(rng() % 70), h = 2 + static_cast<int>(rng() % 300);
    const int w = 2 + static_cast<int>(rng() % 70);  // pooled widths 1 .. 35
    const int hp = h / 2, wp = w / 2;
    SCOPED_TRACE(testing::Message()
                 << n << " x " << c_in << " -> " << c_out << ", " << h << " x " << w);
    if (!takes(3, 3, 1, n, c_out, hp, wp)) {
      EXPECT_TRUE(c_out <= kMaxCo ? wp > kMaxWpNarrowCo
                                  : wp > kMaxWp || c_out > kMaxWideCo ||
                                        int64_t{n} * 4 * hp * wp * c_out > kMaxWideOutputs);
      continue;
    }
    ++taken;
    EXPECT_LE(wp, c_out <= kMaxCo ? kMaxWpNarrowCo : kMaxWp);
    if (c_out > kMaxCo) {
      EXPECT_LE(c_out, kMaxWideCo);
      EXPECT_LE(int64_t{n} * 4 * hp * wp * c_out, kMaxWideOutputs);
    }
    Result<narrow3x3::Args> r = plan(n, c_in, c_out, h, w, 1, 1, hp, wp, kSms, -1.f, 1.f);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    const narrow3x3::Args& a = r.value();
    EXPECT_GE(a.group_co, 1);
    EXPECT_LE(a.group_co, kGroupCo);
    EXPECT_LE(a.co_groups, 8);
    EXPECT_GE(a.co_groups * a.group_co, c_out);
    EXPECT_LT((a.co_groups - 1) * a.group_co, c_out);  // no empty channel group
    EXPECT_EQ(a.splits & (a.splits - 1), 0);
    EXPECT_LE(a.splits, kMaxSplits);
    EXPECT_TRUE(a.splits == 1 || a.splits <= c_in);
    EXPECT_EQ(kThreads / a.splits % 32, 0);
    const int64_t windows = int64_t{hp} * wp, per_block = kThreads / a.splits;
    EXPECT_GE(int64_t{a.tiles} * per_block, windows);
    EXPECT_LT(int64_t{a.tiles - 1} * per_block, windows);  // no empty tile
  }
  EXPECT_GT(taken, 4000);  // ~25% of these draws (a Python emulation)
}

TEST(L2010ThinPlan, TakesOnlyItsGeometry) {
  EXPECT_TRUE(takes(3, 3, 1, 124, 3, 119, 1));   // N 124, C_in 25, C_out 3, 239 x 3
  EXPECT_TRUE(takes(3, 3, 1, 2, 58, 108, 2));    // N 2, C_in 62, C_out 58, 217 x 5
  EXPECT_FALSE(takes(3, 3, 2, 2, 8, 10, 2));     // dilation 2
  EXPECT_FALSE(takes(5, 5, 1, 2, 8, 10, 2));     // 5x5
  EXPECT_TRUE(takes(3, 3, 1, 101, 1, 123, 17));  // N 101, C_in 54, C_out 1, 247 x 35 (seed 54)
  EXPECT_TRUE(takes(3, 3, 1, 2, 16, 10, kMaxWpNarrowCo));
  EXPECT_FALSE(takes(3, 3, 1, 2, 16, 10, kMaxWpNarrowCo + 1));
  EXPECT_FALSE(takes(3, 3, 1, 2, 17, 10, kMaxWp + 1));
  EXPECT_FALSE(takes(3, 3, 1, 1, kMaxWideCo + 1, 2, 1));
  EXPECT_FALSE(takes(3, 3, 1, 128, 64, 128, 7));  // 29 M outputs: the tensor paths
}

}  // namespace
}  // namespace kb::custom::L2_010::thin
