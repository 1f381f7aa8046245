// kernels/cores/conv2d_tf32x3/conv2d_core.cuh's few_channels_group, run on the host: what
// conv2d_few_channels_kernel assumes of its channel groups, over random conv geometries.
//   - it runs only for C_out <= kFewMaxChannels over at least kFewMinPixels output pixels;
//   - its group (kCo 2, 4 or 8) holds all the channels up to 8, and the groups cover C_out with
//     less than one group idle;
//   - the group's weights fit the block's shared memory, and the grid's x dimension holds
//     N x pixel tiles.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "kernels/cores/conv2d_tf32x3/conv2d_core.cuh"
#include "tests/host_cuda/conv2d_geometry.h"

namespace kb::custom::conv2d_tf32x3 {
namespace {

TEST(Conv2dFewChannelsPlan, GroupsCoverTheChannelsWithinSharedMemory) {
  std::mt19937_64 rng(40);
  int taken = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const ConvGeometry g = conv3x3(1 + rng() % 128, 1 + rng() % 400, 1 + rng() % 80,
                                   3 + rng() % 200, 3 + rng() % (trial % 2 ? 8 : 200));
    SCOPED_TRACE(testing::Message()
                 << g.n << " x " << g.c_in << " -> " << g.c_out << ", " << g.h << " x " << g.w);
    const int co = few_channels_group(g);
    if (co == 0) continue;
    ++taken;
    ASSERT_TRUE(co == 2 || co == 4 || co == 8) << co;
    if (g.c_out <= kFewMaxChannels) {
      EXPECT_GE(int64_t{g.n} * g.hw_out(), kFewMinPixels);
    } else {  // thin planes: one pixel tile an image
      EXPECT_LE(g.c_out, kFewMaxPlaneChannels);
      EXPECT_LE(g.hw_out(), kBN);
      EXPECT_GE(int64_t{g.n} * g.hw_out() * ((g.c_out + co - 1) / co), 2 * kFewMinPixels);
    }
    const int groups = (g.c_out + co - 1) / co;
    EXPECT_GE(groups * co, g.c_out);
    EXPECT_LT((groups - 1) * co, g.c_out) << "a whole group idle";
    if (g.c_out <= 8) EXPECT_EQ(groups, 1);
    EXPECT_LE(int64_t{4} * g.k() * co, kFewWeightsMaxBytes);
    EXPECT_LT(int64_t{g.n} * g.pix_tiles(), int64_t{1} << 31);
  }
  EXPECT_GT(taken, 1000);
}

TEST(Conv2dFewChannelsPlan, TheSweepsShapes) {
  // L2_001's miss in the mixed sweep (seed 77, H100: 0.296 ms on the tile, reference 0.144).
  EXPECT_EQ(few_channels_group(conv3x3(29, 55, 2, 79, 51)), 2);
  EXPECT_EQ(few_channels_group(conv3x3(3, 9, 13, 65, 47)), 8);        // two groups, one partial
  EXPECT_EQ(few_channels_group(conv3x3(9, 7, 3, 40, 33)), 4);         // 10,602 pixels
  EXPECT_EQ(few_channels_group(conv3x3(128, 64, 128, 128, 128)), 0);  // the full preset
  EXPECT_EQ(few_channels_group(conv3x3(89, 47, 3, 5, 9)), 0);         // 21 pixels an image: too few
  EXPECT_EQ(few_channels_group(conv3x3(64, 1400, 8, 40, 40)), 0);     // 403 KB of weights a group
  // Thin planes: L2_017's miss (seed 77: 75 pixels an image, C_out 63 in 8 groups, 31,800 threads;
  // since session 50 the flat tile's, which Conv2dTf32x3 tries first).
  EXPECT_EQ(few_channels_group(conv3x3(53, 62, 63, 77, 3)), 8);
  EXPECT_EQ(few_channels_group(conv3x3(53, 62, 63, 77, 13)), 0);  // 825 pixels an image
  EXPECT_EQ(few_channels_group(conv3x3(53, 62, 65, 77, 3)), 0);   // past 64 channels
  EXPECT_EQ(few_channels_group(conv3x3(20, 62, 63, 77, 3)), 0);   // 12,000 threads
}

}  // namespace
}  // namespace kb::custom::conv2d_tf32x3
