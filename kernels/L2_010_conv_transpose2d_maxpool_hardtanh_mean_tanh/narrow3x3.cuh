// L2_010's narrow 3x3 kernel (C_out <= 16, kernel 3x3, dilation 1, any padding; plain fp32 FMA):
// conv -> +bias -> 2x2 max pool -> clamp -> per-tile sum, partial: (N, C_out, tiles), then
// custom.cu's finish_kernel. Runs where plan()'s tile is under 32 columns or splits the
// channels; narrow.cuh's narrow3x3_pool_kernel keeps 32-column tiles without a split (measured
// faster there at C_out 8).
//
// Why: narrow3x3_pool_kernel gives a block 8 x 32 pooled positions and one thread per position
// for all C_in. At N 14, C_in 50, C_out 5, 95 x 25 (pooled 47 x 12) that is 84 CTAs with 12 of
// 32 columns busy and 9,000 serial FMAs per thread behind 7 unpipelined chunk loads: 51 us,
// 0.82x the reference. Here, per shape (plan()):
//   - the tile's pooled columns are the pooled width split evenly into ceil(Wp / 32) tiles
//     (fitted_tile_x: 17 columns at Wp 17, 25 + 25 at Wp 50), its rows as many as 256 / S
//     threads hold; the threads past tile_y x tile_x (256 mod tile_x) idle. Until session 54
//     the tile was 16 columns wide for Wp <= 16, else 32, and custom.cu sent 32-column tiles to
//     narrow.cuh: at N 101, C_in 54, C_out 1, 247 x 35 (Wp 17) 15 of 32 columns idled there, in
//     7 unpipelined chunks at 2 CTAs per SM (102 registers): 0.304 ms against the reference's
//     0.2685 (0.88x, H100 sweep, seed 54);
//   - when the grid is under one wave (2 or 3 CTAs per SM, min_blocks), the block's input channels
//   are split over S = 2, 4
//     or 8 thread groups (warp-uniform: group = warp / (8 / S)), each with its own partial conv
//     outputs (pre-pool: max does not distribute over the sum), summed in shared memory in
//     group order before the pool;
//   - chunks of 4..16 channels (patch and weights) are double-buffered with cp.async: chunk k+1
//     is in flight while chunk k is computed, one barrier per chunk;
//   - C_out is a template argument: the 4 x C_out accumulators are independent FMA chains in
//     one basic block (the old kernel's runtime `co < c_out` breaks left 4 chains per block).
//   - C_out of 9 to 16 runs in groups of 8 channels (grid.z; the last group's missing channels
//     have zero weights in shared memory and are not stored) where custom.cu's rule takes it:
//     mma.sync's 64-channel tiles compute 4-7x their work in padding there (H100, N 100, C_in
//     20, C_out 14, 50 x 60: 0.215 -> 0.137 ms, session 31).
// Block: 256 threads = S groups x 256 / S positions, tile_y x tile_x of them pooled windows,
// tile_y = 256 / (S tile_x);
// grid (tiles, N, channel groups).
// the patch of a chunk is (2 tile_y + 2) x (2 tile_x + 2) inputs per channel.
//
// Numerics: fp32 FMA, taps in (ky, kx) order per channel, channels in order within a group;
// S = 1 gives the old kernel's sums bit for bit. S > 1 sums the groups' partial conv outputs in
// group order (fixed: deterministic). The block sum is the old one (warp shuffles, then warps in
// order).
//
// Thread safety: device code without state; launch() enqueues on the caller's stream.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/status.h"

namespace kb::custom::L2_010::narrow3x3 {

constexpr int kThreads = 256, kWarps = kThreads / 32;
// The tile's columns below a pooled width of 17 until session 54; custom.cu's grouped rule (Wp >=
// 8) and thin::kMaxWp (7) were set against it and stay (not re-derived for fitted tiles).
constexpr int kNarrowTileX = 16;
constexpr int kMaxTileX = 32;       // pooled columns of a tile at most
constexpr int kGroupCo = 8;         // output channels per block (template argument)
constexpr int kMaxCo = 16;          // the narrow path's C_out limit: two groups
constexpr int kMaxSplits = 8;       // groups of 32 positions at least: one warp each
constexpr int kMaxChunk = 16;       // input channels per staged chunk
constexpr int kPatchBudget = 8192;  // floats of patch per stage (32 KB)
constexpr int kWeightStride = 12;   // 9 taps padded to 3 float4 per (channel, output channel)
// CTAs per SM that the registers allow (ptxas, sm_90): a group of <= 5 channels fits 80
// registers without spills; 6..8 spill at 80 and take 128. plan() splits channels until the grid
// fills them.
constexpr int min_blocks(int group_co) {
  return group_co <= 5 ? 3 : 2;
}

struct Args {
  const float* x;       // (N, C_in, H, W)
  const float* weight;  // (C_in, C_out, 3, 3), unflipped: y[oy] += x[oy + pad - ky] w[ky]
  const float* bias;    // (C_out)
  float* partial;       // (N, C_out, tiles)
  int c_in, c_out, h, w, pad_h, pad_w, hp, wp;  // pad: the transposed conv's own padding
  int group_co, co_groups;  // channels per block (min(C_out, kGroupCo)), blocks along C_out
  int tile_y, tile_x, splits, chunk;  // pooled tile, channel groups, chunk channels
  int tiles_x, tiles;                 // tiles = tiles_y * tiles_x
  int stride, plane, stage_floats;    // patch row stride, floats per channel plane, per stage
  float lo, hi;
};

// Pooled columns of a tile at pooled width wp: ceil(wp / kMaxTileX) tiles as even as they go.
// A tile of 16 or 32 columns left up to 15 of 16 or 31 of 32 threads without a window (Wp 17:
// 47%), while they staged 2 tile_x + 2 patch columns and ran every FMA; fitted, a tile idles
// only the 256 mod tile_x threads past its last full row, and stages its halo once per 2 tile_y
// rows: at Wp 17, 909 CTAs of 15 x 17 windows with 32 x 36 patches against 1,616 of 8 x 32 with
// 18 x 66 (thin.cuh now takes that width; measured on wider rows: custom.cu, session 54).
constexpr int fitted_tile_x(int wp) {
  const int tiles_x = wp < 1 ? 1 : (wp + kMaxTileX - 1) / kMaxTileX;
  return wp < 1 ? 1 : (wp + tiles_x - 1) / tiles_x;
}
static_assert(fitted_tile_x(17) == 17 && fitted_tile_x(32) == 32 && fitted_tile_x(33) == 17 &&
                  fitted_tile_x(64) == 32 && fitted_tile_x(100) == 25,
              "balanced tiles of at most kMaxTileX columns");
static_assert(kThreads / (kMaxTileX * kMaxSplits) >= 1, "every split keeps a pooled row");

// Sizes for one shape; pointers are filled per call. smem_bytes: dynamic shared memory.
struct Plan {
  Args args{};
  size_t smem_bytes = 0;
};

// x: (n, c_in, h, w); pooled (hp, wp); sms: the device's SM count.
inline Plan plan(int n, int c_in, int c_out, int h, int w, int pad_h, int pad_w, int hp, int wp,
                 int sms, float lo, float hi) {
  Plan p;
  Args& a = p.args;
  a.c_in = c_in, a.c_out = c_out, a.h = h, a.w = w, a.pad_h = pad_h, a.pad_w = pad_w;
  a.hp = hp, a.wp = wp, a.lo = lo, a.hi = hi;
  a.group_co = std::min(c_out, kGroupCo);
  a.co_groups = (c_out + a.group_co - 1) / a.group_co;
  a.tile_x = fitted_tile_x(wp);
  a.tiles_x = (wp + a.tile_x - 1) / a.tile_x;
  const auto ctas = [&](int splits) {
    const int tile_y = kThreads / (a.tile_x * splits);
    return int64_t{n} * ((hp + tile_y - 1) / tile_y) * a.tiles_x * a.co_groups;
  };
  a.splits = 1;
  while (a.splits < kMaxSplits && 2 * a.splits <= c_in &&
         ctas(a.splits) < int64_t{min_blocks(a.group_co)} * sms)
    a.splits *= 2;
  a.tile_y = kThreads / (a.tile_x * a.splits);
  a.tiles = (hp + a.tile_y - 1) / a.tile_y * a.tiles_x;
  a.stride = 2 * a.tile_x + 4;  // 2 tile_x + 2 columns, even: 8-byte pairs stay aligned
  a.plane = (2 * a.tile_y + 2) * a.stride;
  a.chunk = 4;  // a multiple of 4: the weights after the patch stay 16-byte aligned
  while (a.chunk < kMaxChunk && 2 * a.chunk * a.plane <= kPatchBudget) a.chunk *= 2;
  a.chunk = std::max(a.chunk, a.splits);
  a.stage_floats = a.chunk * (a.plane + a.group_co * kWeightStride);
  const int red_floats = (a.splits - 1) * 4 * a.group_co * (kThreads / a.splits);
  p.smem_bytes = size_t(std::max(2 * a.stage_floats, red_floats)) * sizeof(float);
  return p;
}

// Issues the copies of chunk c0 (patch, then the weights of output channels co0 .. co0 + kCo - 1)
// into the stage at st; zeros outside x and past C_out.
template <int kCo>
__device__ __forceinline__ void stage_chunk(const Args& a, float* st, const float* xn, int c0,
                                            int co0, int iy0, int ix0) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rows = 2 * a.tile_y + 2, cols = 2 * a.tile_x + 2;
  for (int row = warp; row < a.chunk * rows; row += kWarps) {
    const int ci = row / rows, r = row % rows, iy = iy0 + r;
    const bool row_in = c0 + ci < a.c_in && iy >= 0 && iy < a.h;
    const float* src = xn + (int64_t{c0 + ci} * a.h + iy) * a.w;
    float* dst = st + ci * a.plane + r * a.stride;
    for (int c = lane; c < cols; c += 32) {
      const int ix = ix0 + c;
      if (row_in && ix >= 0 && ix < a.w) {
        __pipeline_memcpy_async(dst + c, src + ix, sizeof(float));
      } else {
        dst[c] = 0.f;
      }
    }
  }
  float* ws = st + a.chunk * a.plane;  // (chunk, kCo, kWeightStride)
  for (int e = threadIdx.x; e < a.chunk * kCo * kWeightStride; e += kThreads) {
    const int t = e % kWeightStride, co = e / kWeightStride % kCo;
    const int ci = e / (kWeightStride * kCo);
    if (t < 9 && c0 + ci < a.c_in && co0 + co < a.c_out) {
      __pipeline_memcpy_async(ws + e, a.weight + (int64_t{c0 + ci} * a.c_out + co0 + co) * 9 + t,
                              sizeof(float));
    } else {
      ws[e] = 0.f;
    }
  }
  __pipeline_commit();
}

// acc[q][co] += the 9 taps w[0..8] (16-byte aligned) of one input channel for window output
// (q / 2, q % 2), from the thread's 4 x 4 input window xv; also narrow.cuh's narrow3x3_pool_kernel.
template <int kCo>
__device__ __forceinline__ void window_taps(const float (&xv)[4][4], const float* w, int co,
                                            float (&acc)[4][kCo]) {
  const float4 w0 = *reinterpret_cast<const float4*>(w);
  const float4 w1 = *reinterpret_cast<const float4*>(w + 4);
  const float wv[9] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w, w[8]};
#pragma unroll
  for (int ky = 0; ky < 3; ++ky)
#pragma unroll
    for (int kx = 0; kx < 3; ++kx)
#pragma unroll
      for (int q = 0; q < 4; ++q)  // window output (q / 2, q % 2) reads row q/2 + 2 - ky
        acc[q][co] = fmaf(xv[(q >> 1) + 2 - ky][(q & 1) + 2 - kx], wv[ky * 3 + kx], acc[q][co]);
}

// acc[q][co] += the 9 taps of channel ci (of the stage st) for window output (q / 2, q % 2) of
// the thread's pooled position (ty, tx); patch rows 2 ty .. 2 ty + 3, columns 2 tx .. 2 tx + 3.
template <int kCo>
__device__ __forceinline__ void accumulate(const Args& a, const float* st, int ci, int ty, int tx,
                                           float (&acc)[4][kCo]) {
  const float* xp = st + ci * a.plane + 2 * ty * a.stride + 2 * tx;
  const float* wp = st + a.chunk * a.plane + ci * kCo * kWeightStride;
  float xv[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float2 lo = *reinterpret_cast<const float2*>(xp + r * a.stride);
    const float2 hi = *reinterpret_cast<const float2*>(xp + r * a.stride + 2);
    xv[r][0] = lo.x, xv[r][1] = lo.y, xv[r][2] = hi.x, xv[r][3] = hi.y;
  }
#pragma unroll
  for (int co = 0; co < kCo; ++co) window_taps(xv, wp + co * kWeightStride, co, acc);
}

// Groups 1..S-1 hand their partial conv outputs to group 0 through red: (S-1, 4 kCo, positions);
// group 0 adds them in group order.
template <int kCo>
__device__ __forceinline__ void sum_groups(const Args& a, float* red, int group, int pos,
                                           float (&acc)[4][kCo]) {
  const int positions = kThreads / a.splits;
  __syncthreads();  // every group is done reading the stages that red overlays
  if (group > 0)
#pragma unroll
    for (int j = 0; j < 4 * kCo; ++j)
      red[((group - 1) * 4 * kCo + j) * positions + pos] = acc[j / kCo][j % kCo];
  __syncthreads();
  if (group == 0)
    for (int g = 1; g < a.splits; ++g)
#pragma unroll
      for (int j = 0; j < 4 * kCo; ++j)
        acc[j / kCo][j % kCo] += red[((g - 1) * 4 * kCo + j) * positions + pos];
}

// The block's epilogue (pool_kernel's and thin.cuh's): each thread's window max of its four conv
// outputs -> + bias -> clamp to [lo, hi] (0 where `live` is false: other groups' warps, windows
// past the image), summed over the block in a fixed order (warp shuffles, then warps 0 ..
// positions / 32 - 1 in order) into partial[(n C_out + co0 + co) tiles + tile].
template <int kCo>
__device__ __forceinline__ void pool_epilogue(const Args& a, const float (&acc)[4][kCo], bool live,
                                              int co0, int n, int tile, int positions,
                                              float (*warp_sums)[kCo]) {
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int co = 0; co < kCo; ++co) {
    const float m = fmaxf(fmaxf(acc[0][co], acc[1][co]), fmaxf(acc[2][co], acc[3][co]));
    float v =
        live && co0 + co < a.c_out ? fminf(fmaxf(m + __ldg(&a.bias[co0 + co]), a.lo), a.hi) : 0.f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) warp_sums[warp][co] = v;
  }
  __syncthreads();
  if (tid < kCo && co0 + tid < a.c_out) {
    float t = 0.f;
    for (int k = 0; k < positions / 32; ++k) t += warp_sums[k][tid];
    a.partial[(int64_t{n} * a.c_out + co0 + tid) * a.tiles + tile] = t;
  }
}

// grid (tiles, N, co_groups): block b of image n owns pooled rows [tile_y (b / tiles_x), + tile_y)
// and columns [tile_x (b % tiles_x), + tile_x) of output channels co0 = kCo z .. co0 + kCo - 1
// (those below C_out); writes partial[(n C_out + co) tiles + b].
template <int kCo>
__global__ void __launch_bounds__(kThreads, min_blocks(kCo)) pool_kernel(const Args a) {
  extern __shared__ __align__(16) float smem[];  // 2 stages, then the groups' reduction
  __shared__ float warp_sums[kWarps][kCo];
  const int n = blockIdx.y, co0 = kCo * static_cast<int>(blockIdx.z);
  const int tid = threadIdx.x;
  const int positions = kThreads / a.splits, group = tid / positions, pos = tid % positions;
  // Threads past the tile's last full row (256 mod tile_x) hold no window: they read row
  // tile_y - 1 of the patch (inside the stage) and are never live.
  const bool in_tile = pos < a.tile_y * a.tile_x;
  const int ty = min(pos / a.tile_x, a.tile_y - 1), tx = pos % a.tile_x;
  const int ty0 = static_cast<int>(blockIdx.x) / a.tiles_x * a.tile_y;
  const int tx0 = static_cast<int>(blockIdx.x) % a.tiles_x * a.tile_x;
  // Patch row r, column c hold x[.., iy0 + r, ix0 + c]: conv output oy reads iy = oy + pad - ky.
  const int iy0 = 2 * ty0 + a.pad_h - 2, ix0 = 2 * tx0 + a.pad_w - 2;
  const float* xn = a.x + int64_t{n} * a.c_in * a.h * a.w;
  float acc[4][kCo] = {};
  const int chunks = (a.c_in + a.chunk - 1) / a.chunk;
  stage_chunk<kCo>(a, smem, xn, 0, co0, iy0, ix0);
  for (int k = 0; k < chunks; ++k) {
    __pipeline_wait_prior(0);
    __syncthreads();  // chunk k is in for every thread; every thread is done with chunk k - 1
    if (k + 1 < chunks)
      stage_chunk<kCo>(a, smem + ((k + 1) & 1) * a.stage_floats, xn, (k + 1) * a.chunk, co0, iy0,
                       ix0);
    const float* st = smem + (k & 1) * a.stage_floats;
    const int count = min(a.chunk, a.c_in - k * a.chunk);
    for (int ci = group; ci < count; ci += a.splits) accumulate<kCo>(a, st, ci, ty, tx, acc);
  }
  if (a.splits > 1) sum_groups<kCo>(a, smem, group, pos, acc);
  // Epilogue (group 0's warps 0 .. positions / 32 - 1): max -> +bias -> clamp -> block sum.
  const bool live = group == 0 && in_tile && ty0 + ty < a.hp && tx0 + tx < a.wp;
  pool_epilogue<kCo>(a, acc, live, co0, n, static_cast<int>(blockIdx.x), positions, warp_sums);
}

using Kernel = void (*)(Args);
inline Kernel kernel_for(int group_co) {
  constexpr Kernel kKernels[kGroupCo] = {pool_kernel<1>, pool_kernel<2>, pool_kernel<3>,
                                         pool_kernel<4>, pool_kernel<5>, pool_kernel<6>,
                                         pool_kernel<7>, pool_kernel<8>};
  return kKernels[group_co - 1];
}

// Once per plan (host): lets the kernel for plan.args.group_co take plan.smem_bytes.
inline Status configure(const Plan& plan) {
  KB_CUDA_TRY(cudaFuncSetAttribute(kernel_for(plan.args.group_co),
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(plan.smem_bytes)));
  return Status::ok();
}

// a: plan.args with the pointers filled; n images. Needs tiles > 0 and n > 0.
inline Status launch(const Args& a, size_t smem_bytes, int n, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(a.tiles), static_cast<unsigned>(n),
                  static_cast<unsigned>(a.co_groups));
  kernel_for(a.group_co)<<<grid, kThreads, smem_bytes, stream>>>(a);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

}  // namespace kb::custom::L2_010::narrow3x3
