// kernels/L1_003_batched_matmul/split_plan.h on the host: the split-K plan covers K with
// non-empty ranges of whole k-tiles, aims at the rule's CTAs per SM (within one wave where the
// rule says so), keeps the workspace bound,
// and picks the split counts the L1_003 presets name (cluster_2, cluster_8, many_splits, mma_odd)
// for the FMA tile, and skinny_split for the rows kernel, on a 132-SM GPU.
#include "kernels/L1_003_batched_matmul/split_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace kb::custom::L1_003 {
namespace {

constexpr SplitRule kFma{64, 64, 16, 4, 4};           // fma_tile.cuh's tile and custom.cu's rule
constexpr SplitRule kFma32{32, 64, 16, 8, 4};         // its 32-row tile (M <= 32): 8 CTAs an SM
constexpr SplitRule kFmaNarrow{64, 32, 16, 8, 4};     // 32 columns (N <= 32): 8 CTAs an SM
constexpr SplitRule kFma32Narrow{32, 32, 16, 16, 4};  // both: 16
constexpr SplitRule kMmaSync{128, 128, 32, 2, 2};     // custom.cu's mma.sync rule
constexpr SplitRule kRows4{4, 32, 8, 4, 16};          // skinny_rows.cuh's rule at M <= 4
// narrow_tile.cuh's kSplitRule (its tile, kBK 32, within one wave; the .cu test there checks the
// rule itself, this file the plan's arithmetic on the host without CUDA headers)
constexpr SplitRule kNarrow{64, 32, 32, 4, 4, true};
constexpr int kSms = 132;  // H100 SXM and H200

TEST(L1003SplitPlan, PresetsGetTheSplitCountsTheirCommentsName) {
  EXPECT_EQ(plan_split_k(140, 17, 129, 65, kSms, kFma32).splits, 2);    // cluster_2
  const SplitPlan eight = plan_split_k(33, 20, 511, 70, kSms, kFma32);  // cluster_8
  EXPECT_EQ(eight.splits, 8);
  EXPECT_EQ(eight.k_split, 64);
  EXPECT_EQ(plan_split_k(1, 30, 2001, 7, kSms, kFma32Narrow).splits, 26);  // many_splits
  EXPECT_EQ(plan_split_k(40, 100, 1101, 5, kSms, kFmaNarrow).splits, 14);  // mma_odd
  EXPECT_EQ(plan_split_k(71, 43, 419, 255, kSms, kFma).splits, 2);         // seed 77's miss
  EXPECT_EQ(plan_split_k(2, 3, 2000, 45, kSms, kRows4).splits, 15);        // skinny_split
  EXPECT_EQ(plan_split_k(83, 3, 215, 201, kSms, kRows4).splits, 1);        // 581 CTAs: whole
}

TEST(L1003SplitPlan, WithinAWaveAGridPastHalfOfItStaysWhole) {
  // 329 tiles of 64 x 32 (seed 99's 1 x 399 x 291 x 1,475) and 512 (1 x 1,023^3), 528 slots:
  // rounded up they would split in two and run a second, partial wave.
  EXPECT_EQ(plan_split_k(1, 399, 291, 1475, kSms, kNarrow).splits, 1);
  EXPECT_EQ(plan_split_k(1, 1023, 1023, 1023, kSms, kNarrow).splits, 1);
  EXPECT_EQ(plan_split_k(1, 1023, 1023, 1023, kSms, {64, 32, 32, 4, 4}).splits, 2);
  // 264 tiles, half the slots: two splits fill the wave.
  EXPECT_EQ(plan_split_k(1, 64 * 12, 1024, 32 * 22, kSms, kNarrow).splits, 2);
}

TEST(L1003SplitPlan, FullGridsAndShortKStayWhole) {
  const SplitPlan full = plan_split_k(128, 512, 1024, 2048, kSms, kMmaSync);
  EXPECT_EQ(full.splits, 1);
  EXPECT_EQ(full.k_split, 1024);
  EXPECT_EQ(plan_split_k(1, 64, 63, 64, kSms, kFma).splits, 1);  // 4 k-tiles: below 2 x min
  EXPECT_EQ(plan_split_k(1, 64, 0, 64, kSms, kFma).splits, 1);   // K = 0
}

TEST(L1003SplitPlan, RangesCoverKInWholeTilesWithNoneEmpty) {
  std::mt19937_64 rng(2031);
  for (int trial = 0; trial < 20000; ++trial) {
    const SplitRule rules[] = {kMmaSync, kFma, kFma32, kFmaNarrow, kFma32Narrow, kNarrow};
    const SplitRule& rule = rules[trial % 6];
    const int64_t batch = 1 + static_cast<int64_t>(rng() % 300);
    const int64_t m = 1 + static_cast<int64_t>(rng() % 600),
                  n = 1 + static_cast<int64_t>(rng() % 600);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 5000);
    const int sms = 16 + static_cast<int>(rng() % 160);
    const SplitPlan p = plan_split_k(batch, m, k, n, sms, rule);
    SCOPED_TRACE(testing::Message() << batch << " x " << m << " x " << k << " x " << n << " on "
                                    << sms << " SMs, tile " << rule.tile_m);
    ASSERT_GE(p.splits, 1);
    if (p.splits == 1) {
      EXPECT_EQ(p.k_split, k);
      continue;
    }
    EXPECT_EQ(p.k_split % rule.k_tile, 0);
    EXPECT_GE(p.k_split, rule.min_k_tiles * rule.k_tile);
    EXPECT_LT((p.splits - 1) * p.k_split, k);  // the last range is not empty
    EXPECT_GE(p.splits * p.k_split, k);        // ... and the ranges reach K
    const int64_t ctas =
        ((m + rule.tile_m - 1) / rule.tile_m) * ((n + rule.tile_n - 1) / rule.tile_n) * batch;
    EXPECT_LT(ctas, rule.ctas_per_sm * sms);                   // only grids under the aim split
    EXPECT_LT((p.splits - 1) * ctas, rule.ctas_per_sm * sms);  // no more than the aim needs
    if (rule.within_wave) {
      EXPECT_LE(p.splits * ctas, rule.ctas_per_sm * sms);
    }
    EXPECT_LE(p.splits * batch * m * n, kMaxPartialFloats);
  }
}

}  // namespace
}  // namespace kb::custom::L1_003
