// kernels/L1_003_batched_matmul/narrow_tile.cuh, run on the host: its copies fill every stage
// element once and stay inside the stage, its shared-memory loads are free of bank conflicts where
// the layout promises it, and the unaligned-A layout (rows shifted into aligned 16-byte chunks)
// hands every fragment the A value of its row and k, or zero past K, at every shift, K and split.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kernels/L1_003_batched_matmul/narrow_tile.cuh"

namespace kb::custom::L1_003::narrow {
namespace {

TEST(L1003NarrowTile, AlignedCopiesFillTheStageOnce) {
  std::vector<int> hits(kStageFloats, 0);
  for (int tid = 0; tid < kThreads; ++tid) {
    for (int j = 0; j < kACopiesVec; ++j) {
      const Slot c = a_copy_vec(tid, j);
      ASSERT_LT(c.row, kRows);
      for (int e = 0; e < 4; ++e) ++hits[a_index(c.row, c.col + e)];
    }
    for (int j = 0; j < kBCopies; ++j) {
      const Slot c = b_copy(tid, j);
      ASSERT_LT(c.row, kBK);
      ++hits[b_index(c.row, c.col)];
    }
  }
  for (int i = 0; i < kStageFloats; ++i) {
    const bool a_used = i < kRows * kBK, b_used = i >= kStageFloatsA;
    EXPECT_EQ(hits[i], a_used || b_used ? 1 : 0) << "stage element " << i;
  }
}

TEST(L1003NarrowTile, ShiftedCopiesFillEveryRowsChunksOnce) {
  std::vector<int> hits(kStageFloatsA, 0);
  int copies = 0;
  for (int tid = 0; tid < kThreads; ++tid)
    for (int j = 0; j < kACopiesShifted; ++j) {
      if (!a_copy_shifted_exists(tid, j)) continue;
      ++copies;
      const Slot c = a_copy_shifted(tid, j);
      for (int e = 0; e < 4; ++e) ++hits[shifted_index(c.row, 4 * c.col + e)];
    }
  EXPECT_EQ(copies, kRows * kShiftedChunks);
  for (int i = 0; i < kStageFloatsA; ++i) EXPECT_EQ(hits[i], 1) << "A element " << i;
  // 16-byte destinations: every chunk starts on a 16-byte boundary of the stage.
  for (int row = 0; row < kRows; ++row) EXPECT_EQ(shifted_index(row, 0) % 4, 0);
  EXPECT_EQ(kStageFloats % 4, 0);
}

// Shared-memory words (4-byte banks) a warp's load touches: the number of wavefronts is the
// largest count of distinct words in one bank, per phase of `lanes_per_phase` lanes.
int wavefronts(const std::vector<std::vector<int>>& words_per_lane, int lanes_per_phase) {
  int total = 0;
  for (int first = 0; first < 32; first += lanes_per_phase) {
    std::set<int> words[32];
    for (int lane = first; lane < first + lanes_per_phase; ++lane)
      for (int w : words_per_lane[lane]) words[w % 32].insert(w);
    size_t worst = 0;
    for (const auto& bank : words) worst = std::max(worst, bank.size());
    total += static_cast<int>(worst);
  }
  return total;
}

TEST(L1003NarrowTile, BFragmentsAndAlignedAFragmentsAreConflictFree) {
  for (int s = 0; s < kBK / 8; ++s)
    for (int i = 0; i < 2; ++i) {
      std::vector<std::vector<int>> b(32);
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e) b[lane].push_back(b_frag(lane, s, i) + e);
      EXPECT_EQ(wavefronts(b, 8), 4) << "B, step " << s << ", b" << i;  // 16 bytes: 4 phases
      for (int mt = 0; mt < kMTiles; ++mt)
        for (int warp_row : {0, kWarpRows}) {
          std::vector<std::vector<int>> a(32);
          for (int lane = 0; lane < 32; ++lane)
            for (int e = 0; e < 2; ++e) a[lane].push_back(a_frag(warp_row, lane, s, mt, i) + e);
          EXPECT_EQ(wavefronts(a, 16), 2) << "A, step " << s;  // 8 bytes: 2 phases
        }
    }
}

// The unaligned path end to end on the host: one CTA's k-tiles of A (row stride K, the tile's
// first float at an offset of `offset` floats from a 16-byte boundary) copied as ShiftedA copies
// them, then read back through the fragment maps as the warps read them.
void check_shifted_tile(int k, int offset, int k0, int k_count, int rows) {
  SCOPED_TRACE(testing::Message() << "K " << k << ", offset " << offset << ", k0 " << k0
                                  << ", k_count " << k_count << ", rows " << rows);
  // A's floats, flat: a 16-byte-aligned allocation with the tile starting at `offset`.
  const int64_t floats = offset + int64_t{kRows} * k + 8;
  std::vector<float> mem(static_cast<size_t>(floats));
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = 1.0f + static_cast<float>(i);
  const auto a = [&](int row, int kk) { return mem[offset + int64_t{row} * k + k0 + kk]; };
  std::vector<float> stage(kStageFloatsA);
  for (int k_left = k_count; k_left > 0; k_left -= kBK) {
    const int tile_k0 = k0 + (k_count - k_left);  // this k-tile's first k in the row
    for (float& x : stage) x = -1e30f;            // a read of anything not copied shows
    for (int tid = 0; tid < kThreads; ++tid)
      for (int j = 0; j < kACopiesShifted; ++j) {
        const Slot c = a_copy_shifted(tid, j);
        if (!a_copy_shifted_exists(tid, j) || c.row >= rows) continue;
        const int64_t row_k0 = offset + int64_t{c.row} * k + tile_k0;  // flat index
        const int shift = static_cast<int>(row_k0 % 4);
        const int64_t src = row_k0 - shift + 4 * c.col;
        ASSERT_EQ(src % 4, 0) << "a 16-byte source chunk";
        ASSERT_GE(src, 0);
        const int n = chunk_floats(k_left, chunk_first_k(shift, c.col));
        for (int e = 0; e < 4; ++e) {
          if (e < n) ASSERT_LT(src + e, floats);
          stage[shifted_index(c.row, 4 * c.col) + e] = e < n ? mem[src + e] : 0.0f;
        }
      }
    for (int warp_row : {0, kWarpRows})
      for (int lane = 0; lane < 32; ++lane) {
        const int64_t row_k0 = offset + int64_t{warp_row + (lane >> 2)} * k + tile_k0;
        const int shift = static_cast<int>(row_k0 % 4);
        for (int s = 0; s < kBK / 8; ++s)
          for (int mt = 0; mt < kMTiles; ++mt)
            for (int half = 0; half < 2; ++half) {
              const int row = warp_row + 16 * mt + 8 * half + (lane >> 2);
              if (row >= rows || 8 * s >= k_left) continue;  // not stored / step skipped
              const int at = shifted_frag(warp_row, lane, shift, s, mt, half);
              for (int e = 0; e < 2; ++e) {
                const int kk = 8 * s + 2 * (lane & 3) + e;
                const float want = kk < k_left ? a(row, tile_k0 - k0 + kk) : 0.0f;
                ASSERT_EQ(stage[at + e], want) << "row " << row << ", k " << kk;
              }
            }
      }
  }
}

TEST(L1003NarrowTile, ShiftedRowsGiveEveryFragmentItsValue) {
  check_shifted_tile(661, 0, 0, 661, kRows);    // the mixed sweep's K, odd
  check_shifted_tile(661, 3, 0, 661, 17);       // the last row tile, another first shift
  check_shifted_tile(943, 1, 320, 320, kRows);  // a split's range
  check_shifted_tile(77, 2, 0, 77, 22);
  check_shifted_tile(33, 1, 0, 33, kRows);  // 1 k in the last tile
  check_shifted_tile(6, 2, 0, 6, 5);        // K even, not a multiple of 4
  std::mt19937 rng(47);
  for (int trial = 0; trial < 40; ++trial) {
    const int k = 17 + static_cast<int>(rng() % 700);
    const int k0 = static_cast<int>(rng() % static_cast<unsigned>((k - 1) / kBK + 1)) * kBK;
    check_shifted_tile(k, static_cast<int>(rng() % 4), k0, k - k0,
                       1 + static_cast<int>(rng() % kRows));
  }
}

TEST(L1003NarrowTile, SplitsAreWholeKTilesWithinAWaveOfFourCtasAnSm) {
  // 40 x 100 x 1101 x 5 (the preset mma_odd): 80 CTAs on 132 SMs, split in 6 of 192 k (480 CTAs).
  const SplitPlan plan = plan_split_k(40, 100, 1101, 5, 132, kSplitRule);
  EXPECT_EQ(plan.splits, 6);
  EXPECT_EQ(plan.k_split, 192);
  EXPECT_EQ(plan.k_split % kBK, 0);
  // 84 x 401 x 661 x 27: 588 CTAs, past four an SM: unsplit.
  EXPECT_EQ(plan_split_k(84, 401, 661, 27, 132, kSplitRule).splits, 1);
  // 1 x 399 x 291 x 1475: 329 CTAs, past half a wave: unsplit.
  EXPECT_EQ(plan_split_k(1, 399, 291, 1475, 132, kSplitRule).splits, 1);
}

}  // namespace
}  // namespace kb::custom::L1_003::narrow
