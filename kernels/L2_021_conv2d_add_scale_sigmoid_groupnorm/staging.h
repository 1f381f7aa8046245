// L2_021's wgmma store pass (wgmma_rows.cuh) writes its output through shared memory: each
// warpgroup stages its item (2 output rows x 32 channels x 128 columns) in its patch buffer, then
// copies it out a (channel, row) per warp store. This header holds that staging's layout and the
// copy-out without CUDA on the host, so that their index math is checked at compile time (the
// static_asserts below) and run on the host against every output of odd shapes
// (tests/unit/kernels/l2021_staging_test.cpp); on the device the same loop loads 8 bytes and
// stores them with `__stcs` (evict-first), as one 8-byte store where `pairs` allows.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace kb::custom::L2_021::rows {

constexpr int kGroupThreads = 128;  // a warpgroup
constexpr int kChannels = 32;       // output channels per M half: C_out <= 32
constexpr int kTileRows = 2;        // a warpgroup's item: 2 output rows
constexpr int kTileCols = 128;      // n128

// The store pass's items go out through the warpgroup's patch buffer, free once its wgmmas ended:
// each thread's float2 pairs are scattered over 8 channel rows per warp store (8 sectors in 8
// lines); staged, a warp stores 256 contiguous bytes of one (channel, row). Staging index of (r,
// co, col): rows of 128 floats, the 8-float column block XORed with co % 4, so a half-warp's float2
// writes (4 channels x 4 lanes) hit distinct banks.
constexpr int stage_index(int r, int co, int col) {
  return (r * kChannels + co) * kTileCols + (col ^ ((co & 3) << 3));
}

// Checked at compile time: stage_index is a permutation of the staging floats that keeps each
// column pair adjacent (8-byte accesses), and a half-warp's float2 writes in stage_row (channels
// c .. c + 3 for c a multiple of 4, columns 8 j + 0..7) cover all 32 banks once.
constexpr bool stage_index_is_sound() {
  constexpr int kFloats = kTileRows * kChannels * kTileCols;
  bool seen[kFloats] = {};
  for (int r = 0; r < kTileRows; ++r)
    for (int co = 0; co < kChannels; ++co)
      for (int col = 0; col < kTileCols; ++col) {
        const int i = stage_index(r, co, col);
        if (i < 0 || i >= kFloats || seen[i]) return false;
        if (col % 2 == 1 && stage_index(r, co, col - 1) + 1 != i) return false;
        seen[i] = true;
      }
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kChannels; c += 4)
      for (int j = 0; j < kTileCols / 8; ++j) {
        bool bank[32] = {};
        for (int q = 0; q < 4; ++q)
          for (int col = 8 * j; col < 8 * j + 8; ++col) {
            const int b = stage_index(r, c + q, col) % 32;
            if (bank[b]) return false;
            bank[b] = true;
          }
      }
  return true;
}
static_assert(stage_index_is_sound(), "stage_index: a permutation, pairs adjacent, no conflicts");

// Copies the staged item (rows r0, r0 + 1 that exist, channels < C_out, the columns < W') of
// sample n, column tile c0 to `out` (N, C_out, H', W'): thread wt of the warpgroup, column pairs, a
// warp per 64 consecutive pairs of one row; 8-byte stores where `pairs`, else two 4-byte ones.
KB_HD void store_staged(float* out, int c_out, int ho, int wo, bool pairs, int n, int r0, int c0,
                        int wt, const float* stage) {
  constexpr int kUnits = kTileCols / 2;  // column pairs per (row, channel)
  const int cols = wo - c0 < kTileCols ? wo - c0 : kTileCols;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int u = wt; u < kTileRows * kChannels * kUnits; u += kGroupThreads) {
    const int rc = u / kUnits, col = 2 * (u % kUnits);
    const int r = rc / kChannels, co = rc % kChannels, oh = r0 + r;
    if (co >= c_out || oh >= ho || col >= cols) continue;
    const float* src = stage + stage_index(r, co, col);
#if defined(__CUDA_ARCH__)
    const float2 v = *reinterpret_cast<const float2*>(src);
#endif
    float* dst = out + ((int64_t{n} * c_out + co) * ho + oh) * wo + c0 + col;
#if defined(__CUDA_ARCH__)
    if (pairs && col + 1 < cols) {
      __stcs(reinterpret_cast<float2*>(dst), v);
    } else {
      __stcs(dst, v.x);
      if (col + 1 < cols) __stcs(dst + 1, v.y);
    }
#else  // the host's model of the same stores (l2021_staging_test.cpp)
    if (pairs && col + 1 < cols) {
      dst[0] = src[0], dst[1] = src[1];
    } else {
      dst[0] = src[0];
      if (col + 1 < cols) dst[1] = src[1];
    }
#endif
  }
}

}  // namespace kb::custom::L2_021::rows
