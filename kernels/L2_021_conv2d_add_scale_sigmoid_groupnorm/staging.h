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

// The copy-out's thread map: thread wt of the warpgroup owns column pair col = 2 (wt % 64) of
// channels co0 = wt / 64, co0 + 2, ..., co0 + 30, in both rows, so a warp stores 256 contiguous
// bytes of one (channel, row) per step (as a flat loop over (row, channel, pair) units stepping by
// 128 threads would). Step k's staged float is the row's first plus k kCopyStride and the column
// XOR of step parity k % 2 (co % 4 is co0 or co0 + 2).
constexpr int kCopyUnits = kTileCols / 2;                // column pairs per (row, channel)
constexpr int kCopyCoStep = kGroupThreads / kCopyUnits;  // channels apart per step: 2
constexpr int kCopySteps = kChannels / kCopyCoStep;      // steps per row: 16
constexpr int kCopyStride = kCopyCoStep * kTileCols;     // staged floats per step
constexpr int copy_column(int col, int co0, int parity) {
  return col ^ ((co0 + parity * kCopyCoStep) << 3);
}

// Checked at compile time: the copy-out's (thread, row, step) visit every staged (row, channel,
// column pair) once, at the float stage_index gives it.
constexpr bool copy_map_is_sound() {
  bool seen[kTileRows][kChannels][kCopyUnits] = {};
  for (int wt = 0; wt < kGroupThreads; ++wt)
    for (int r = 0; r < kTileRows; ++r)
      for (int k = 0; k < kCopySteps; ++k) {
        const int col = 2 * (wt % kCopyUnits), co0 = wt / kCopyUnits, co = co0 + k * kCopyCoStep;
        const int at =
            (r * kChannels + co0) * kTileCols + k * kCopyStride + copy_column(col, co0, k % 2);
        if (co >= kChannels || seen[r][co][col / 2] || at != stage_index(r, co, col)) return false;
        seen[r][co][col / 2] = true;
      }
  return true;
}
static_assert(copy_map_is_sound(), "the copy-out's thread map covers the staging once");

// One output row of the copy-out: the thread's kCopySteps channels (those below `steps` stored)
// from `src` (the row's first staged float of channel co0) to out[dst], dst advancing a
// plane_step per step. kPairs: 8-byte stores; else the first float, and the second where `second`.
template <bool kPairs>
KB_HD void copy_row(float* out, unsigned dst, unsigned plane_step, const float* src,
                    const int (&s_col)[2], int steps, bool second) {
  KB_UNROLL
  for (int k = 0; k < kCopySteps; ++k) {
#if defined(__CUDA_ARCH__)
    const float2 v = *reinterpret_cast<const float2*>(src + k * kCopyStride + s_col[k % 2]);
    if (k < steps) {
      if constexpr (kPairs) {
        __stcs(reinterpret_cast<float2*>(out + dst), v);
      } else {
        __stcs(out + dst, v.x);
        if (second) __stcs(out + dst + 1, v.y);
      }
    }
#else  // the host's model of the same stores (staging_test.cpp)
    const float* v = src + k * kCopyStride + s_col[k % 2];
    if (k < steps) {
      out[dst] = v[0];
      if (kPairs || second) out[dst + 1] = v[1];
    }
#endif
    dst += plane_step;
  }
}

// Copies the staged item (rows r0, r0 + 1 that exist, channels < C_out, the columns < W') to
// `out` on the copy-out's thread map. Output indices are 32-bit: fits() bounds the output below
// 2^31 floats. 8-byte stores where a.pairs, else two 4-byte ones.
KB_HD void store_staged(float* out, int c_out, int ho, int wo, bool pairs, int n, int r0, int c0,
                        int wt, const float* stage) {
  const int col = 2 * (wt % kCopyUnits), co0 = wt / kCopyUnits;
  const int cols = wo - c0 < kTileCols ? wo - c0 : kTileCols;
  if (col >= cols) return;
  const bool pair = pairs && col + 1 < cols;
  const int s_col[2] = {copy_column(col, co0, 0), copy_column(col, co0, 1)};
  const int steps = (c_out - co0 + kCopyCoStep - 1) / kCopyCoStep;
  const unsigned plane_step = static_cast<unsigned>(kCopyCoStep * ho * wo);
  KB_UNROLL
  for (int r = 0; r < kTileRows; ++r) {
    const int oh = r0 + r;
    if (oh >= ho) break;
    const float* src = stage + (r * kChannels + co0) * kTileCols;
    const unsigned dst = static_cast<unsigned>(((n * c_out + co0) * ho + oh) * wo + c0 + col);
    if (pair) {
      copy_row<true>(out, dst, plane_step, src, s_col, steps, true);
    } else {
      copy_row<false>(out, dst, plane_step, src, s_col, steps, col + 1 < cols);
    }
  }
}

}  // namespace kb::custom::L2_021::rows
