// kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/wgmma_rows.cuh's RowsConv::fits, run on the
// host: the wgmma path takes the full preset and its kind, but never groups of fewer than
// kMinGroupChannels channels (its sigmoids are approximate: activation.cuh), nor shapes outside
// its item.
#include <gtest/gtest.h>

#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/wgmma_rows.cuh"

namespace kb::custom::L2_021::rows {
namespace {

TEST(L2021RowsFits, TakesTheFullPresetAndItsKind) {
  EXPECT_TRUE(RowsConv::fits({128, 8, 32, 256, 256, 4}));  // GroupNorm(8, 32)
  EXPECT_TRUE(RowsConv::fits({2, 8, 24, 100, 98, 3}));     // 24 channels in 8 groups, W' 96
}

TEST(L2021RowsFits, NeverGroupsOfFewerThanThreeChannels) {
  EXPECT_FALSE(RowsConv::fits({128, 8, 32, 256, 256, 2}));
  EXPECT_FALSE(RowsConv::fits({128, 8, 32, 256, 256, 1}));
  EXPECT_FALSE(RowsConv::fits({2, 8, 24, 100, 98, 0}));
}

TEST(L2021RowsFits, NeverShapesOutsideItsItem) {
  EXPECT_FALSE(RowsConv::fits({2, 9, 32, 100, 100, 4}));  // C_in past 8
  EXPECT_FALSE(RowsConv::fits({2, 8, 33, 100, 100, 4}));  // C_out past 32
  EXPECT_FALSE(RowsConv::fits({2, 8, 16, 100, 100, 4}));  // C_out 16
  EXPECT_FALSE(RowsConv::fits({2, 8, 32, 100, 97, 4}));   // W' 95
}

}  // namespace
}  // namespace kb::custom::L2_021::rows
