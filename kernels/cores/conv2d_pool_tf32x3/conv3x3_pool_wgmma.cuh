// L2_010's tile epilogue for the wgmma 3x3 conv (kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh):
// 2x2 max pool + bias + clamp + the tile's channel sums, for the finish kernel's mean.
//   partial[n][co][slot] = sum over the tile's pooling windows of clamp(max4(y) + bias, lo, hi)
// Each pooling window is in one thread: a thread's accumulators hold columns (2 c, 2 c + 1) of
// both rows 2 g, 2 g + 1 of its channels. Max, +bias and the clamp are exact (max and +bias
// commute); the sums are fixed-order (shuffles over the 4 lanes of a channel, then warpgroup 0 +
// warpgroup 1): deterministic.
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh"

namespace kb::custom::conv3x3_pool_wgmma {

namespace cw = ::kb::custom::conv3x3_wgmma;

struct PoolSumEpilogue {
  const float* bias;  // (C_out)
  float* partial;     // (N, C_out, tiles_h * tiles_w)
  int hp, wp;         // pooled rows and columns (floor mode)
  float lo, hi;

  // red[g][co] = sum over warpgroup g's pooling windows (pooled row r0 / 2 + g, 64 columns).
  __device__ __forceinline__ void tile(const cw::WgmmaArgs& p, const cw::TileCoord& tc,
                                       const float (&acc)[cw::kAccs], float* red) const {
    const int tid = static_cast<int>(threadIdx.x), group = tid / 128, lane = tid % 32;
    const int g = lane >> 2, t = lane & 3, warp = (tid / 32) % 4;
    const bool row_ok = tc.r0 / 2 + group < hp;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int co_l = 16 * warp + 8 * half + g, co = tc.ct * cw::kTileCo + co_l;
      const float b = co < p.c_out ? __ldg(bias + co) : 0.0f;
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < cw::kTileCols / 8; ++j) {  // n8 block j: columns 8 j + 2 t, + 1
        const int e = 4 * j + 2 * half;
        const float m = fmaxf(fmaxf(acc[e], acc[e + 1]),
                              fmaxf(acc[cw::kAccs / 2 + e], acc[cw::kAccs / 2 + e + 1])) +
                        b;
        if (row_ok && tc.c0 / 2 + 4 * j + t < wp) s += fminf(fmaxf(m, lo), hi);
      }
      s += __shfl_xor_sync(0xffffffffu, s, 1);  // the 4 lanes (t) of a channel row
      s += __shfl_xor_sync(0xffffffffu, s, 2);
      if (t == 0) red[group * cw::kTileCo + co_l] = s;
    }
  }
  // partial[n][co][slot] = red[0][co] + red[1][co].
  __device__ __forceinline__ void after_barrier(const cw::WgmmaArgs& p, const cw::TileCoord& tc,
                                                const float* red) const {
    const int row = threadIdx.x, co = tc.ct * cw::kTileCo + row;
    if (row >= cw::kTileCo || co >= p.c_out) return;
    partial[(int64_t{tc.n} * p.c_out + co) * (p.tiles_h * p.tiles_w) + tc.slot] =
        red[row] + red[cw::kTileCo + row];
  }
};

}  // namespace kb::custom::conv3x3_pool_wgmma
