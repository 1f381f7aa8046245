// L1_003's split-K plan: how many ranges of K a small grid of GEMM tiles is cut into, for the
// mma.sync tile (custom.cu), the FMA tile (fma_tile.cuh) and the narrow tile (narrow_tile.cuh).
//
// Split-K when the grid is under rule.ctas_per_sm CTAs per SM (the mma.sync tile: two, its
// resident count; the FMA and narrow tiles: four). K splits into ranges of whole k-tiles, at
// least rule.min_k_tiles each, toward that many CTAs per SM (at most that many: within_wave), with
// the partial products' workspace under kMaxPartialFloats; no split is empty. On mma.sync (the only
// split path until session 21) the shape sweep's 3 x 379 x 459 x 189 filled 18 CTAs of 264 slots
// and ran at 0.35x the reference. Measured there (H200, `kb bench L1_003 --dims
// batch=3,M=379,K=459,N=189`): 0.065 ms unsplit, 0.032 ms in 5 splits of 3 k-tiles (this rule;
// 0.73x the reference's 0.023 ms), 0.046 ms in 15 splits of one k-tile.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kb::custom::L1_003 {

struct SplitRule {
  int64_t tile_m, tile_n, k_tile;  // the kernel's CTA tile and K step
  int64_t ctas_per_sm;             // the grid split-K aims at
  int64_t min_k_tiles;             // per split
  // The splits' CTAs within one wave of ctas_per_sm an SM (rounded down, so a grid past half a
  // wave is not split), where a second, partial wave costs more than the split gains (the narrow
  // tile); otherwise rounded up, toward a full wave.
  bool within_wave = false;
};

// splits ranges of K, each k_split long but the last (a multiple of rule.k_tile when splits > 1;
// k itself for one split).
struct SplitPlan {
  int splits = 1;
  int64_t k_split = 0;
};

constexpr int64_t kMaxPartialFloats = int64_t{1} << 24;  // the workspace's bound: 64 MB

inline SplitPlan plan_split_k(int64_t batch, int64_t m, int64_t k, int64_t n, int sms,
                              const SplitRule& rule) {
  const int64_t ctas =
      ((m + rule.tile_m - 1) / rule.tile_m) * ((n + rule.tile_n - 1) / rule.tile_n) * batch;
  const int64_t k_tiles = (k + rule.k_tile - 1) / rule.k_tile;
  const int64_t slots = rule.ctas_per_sm * int64_t{sms};
  int64_t splits = 1;
  if (ctas > 0 && ctas < slots && batch <= 65535) {
    const int64_t toward = rule.within_wave ? slots / ctas : (slots + ctas - 1) / ctas;
    splits = std::min(toward, k_tiles / rule.min_k_tiles);
    splits = std::min(splits, kMaxPartialFloats / std::max<int64_t>(batch * m * n, 1));
  }
  splits = std::max<int64_t>(splits, 1);
  const int64_t tiles_per_split = (k_tiles + splits - 1) / splits;
  SplitPlan plan;
  plan.k_split = std::max<int64_t>(tiles_per_split * rule.k_tile, 1);
  plan.splits = static_cast<int>((k + plan.k_split - 1) / plan.k_split);  // no empty split
  if (plan.splits <= 1) plan.splits = 1, plan.k_split = k;
  return plan;
}

}  // namespace kb::custom::L1_003
