// L2_010's thin-image kernel (kernel 3x3, dilation 1, any padding; C_out <= 16 at pooled widths
// <= 33, 17..64 at pooled widths <= 7 while the conv is small: takes(); plain fp32 FMA):
// conv -> +bias -> 2x2 max pool -> clamp -> per-block sum, partial: (N, C_out, tiles), then
// custom.cu's finish_kernel.
//
// Why: narrow3x3.cuh's tiles are 16 pooled columns wide, so at a pooled width of 1 (W 2 or 3) 15
// of 16 threads idle while every block still stages a 34 x 34 patch per input channel: N 124,
// C_in 25, C_out 3, 239 x 3 took 191 us against the reference's 73.5 (H100 shape sweep); C_out
// of 9..16 went to mma.sync's 64-channel x 16 x 16-pixel tiles (N 81, C_in 57, C_out 15, 23 x 3:
// 92 us), and so does C_out 17..64 (N 2, C_in 62, C_out 58, 217 x 5: 52 us against 37; 28 CTAs,
// 4 of 16 columns live). Here a block's threads run along the flattened pooled grid of one image
// (window py Wp + px), so every thread but the image's last block's tail owns a window at any
// width:
//   - a thread reads its 4 x 4 input window per channel straight from global memory (__ldg,
//     32-bit offsets: C_in H W <= INT_MAX is custom.cu's precondition) for 36 C_out FMAs. No
//     patch is staged (no staging loop, no barrier per chunk of x): a warp's 32 windows are
//     consecutive, so each of its loads touches ~6 L1 lines, and a row of x is read by two
//     windows of the same or the next warp, mostly from L1;
//   - the weights of a chunk of kChunkCi input channels sit in shared memory as narrow3x3.cuh's
//     (ci, co, 12); a warp works on one channel at a time, so their reads are broadcasts;
//   - when the grid is under a wave (min_blocks CTAs per SM), or the image has fewer windows than
//     a block, the input channels are split over S = 2, 4 or 8 warp groups (group = warp /
//     (8 / S)), each with its own partial conv outputs, added in group order in shared memory
//     before the pool (narrow3x3::sum_groups: max does not distribute over the sum);
//   - C_out past 8 runs in ceil(C_out / 8) balanced groups (grid.y, at most 8), kCo =
//     ceil(C_out / groups) each; every group reads x again (from L2 after the first).
// Block: 256 threads = S groups x 256 / S windows; grid (N tiles, co_groups): N is folded into
// grid.x, so any N whose tile count fits an int runs (no 65535 limit).
//
// Cost at N 124, C_in 25, C_out 3, 239 x 3 (pooled 119 x 1; S = 8: 4 tiles of 32 windows, 496
// CTAs, 2 per SM at 96 registers: two rounds): 60 M MAC in 12.4 K warp-iterations (one channel,
// 32 windows) of 12 live loads + 9 LDS + 108 FMA + ~25 other, ~2 us of issue over 132 SMs; ~6
// L1 lines per load, 0.9 M L1 wavefronts, ~4 us; x is 8.9 MB from DRAM once, 3 us; a warp's 3-4
// channels each wait one load round trip. Predicted 5-8 us, ~10 us with finish_kernel and the
// launches (~7x the reference). Measured (H100, session 39, `kb bench L2_010 --dims ...`, main /
// thin / reference us, /work/.device/3): 191 / 19 / 52-53 there.
//
// Wide C_out (17..64, takes()'s kMaxWideOutputs), the prediction: N 2, C_in 62,
// C_out 58, 217 x 5 (pooled 108 x 2: 216 windows; 8 groups of 8 channels, the last 2 live;
// S = 8: 7 tiles of 32 windows, 112 CTAs, one per SM): a warp runs 7-8 channels of 16 loads +
// 24 LDS + 288 FMA + ~20 other (~350 issue slots, two warps per sub-partition: ~700 clocks per
// channel, plus ~400 of an unhidden load round trip), ~9 K clocks, with the two weight chunks and
// the group sum ~12 K clocks = ~7 us; x (0.54 MB) is read by the 8 groups, from L2 after the
// first. Predicted 20-25 us end to end (the measured thin cases, custom.cu, ran 19-21 us with
// kernels modelled at 5-8 us), 1.5-1.9x the reference's 37 (mma.sync: 52). Measured (H100,
// session 39, /work/.device/4): 19 us.
//
// Numerics: fp32 FMA, taps in (ky, kx) order per channel, channels in order within a group,
// groups in order, then the block sum of narrow3x3::pool_kernel (warp shuffles, warps in order):
// a fixed order for a given plan (S depends on the SM count, as in narrow3x3.cuh).
//
// Thread safety: device code without state; launch() enqueues on the caller's stream.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/status.h"
#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/narrow3x3.cuh"

namespace kb::custom::L2_010::thin {

using narrow3x3::kGroupCo, narrow3x3::kMaxCo, narrow3x3::kMaxSplits, narrow3x3::kThreads,
    narrow3x3::kWarps, narrow3x3::kWeightStride;
// Widest pooled row taken at C_out 17..kMaxWideCo: narrow3x3's 16-column tiles ran more than
// half empty below 8.
constexpr int kMaxWp = narrow3x3::kNarrowTileX / 2 - 1;
// Widest pooled row taken at C_out <= kMaxCo: the widest measured. H100, session 54 (`kb bench
// L2_010 --dims ...` with an experiment switch forcing each path, /work/.device/6; the narrow
// path's tiles -> this kernel, custom ms, the reference in brackets): N 101, C_in 54, C_out 1,
// 247 x 35 (Wp 17) 0.305 -> 0.154 (0.269); 247 x 33 (Wp 16) 0.311 -> 0.148 (0.255); 247 x 67 (Wp
// 33) 0.563 -> 0.245 (0.482); C_out 8 at 247 x 35 0.571 -> 0.270 (0.771); N 64, C_in 32, C_out 2,
// 128 x 11 0.067 -> 0.020 (0.049); N 14, C_in 50, C_out 5, 95 x 25 0.040 -> 0.018 (0.048); N 100,
// C_in 20, C_out 14, 50 x 60 (Wp 30) 0.137 -> 0.071 (0.157); N 1 at 247 x 35 0.020 -> 0.015.
// Until then the bound was 7 (4 at C_out <= 2, a model that put the staged tiles ahead).
constexpr int kMaxWpNarrowCo = 33;
constexpr int kChunkCi = 32;  // input channels whose weights are staged at once
static_assert(kChunkCi % kMaxSplits == 0, "a group keeps its channel residue across chunks");
static_assert(kThreads / kMaxSplits % 32 == 0, "a warp's windows belong to one group");
// CTAs per SM that the registers allow (ptxas, sm_90): kCo 1..2 fit 80 registers without
// spills, 3..4 spill at 80 and take 96, 5..8 96-128. plan() splits channels until the grid
// fills them.
constexpr int min_blocks(int group_co) {
  return group_co <= 2 ? 3 : 2;
}

// The shapes this kernel takes: 3x3, dilation 1, 1..kMaxCo output channels at pooled widths <=
// kMaxWpNarrowCo, 17..kMaxWideCo at pooled widths <= kMaxWp (below).
// C_out 17..kMaxWideCo (kCo 8 on up to 8 groups) only while the conv outputs the windows cover,
// N 2Hp 2Wp C_out, stay at most kMaxWideOutputs: the MACs (9 C_in per output) under 9 C_in
// kMaxWideOutputs. The alternative there is mma.sync's persistent 64-channel x 16 x 16-pixel
// tiles (wgmma needs 80 columns; a pooled width <= 7 has at most 15), whose one tile per SM runs
// the C_in channels in series: ~0.6 us per input channel per wave of 132 tiles (52 us at C_in 62
// above, less the launches), a wave holding at most 132 x 64 x 256 outputs, 1.9 M live at a
// pooled width of 7 and C_out 64, far fewer at narrower widths or C_out off a multiple of 64.
// This kernel runs ~10-15 G MAC/ms (20-30 TFLOP/s: 288 FMAs in ~350 issue slots a warp-channel
// at two CTAs per SM), so 9 C_in outputs MACs take less than mma.sync's 0.6 us C_in while
// outputs < 0.6 us x 10-15 G/ms / 9 = 0.7-1 M, even where its tiles are full; 2^19 keeps
// 1.3-2x of margin (a model: not measured). Larger layers keep the tensor paths, where mma.sync's
// ~60 TFLOP/s of 3xTF32 wins from a pooled width of ~4.
constexpr int kMaxWideCo = 64;
constexpr int64_t kMaxWideOutputs = int64_t{1} << 19;
static_assert(kMaxWideCo <= 8 * kGroupCo, "grid.y's channel groups are at most 8");
// n images, c_out channels, pooled (hp, wp).
inline bool takes(int kh, int kw, int dil, int n, int c_out, int hp, int wp) {
  if (kh != 3 || kw != 3 || dil != 1 || c_out < 1) return false;
  if (c_out <= kMaxCo) return wp <= kMaxWpNarrowCo;
  if (wp > kMaxWp) return false;
  const int64_t per_image = 4 * int64_t{hp} * wp * c_out;  // no overflow: 4 hp wp < 2^31
  return c_out <= kMaxWideCo && (per_image == 0 || n <= kMaxWideOutputs / per_image);
}

// narrow3x3::Args as this kernel reads them: x, weight, bias, partial, c_in, c_out, h, w, pad_h,
// pad_w, hp, wp, group_co, co_groups, splits, lo, hi, and tiles (blocks per image, each of
// kThreads / splits consecutive windows); the patch and tile fields stay 0.
// x: (n, c_in, h, w); pooled (hp, wp); sms: the device's SM count.
inline Result<narrow3x3::Args> plan(int n, int c_in, int c_out, int h, int w, int pad_h, int pad_w,
                                    int hp, int wp, int sms, float lo, float hi) {
  narrow3x3::Args a{};
  a.c_in = c_in, a.c_out = c_out, a.h = h, a.w = w, a.pad_h = pad_h, a.pad_w = pad_w;
  a.hp = hp, a.wp = wp, a.lo = lo, a.hi = hi;
  a.co_groups = (c_out + kGroupCo - 1) / kGroupCo;
  a.group_co = (c_out + a.co_groups - 1) / a.co_groups;
  const int64_t windows = int64_t{hp} * wp;
  const auto tiles = [&](int splits) {
    const int per_block = kThreads / splits;
    return (windows + per_block - 1) / per_block;
  };
  // Split while the grid is under a wave, or while half the windows per block still hold the
  // whole image (the split then replaces idle warps, not blocks).
  a.splits = 1;
  while (a.splits < kMaxSplits && 2 * a.splits <= c_in &&
         (n * tiles(a.splits) * a.co_groups < int64_t{min_blocks(a.group_co)} * sms ||
          kThreads / (2 * a.splits) >= windows))
    a.splits *= 2;
  if (n * tiles(a.splits) > 0x7fffffff)
    return Status::failed_precondition("L2_010 custom: thin kernel grid out of int range");
  a.tiles = static_cast<int>(tiles(a.splits));
  return a;
}

// w_smem (kChunkCi, kCo, kWeightStride) = the 9 taps of input channels c0 .. c0 + kChunkCi - 1
// and output channels co0 .. co0 + kCo - 1; zeros past C_in, C_out and in the padding taps.
// cp.async: every copy in flight at once without holding registers (loads into registers, all
// unrolled, made every kCo spill); the caller waits and syncs.
template <int kCo>
__device__ __forceinline__ void stage_weights(const narrow3x3::Args& a, float* w_smem, int c0,
                                              int co0) {
  constexpr int kFloats = kChunkCi * kCo * kWeightStride;
  for (int e = threadIdx.x; e < kFloats; e += kThreads) {
    const int t = e % kWeightStride, co = e / kWeightStride % kCo;
    const int ci = e / (kWeightStride * kCo);
    if (t < 9 && c0 + ci < a.c_in && co0 + co < a.c_out) {
      __pipeline_memcpy_async(
          w_smem + e, a.weight + (int64_t{c0 + ci} * a.c_out + co0 + co) * 9 + t, sizeof(float));
    } else {
      w_smem[e] = 0.f;
    }
  }
  __pipeline_commit();
}

// The thread's 4 x 4 input window: x[.., 2 py + pad_h - 2 + r, 2 px + pad_w - 2 + c] (the layout
// that narrow3x3::window_taps reads) at offset row_off[r] + c of a channel plane, loaded where
// bit 4 r + c of in_mask is set, else 0 (outside x, or a thread without a window). A row pointer
// per channel with the columns as immediate offsets, and one mask register: 16 per-element
// predicates and 64-bit addresses, all loop-invariant, made every kCo spill (ptxas).
struct Window {
  int row_off[4];
  unsigned in_mask;
};

__device__ __forceinline__ Window window_at(const narrow3x3::Args& a, bool live, int py, int px) {
  Window win;
  const int ix0 = 2 * px + a.pad_w - 2;
  unsigned rows = 0u, cols = 0u;  // bit 4 r of rows, bit c of cols: in x
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int iy = 2 * py + a.pad_h - 2 + k, ix = ix0 + k;
    win.row_off[k] = iy * a.w + ix0;
    if (live && iy >= 0 && iy < a.h) rows |= 1u << (4 * k);
    if (ix >= 0 && ix < a.w) cols |= 1u << k;
  }
  win.in_mask = rows * 0xfu & cols * 0x1111u;
  return win;
}

// xc: one channel plane (h, w) of x.
__device__ __forceinline__ void load_window(const float* xc, const Window& win, float (&xv)[4][4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float* row = xc + win.row_off[r];  // read only where the mask says it is in x
#pragma unroll
    for (int c = 0; c < 4; ++c) xv[r][c] = win.in_mask >> (4 * r + c) & 1u ? __ldg(row + c) : 0.f;
  }
}

// grid (N tiles, co_groups): block b = n tiles + t owns windows [t P, t P + P) of image n, P =
// kThreads / splits, for output channels co0 = kCo y .. co0 + kCo - 1 (those below C_out);
// writes partial[(n C_out + co) tiles + t].
template <int kCo>
__global__ void __launch_bounds__(kThreads, min_blocks(kCo)) thin_kernel(const narrow3x3::Args a) {
  // The weights of a chunk, then (overlaid, narrow3x3::sum_groups) the groups' partial sums.
  constexpr int kWeightFloats = kChunkCi * kCo * kWeightStride;
  constexpr int kRedFloats = (kMaxSplits - 1) * 4 * kCo * (kThreads / kMaxSplits);
  __shared__ __align__(16) float smem[kWeightFloats > kRedFloats ? kWeightFloats : kRedFloats];
  __shared__ float warp_sums[kWarps][kCo];
  const int n = static_cast<int>(blockIdx.x) / a.tiles;
  const int tile = static_cast<int>(blockIdx.x) % a.tiles;
  const int co0 = kCo * static_cast<int>(blockIdx.y);
  const int tid = threadIdx.x;
  const int positions = kThreads / a.splits, group = tid / positions, pos = tid % positions;
  const int windows = a.hp * a.wp, w0 = tile * positions;
  const bool live = w0 + pos < windows;
  const bool warp_live = w0 + (pos & ~31) < windows;  // warp-uniform: groups hold whole warps
  const Window win = window_at(a, live, live ? (w0 + pos) / a.wp : 0, live ? (w0 + pos) % a.wp : 0);
  const float* xn = a.x + int64_t{n} * a.c_in * a.h * a.w;
  const int plane = a.h * a.w;
  float acc[4][kCo] = {};
  for (int c0 = 0; c0 < a.c_in; c0 += kChunkCi) {
    __syncthreads();  // every warp is done with the previous chunk's weights
    stage_weights<kCo>(a, smem, c0, co0);
    __pipeline_wait_prior(0);
    __syncthreads();
    const int count = min(kChunkCi, a.c_in - c0);
#pragma unroll 1  // by 2 (the next channel's loads in flight) spilled at kCo 1, 2, 7 and 8
    for (int ci = group; warp_live && ci < count; ci += a.splits) {
      float xv[4][4];
      load_window(xn + (c0 + ci) * plane, win, xv);
#pragma unroll
      for (int co = 0; co < kCo; ++co)
        narrow3x3::window_taps(xv, smem + (ci * kCo + co) * kWeightStride, co, acc);
    }
  }
  if (a.splits > 1) narrow3x3::sum_groups<kCo>(a, smem, group, pos, acc);
  // Epilogue (group 0's warps): max -> +bias -> clamp -> block sum, as narrow3x3::pool_kernel.
  const bool owner = group == 0 && live;
  narrow3x3::pool_epilogue<kCo>(a, acc, owner, co0, n, tile, positions, warp_sums);
}

// a: plan()'s args with the pointers filled; n images. Needs a.tiles > 0 and n > 0.
inline Status launch(const narrow3x3::Args& a, int n, cudaStream_t stream) {
  using Kernel = void (*)(narrow3x3::Args);
  constexpr Kernel kKernels[kGroupCo] = {thin_kernel<1>, thin_kernel<2>, thin_kernel<3>,
                                         thin_kernel<4>, thin_kernel<5>, thin_kernel<6>,
                                         thin_kernel<7>, thin_kernel<8>};
  const dim3 grid(static_cast<unsigned>(n * a.tiles), static_cast<unsigned>(a.co_groups));
  kKernels[a.group_co - 1]<<<grid, kThreads, 0, stream>>>(a);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

}  // namespace kb::custom::L2_010::thin
