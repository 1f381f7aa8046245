// L2_010 custom: out = tanh(mean_hw(hardtanh(maxpool2x2(conv_transpose2d(x) + bias), -1, 1))).
//   x: (N, C_in, H, W); weight: (C_in, C_out, 3, 3); bias: (C_out); out: (N, C_out, 1, 1), fp32
//   NCHW. ConvTranspose2d(stride 1, padding 1) keeps H x W; MaxPool2d(2, 2) in floor mode;
//   out[n,c] = tanh(1/(Hp Wp) sum_{i,j} clamp(max_{2x2} y[n,c,2i+a,2j+b] + bias[c], -1, 1)).
//   Full preset: (128, 64, 256, 256) -> conv (128, 64, 256, 256) -> pool (.., 128, 128).
//
// Cost (docs/problems.md#l2_010, full preset): 616.6 GFLOP; min DRAM 2,148 MB -> 0.50 ms;
// floor 9.20 ms strict fp32 FMA (compute-bound); 3xTF32 ideal ~3.8 ms. Reference 12.6-12.9 ms,
// best strict-fp32 peer 12.31 ms (eager, docs/baselines.md), goal <= 10.26 ms (peer / 1.2).
//
// Design: ConvTranspose2d with stride 1 is conv2d with the flipped, transposed weight and padding
// dil*(k-1) - pad. The 2.1 GB conv output never exists. C_out <= 8 takes the narrow path (plain
// fp32, below); otherwise three tensor-core paths, three kernels each:
//   fast on wgmma (3x3, dilation 1, padding 1, W >= 80, sm_90a code loaded: the full preset),
//   kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh with the pooling epilogue of
//   kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_wgmma.cuh: the same three steps as the next
//     path with 64-channel x 4-row x 128-column tiles, m64n128k8 TF32 wgmmas with both operands
//     in shared memory (the patch as 16-byte pixels: the 9 taps read it at 9 start addresses),
//     one persistent CTA of two warpgroups per SM. Measured (session 19, `kb bench
//     kernelbench22 --time-cap 3 --seed 7`): **5.78 ms** against 10.13 ms for the next path
//     (106.6 TFLOP/s, 0.63x the fp32 floor, 2.13x the best strict-fp32 peer); max |err| 2.9e-6.
//   fast on mma.sync (3x3, dilation 1, padding 1: narrower images, or no sm_90a code),
//   kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_patch.cuh:
//     1. split_weight_kernel: flip + 3xTF32 split + A-fragment order, once per call (295 KB).
//     2. conv3x3_pool_kernel: persistent, one 256-thread CTA per SM; tiles of 64 channels x
//        16 x 16 pixels; per 8-channel chunk the 18 x 18 input patch is loaded once, split once
//        and read by all 9 taps from shared memory; epilogue max4 -> +bias (max and +bias commute
//        exactly) -> clamp -> fixed-order per-tile sum: partial (N, C_out, tiles), 8 MB.
//   generic (any other stride-1 kernel / dilation / padding),
//   kernels/cores/conv2d_pool_tf32x3/conv2d_pool_core.cuh:
//     1. flip_weight; 2. conv_pool_kernel: the im2col 3xTF32 core (64 x 128 tiles, 4-byte gathers).
//   3. finish_kernel: one warp per (n, co): tanh(sum(partial) / (Hp*Wp)), fixed order.
//   narrow (C_out <= 8): one thread per pooled window, 4 x C_out fp32 FMA accumulators, then
//     finish_kernel. 3x3 with dilation 1 (the problem's geometry): narrow3x3.cuh (16-column
//     tiles for pooled widths <= 16, input channels split over up to 8 thread groups when the
//     grid is under a wave, double-buffered chunks, C_out as a template argument) where it
//     narrows the tile or splits the channels; otherwise the older narrow3x3_pool_kernel (8 x
//     32 pooled positions, chunks of 8 channels staged one at a time), measured the faster
//     there; any other stride-1 geometry: narrow_conv_pool_kernel, straight from global memory.
//     Session 22 (`kb bench L2_010 --dims ... --time-cap 1 --trials 3 --seed 7`, custom us,
//     narrow3x3_pool_kernel -> narrow3x3.cuh): 56 -> 39 at N 14, C_in 50, C_out 5, 95 x 25
//     (0.82x -> 1.8-2.3x the reference), 82 -> 25 at N 3, C_in 64, C_out 8, 40 x 40, 33 -> 16
//     at N 1, C_in 23, C_out 7, 5 x 101, 43 -> 42 at N 128, C_in 16, C_out 4, 64 x 20.
//
// Cost model of the fast path (full preset): 906M mma.sync m16n8k8 (3 per product tile). The
// im2col version issued ~5 instructions per MMA (split of A and B after every shared load, one
// 4-byte cp.async gather per im2col element) and ran 46 TFLOP/s (v1, 13.3 ms). Here per tap and
// warp: 12 LDS.128 + 48 MMA (~1.3 instructions per MMA; staging adds ~0.3), so the tensor pipe
// should bound it: L1_003 reached 69 TFLOP/s (~87% of the mma.sync TF32 rate, ~8 clocks per
// m16n8k8 per SM sub-partition) at ~4 instructions per MMA. Shared memory: 6 KB per warp per tap
// = ~55% of the 128 B/clock at that rate. L2 traffic: 295 KB of weights + 83 KB of patch per tile
// (~1 TB/s in all), DRAM ~2.2 GB. Two warps per sub-partition (118 KB of shared memory -> one CTA
// per SM) and one barrier per 432 MMAs per warp.
// Predicted on the H200: 8.5-9.5 ms (65-72 TFLOP/s), 80-90% of the mma.sync TF32 pipe; the
// risk is latency with only 2 warps per sub-partition. Measured: 10.12 ms (2026-11-30, v2,
// docs/kernels.md; 60.9 TFLOP/s), 10.125 ms in docs/bench-h200-2026-12-02b.json (1.10x the
// floor, 1.22x the peer): under the 10.26 ms goal. v1 (im2col core, 64-row tiles) measured
// 13.3 ms, 0.97x the reference. Shape sweep (docs/kernels.md): at C_out 2 the 64-channel tiles
// waste 31 of 32 MMAs; the narrow path brought 0.29x to 0.75-0.81x the reference, still a miss.
// Session 7: the narrow path of the 3x3 layer stages its input patch in shared memory
// (narrow3x3_pool_kernel): first with plain loads, 0.273 ms at N 46, C_in 44, C_out 2, 83 x 125
// (0.58x: each warp waited on ~27 serial global loads per chunk); with cp.async, all of a
// chunk's copies in flight, 0.126 ms (1.37-1.58x the reference over two runs; kb bench L2_010
// --dims N=46,C_in=44,C_out=2,H=83,W=125, device call 7); at C_out 8, N 128, 128 x 128 0.842 ms
// (1.99x). Sweep (seed 2026) worst 1.26x: the sweep goal is met.
//
// Accuracy: 3xTF32 (flipped weights and the input patch split once into big + small, 3 MMAs
// per product) ~ fp32 (K = 576, |conv| < 1); the sum of a tile stays in the MMA accumulator. Max,
// +bias and the clamp are exact; the mean sums 16,384 clamped values (|v| <= 1) in fp32 in a
// fixed order (per tile, then per plane), an error ~1e-7 after the division, and tanhf (accurate,
// slope <= 1) does not amplify it. No statistics. Measured max |err| 2.9e-6 at the full preset
// (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs
// the golden model): shift (x + 100) 0.0004x the tolerance (reference the same), scale (x 1000)
// 0.017x (reference 0.013x), centered 0.0007x (0.0002x).
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/narrow3x3.cuh"
#include "kernels/cores/conv2d_pool_tf32x3/conv2d_pool_core.cuh"
#include "kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_patch.cuh"
#include "kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_wgmma.cuh"
#include "kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_010 {

using namespace kb::custom::conv2d_pool_tf32x3;
namespace patch = kb::custom::conv3x3_pool_patch;
namespace wgp = kb::custom::conv3x3_wgmma;
using kb::custom::conv3x3_pool_wgmma::PoolSumEpilogue;

// Sizes validated to fit int by setup(). Grid: one CTA per (n, column tile, channel tile),
// blockIdx.x = (n * col_tiles + column tile) * co_tiles + channel tile.
struct PoolConvArgs {
  const float* x;     // (N, C_in, H, W)
  const float* w;     // (C_out, K): flipped, transposed weight
  const float* bias;  // (C_out)
  const int* taps;    // (3 K_pad): tap_off, then (dh, dw) pairs; 16-byte aligned
  float* partial;     // (N, C_out, col_tiles)
  int64_t x_image;    // C_in*H*W
  int c_out, k, k_pad, h, w_in, wp, cols_total;  // cols_total = 4 * Hp * Wp
  int ph, pw;
  int co_tiles, col_tiles;
  float lo, hi;
};

// ---- global -> shared ----

template <bool kVec>
__device__ __forceinline__ CopySlot weight_slot(int tid, int j) {
  return kVec ? a_copy_vec(tid, j) : a_copy_scalar(tid, j);
}
// Copies the weight k-tile starting at k0 into the stage at byte address stage_a.
template <bool kVec>
__device__ __forceinline__ void load_weights(const PoolConvArgs& p, int co0, uint32_t stage_a,
                                             int k0) {
  constexpr int kCopies = kVec ? kWeightVecCopies : kWeightScalarCopies;
#pragma unroll
  for (int j = 0; j < kCopies; ++j) {
    const CopySlot s = weight_slot<kVec>(threadIdx.x, j);
    // vector path: K % 4 == 0, so a chunk is all in or all out
    const bool ok = co0 + s.row < p.c_out && k0 + s.col < p.k;
    const float* src = ok ? p.w + int64_t{co0 + s.row} * p.k + k0 + s.col : p.w;
    if constexpr (kVec)
      cp_async_16(stage_a + s.smem * 4, src, ok);
    else
      cp_async_4(stage_a + s.smem * 4, src, ok);
  }
}
// Gathers the im2col k-tile starting at k0 of this thread's column into the stage at stage_b.
__device__ __forceinline__ void gather_column(const PoolConvArgs& p, const PixelOrigin& o,
                                              uint32_t stage_b, int k0) {
  const int4* taps = reinterpret_cast<const int4*>(p.taps + k0);
  const int4* taps_hw = reinterpret_cast<const int4*>(p.taps + p.k_pad + 2 * k0);
  const int s0 = b_copy_scalar(threadIdx.x, 0).smem;
  // x_pix may point outside x (only rel brings it in); the empty asm keeps one IMAD.WIDE per copy.
  const float* x_pix = p.x + o.x_off;
  asm("" : "+l"(x_pix));
#pragma unroll 2  // fully unrolled, the hoisted table loads spill at the 168-register cap
  for (int j4 = 0; j4 < kGatherCopies / 4; ++j4) {
    const int4 off = __ldg(taps + j4);
    const int4 hw01 = __ldg(taps_hw + 2 * j4), hw23 = __ldg(taps_hw + 2 * j4 + 1);
    const int offs[4] = {off.x, off.y, off.z, off.w};
    const int dh[4] = {hw01.x, hw01.z, hw23.x, hw23.z}, dw[4] = {hw01.y, hw01.w, hw23.y, hw23.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int j = 4 * j4 + e;
      const GatherSource src = gather_source(o, k0 + j, p.k, offs[e], dh[e], dw[e], p.h, p.w_in);
      cp_async_4(stage_b + b_copy_fast(s0, j) * 4, x_pix + src.rel, src.ok);
    }
  }
}

// ---- epilogue: pool, bias, clamp, per-channel tile sum ----

// partial[n][co0 + row][ct] = sum over this tile's windows of clamp(max4 + bias, lo, hi).
// red: the (no longer used) pipeline stages. cols: valid columns of the tile (a multiple of 4).
__device__ __forceinline__ void pool_sum_tile(const PoolConvArgs& p, float* red, const Acc& acc,
                                              int n, int col_tile, int co0, int cols, int warp_n,
                                              int lane) {
  float sums[kMmaTilesM][2];
#pragma unroll
  for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int co = co0 + c_row(0, lane, mt, half);
      const float b = co < p.c_out ? __ldg(p.bias + co) : 0.0f;
      float s = 0.0f;
#pragma unroll
      for (int vec = 0; vec < 2; ++vec) {  // acc[mt][0..3][2 half + vec] is one 2x2 window
        const int e = 2 * half + vec;
        const float m =
            fmaxf(fmaxf(acc[mt][0][e], acc[mt][1][e]), fmaxf(acc[mt][2][e], acc[mt][3][e])) + b;
        if (c_col(warp_n, lane, vec) < cols) s += fminf(fmaxf(m, p.lo), p.hi);
      }
      s += __shfl_xor_sync(0xffffffffu, s, 1);  // the 4 lanes of a row (t = lane % 4)
      s += __shfl_xor_sync(0xffffffffu, s, 2);
      sums[mt][half] = s;
    }
  __syncthreads();  // every warp is done with the stages
  if ((lane & 3) == 0)
#pragma unroll
    for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        red[warp_n * kBM + c_row(0, lane, mt, half)] = sums[mt][half];
  __syncthreads();
  const int row = threadIdx.x;
  if (row < kBM && co0 + row < p.c_out) {
    float s = 0.0f;
#pragma unroll
    for (int wn = 0; wn < kWarpsN; ++wn) s += red[wn * kBM + row];
    p.partial[(int64_t{n} * p.c_out + co0 + row) * p.col_tiles + col_tile] = s;
  }
}

// ---- kernels ----

template <bool kVecW>
__global__ void __launch_bounds__(kThreads, kMinBlocks) conv_pool_kernel(const PoolConvArgs p) {
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x & 31, warp_n = threadIdx.x >> 5;
  const int b = static_cast<int>(blockIdx.x), r = b / p.co_tiles;
  const int n = r / p.col_tiles, col_tile = r % p.col_tiles, co0 = (b % p.co_tiles) * kBM;
  const int c0 = col_tile * kBN, cols = min(kBN, p.cols_total - c0);
  const PixelOrigin origin = pixel_origin(n * p.x_image, c0 + b_copy_scalar(threadIdx.x, 0).col,
                                          p.cols_total, p.wp, p.w_in, p.ph, p.pw);
  const int a_base = a_frag_index(0, lane, 0, 0, 0);  // one warp along M
  const int b_base = kStageFloatsA + b_frag_index(warp_n, lane, 0, 0);
  Acc acc;
  tf32x3::mainloop<kStages, kStageFloatsA + kStageFloatsB>(
      smem, (p.k + kBK - 1) / kBK, acc,
      [&](uint32_t stage, int kt) {
        load_weights<kVecW>(p, co0, stage, kt * kBK);
        gather_column(p, origin, stage + kStageFloatsA * 4, kt * kBK);
      },
      [&](const float* stage, Acc& c) { mma_stage(stage, a_base, b_base, c); });
  pool_sum_tile(p, smem, acc, n, col_tile, co0, cols, warp_n, lane);
}

// w_t[co][ci][a][b] = weight[ci][co][KH-1-a][KW-1-b]; weight: (C_in, C_out, KH, KW).
__global__ void flip_weight_kernel(const float* __restrict__ weight, float* __restrict__ w_t,
                                   int c_in, int c_out, int kh, int kw) {
  const int taps = kh * kw, total = c_in * c_out * taps;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int t = i % taps, ci = i / taps % c_in, co = i / (taps * c_in);
    const int a = t / kw, b = t % kw;
    w_t[i] = weight[(int64_t{ci} * c_out + co) * taps + (kh - 1 - a) * kw + (kw - 1 - b)];
  }
}

// ---- narrow path: C_out <= 8, plain fp32 FMA ----
//
// The tensor-core paths tile 64 output channels; at C_out = 2 they waste 31 of 32 MMAs and ran
// 3.4x slower than the reference in the shape sweep (N 46, C_in 44, C_out 2, 83 x 125). Here a
// thread owns one pooled position of one image for every output channel: 4 window outputs x
// C_out accumulators over C_in x KH x KW taps (weights warp-uniform, read through the read-only
// cache), then max -> +bias -> clamp, and a fixed-order block sum per channel:
// partial[(n * C_out + co) * tiles + blockIdx.x], summed by finish_kernel.
constexpr int kNarrowCo = 8, kNarrowThreads = 256;

struct NarrowArgs {
  const float* x;       // (N, C_in, H, W)
  const float* weight;  // (C_in, C_out, KH, KW), unflipped: y[oy] += x[oy + pad - ky * dil] w[ky]
  const float* bias;    // (C_out)
  float* partial;       // (N, C_out, tiles)
  int c_in, c_out, h, w, kh, kw, dil, pad_h, pad_w, hp, wp, tiles;
  float lo, hi;
};

// The epilogue of both narrow kernels: per output channel, the max of the thread's 2x2 window ->
// +bias -> clamp (0 for a thread past the pooled grid), then the block's fixed-order sum:
// warps by shuffles, then warp 0..7 in order into partial[(n * C_out + co) * tiles + block].
__device__ __forceinline__ void narrow_epilogue(const NarrowArgs& a,
                                                const float (&acc)[4][kNarrowCo], bool live, int n,
                                                float (&sums)[kNarrowThreads / 32][kNarrowCo]) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int co = 0; co < kNarrowCo; ++co) {
    if (co >= a.c_out) break;
    const float m = fmaxf(fmaxf(acc[0][co], acc[1][co]), fmaxf(acc[2][co], acc[3][co]));
    float v = live ? fminf(fmaxf(m + __ldg(&a.bias[co]), a.lo), a.hi) : 0.f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) sums[warp][co] = v;
  }
  __syncthreads();
  if (threadIdx.x < a.c_out) {
    float t = 0.f;
    for (int k = 0; k < kNarrowThreads / 32; ++k) t += sums[k][threadIdx.x];
    a.partial[(int64_t{n} * a.c_out + threadIdx.x) * a.tiles + blockIdx.x] = t;
  }
}

// grid (tiles, N): block b of image n covers pooled positions [256 b, 256 b + 256).
__global__ void __launch_bounds__(kNarrowThreads) narrow_conv_pool_kernel(const NarrowArgs a) {
  __shared__ float sums[kNarrowThreads / 32][kNarrowCo];
  const int n = blockIdx.y, pos = blockIdx.x * kNarrowThreads + threadIdx.x;
  const bool live = pos < a.hp * a.wp;
  const int py = live ? pos / a.wp : 0, px = live ? pos % a.wp : 0;
  float acc[4][kNarrowCo] = {};
  const float* xn = a.x + int64_t{n} * a.c_in * a.h * a.w;
  const int taps = a.kh * a.kw;
  for (int ci = 0; ci < a.c_in; ++ci) {
    const float* xc = xn + int64_t{ci} * a.h * a.w;
    const float* wc = a.weight + int64_t{ci} * a.c_out * taps;
    for (int ky = 0; ky < a.kh; ++ky) {
      for (int kx = 0; kx < a.kw; ++kx) {
        float xv[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int iy = 2 * py + (q >> 1) + a.pad_h - ky * a.dil;
          const int ix = 2 * px + (q & 1) + a.pad_w - kx * a.dil;
          xv[q] =
              live && iy >= 0 && iy < a.h && ix >= 0 && ix < a.w ? __ldg(&xc[iy * a.w + ix]) : 0.f;
        }
#pragma unroll
        for (int co = 0; co < kNarrowCo; ++co) {
          if (co >= a.c_out) break;
          const float wv = __ldg(&wc[co * taps + ky * a.kw + kx]);
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[q][co] = fmaf(xv[q], wv, acc[q][co]);
        }
      }
    }
  }
  narrow_epilogue(a, acc, live, n, sums);
}

// The narrow path of the 3x3, dilation-1 layer (the problem's own geometry): a block owns
// 8 x 32 pooled positions (16 x 64 conv outputs) of one image and stages, per chunk of 8 input
// channels, the 18 x 66 input patch (cp.async, all copies of a chunk in flight at once) and the
// chunk's weights in shared memory: one coalesced read of x instead of 4 x 9 bounds-checked
// loads per channel and thread. A thread reads its 4 x 4
// input window as 8-byte pairs and does 36 multiply-adds per channel and output channel.
// Same sums in the same order as narrow_conv_pool_kernel (channel by channel, taps in (ky, kx)
// order), the same epilogue. partial: (N, C_out, tiles), tiles = tiles_y * tiles_x.
constexpr int kPatchTileY = 8, kPatchTileX = 32;  // pooled positions per block
constexpr int kPatchCi = 8;                       // input channels per staged chunk
constexpr int kPatchRows = 2 * kPatchTileY + 2, kPatchCols = 2 * kPatchTileX + 2;
constexpr int kPatchStride = kPatchCols + 2;  // even: 8-byte pairs stay aligned
static_assert(kPatchTileY * kPatchTileX == kNarrowThreads, "one pooled position per thread");

__global__ void __launch_bounds__(kNarrowThreads)
    narrow3x3_pool_kernel(const NarrowArgs a, int tiles_x) {
  __shared__ __align__(16) float xs[kPatchCi][kPatchRows][kPatchStride];
  __shared__ __align__(16) float ws[kPatchCi][kNarrowCo][12];  // 9 taps, padded to 3 float4
  __shared__ float sums[kNarrowThreads / 32][kNarrowCo];
  const int n = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int ty0 = static_cast<int>(blockIdx.x) / tiles_x * kPatchTileY;
  const int tx0 = static_cast<int>(blockIdx.x) % tiles_x * kPatchTileX;
  const int ty = tid / kPatchTileX, tx = tid % kPatchTileX;
  const bool live = ty0 + ty < a.hp && tx0 + tx < a.wp;
  // Patch row r, column c hold x[.., iy0 + r, ix0 + c]: conv output oy reads iy = oy + pad - ky.
  const int iy0 = 2 * ty0 + a.pad_h - 2, ix0 = 2 * tx0 + a.pad_w - 2;
  const float* xn = a.x + int64_t{n} * a.c_in * a.h * a.w;
  float acc[4][kNarrowCo] = {};
  for (int c0 = 0; c0 < a.c_in; c0 += kPatchCi) {
    __syncthreads();  // every thread is done with the previous chunk
    for (int row = warp; row < kPatchCi * kPatchRows; row += kNarrowThreads / 32) {
      const int ci = row / kPatchRows, r = row % kPatchRows, iy = iy0 + r;
      const bool row_in = c0 + ci < a.c_in && iy >= 0 && iy < a.h;
      const float* src = xn + (int64_t{c0 + ci} * a.h + iy) * a.w;
      for (int c = lane; c < kPatchCols; c += 32) {
        const int ix = ix0 + c;
        if (row_in && ix >= 0 && ix < a.w) {
          __pipeline_memcpy_async(&xs[ci][r][c], src + ix, sizeof(float));
        } else {
          xs[ci][r][c] = 0.f;
        }
      }
    }
    __pipeline_commit();  // every copy of the chunk in flight at once
    for (int e = tid; e < kPatchCi * kNarrowCo * 12; e += kNarrowThreads) {
      const int t = e % 12, co = e / 12 % kNarrowCo, ci = e / (12 * kNarrowCo);
      const bool in = t < 9 && co < a.c_out && c0 + ci < a.c_in;
      ws[ci][co][t] = in ? __ldg(&a.weight[(int64_t{c0 + ci} * a.c_out + co) * 9 + t]) : 0.f;
    }
    __pipeline_wait_prior(0);
    __syncthreads();
    const int chunk = min(kPatchCi, a.c_in - c0);
    for (int ci = 0; ci < chunk; ++ci) {
      float xv[4][4];  // rows 2 ty .. 2 ty + 3, columns 2 tx .. 2 tx + 3 of the patch
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float2 lo = *reinterpret_cast<const float2*>(&xs[ci][2 * ty + r][2 * tx]);
        const float2 hi = *reinterpret_cast<const float2*>(&xs[ci][2 * ty + r][2 * tx + 2]);
        xv[r][0] = lo.x, xv[r][1] = lo.y, xv[r][2] = hi.x, xv[r][3] = hi.y;
      }
#pragma unroll
      for (int co = 0; co < kNarrowCo; ++co) {
        if (co >= a.c_out) break;
        narrow3x3::window_taps(xv, &ws[ci][co][0], co, acc);
      }
    }
  }
  narrow_epilogue(a, acc, live, n, sums);
}

// out[nc] = tanh(sum_t partial[nc][t] / count); one warp per (n, co). out: (N*C_out).
__global__ void finish_kernel(const float* __restrict__ partial, float* __restrict__ out,
                              int planes, int tiles, float count) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int lane = threadIdx.x & 31;
  if (warp >= planes) return;
  const float* row = partial + int64_t{warp} * tiles;
  float s = 0.0f;
  for (int t = lane; t < tiles; t += 32) s += row[t];
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
  if (lane == 0) out[warp] = tanhf(s / count);
}

// ---- host side ----

class ConvPoolMeanTanh final : public Implementation {
 public:
  ~ConvPoolMeanTanh() override {
    KB_CUDA_WARN(cudaFree(taps_));
    KB_CUDA_WARN(cudaFree(w_t_));
    KB_CUDA_WARN(cudaFree(partial_));
    KB_CUDA_WARN(cudaFree(w_split_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    KB_TRY(read_geometry(p));
    a_.lo = static_cast<float>(p.number("hardtanh", "min_val"));
    a_.hi = static_cast<float>(p.number("hardtanh", "max_val"));
    if (narrow_) return setup_narrow();
    if (fast_) return setup_fast();
    const std::vector<int> table = build_tap_table(c_in_, a_.h, a_.w_in, kh_, kw_, dil_);
    const size_t partial_floats = size_t(n_) * a_.c_out * std::max(a_.col_tiles, 1);
    KB_CUDA_TRY(cudaMalloc(&taps_, table.size() * sizeof(int)));
    KB_CUDA_TRY(
        cudaMemcpy(taps_, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
    KB_CUDA_TRY(cudaMalloc(&w_t_, size_t(a_.c_out) * a_.k * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&partial_, partial_floats * sizeof(float)));
    for (auto kernel : {&conv_pool_kernel<true>, &conv_pool_kernel<false>}) {
      KB_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    }
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (narrow_) return run_narrow(args, stream);
    if (fast_) return run_fast(args, stream);
    PoolConvArgs a = a_;
    a.x = args.inputs[x_].data;
    a.w = w_t_;
    a.bias = args.params[bias_].data;
    a.taps = taps_;
    a.partial = partial_;
    const int weight_floats = a.c_out * a.k;
    flip_weight_kernel<<<(weight_floats + 255) / 256, 256, 0, stream>>>(
        args.params[weight_].data, w_t_, c_in_, a.c_out, kh_, kw_);
    KB_CUDA_TRY(cudaGetLastError());
    const unsigned grid = static_cast<unsigned>(n_ * a.col_tiles * a.co_tiles);
    if (grid > 0) {  // no pooling window at all: the mean is 0 / 0 = NaN, as in PyTorch
      if (a.k % 4 == 0)
        conv_pool_kernel<true><<<grid, kThreads, kSmemBytes, stream>>>(a);
      else
        conv_pool_kernel<false><<<grid, kThreads, kSmemBytes, stream>>>(a);
      KB_CUDA_TRY(cudaGetLastError());
    }
    const int planes = n_ * a.c_out;  // out: (N, C_out, 1, 1)
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(partial_, args.output.data, planes,
                                                        a.col_tiles, float(a.cols_total / 4));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  // ---- narrow path: C_out <= 8 ----

  Status setup_narrow() {
    NarrowArgs& g = narrow_args_;
    g.c_in = c_in_, g.c_out = a_.c_out, g.h = a_.h, g.w = a_.w_in, g.kh = kh_, g.kw = kw_;
    // The transposed conv's own padding (a_.ph/pw are the equivalent conv's, dil*(k-1) - pad).
    g.dil = dil_, g.pad_h = dil_ * (kh_ - 1) - a_.ph, g.pad_w = dil_ * (kw_ - 1) - a_.pw;
    g.hp = hp_, g.wp = a_.wp;
    patch_narrow_ = kh_ == 3 && kw_ == 3 && dil_ == 1;
    split_narrow_ = false;
    if (patch_narrow_) {
      KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
      split_plan_ = narrow3x3::plan(n_, c_in_, g.c_out, g.h, g.w, g.pad_h, g.pad_w, hp_, a_.wp, sms,
                                    a_.lo, a_.hi);
      // 32-column tiles without a channel split are narrow3x3_pool_kernel's own work, and it was
      // the faster there (N 128, C_in 64, C_out 8, 128 x 128: 0.841 against 0.933 ms; N 46,
      // C_in 44, C_out 2, 83 x 125: 0.126 / 0.124; session 22).
      split_narrow_ = split_plan_.args.splits > 1 || split_plan_.args.tile_x < kPatchTileX;
    }
    if (split_narrow_) {
      KB_TRY(narrow3x3::configure(split_plan_));
      g.tiles = split_plan_.args.tiles;
    } else if (patch_narrow_) {
      patch_tiles_x_ = (a_.wp + kPatchTileX - 1) / kPatchTileX;
      g.tiles = (hp_ + kPatchTileY - 1) / kPatchTileY * patch_tiles_x_;
    } else {
      g.tiles = (hp_ * a_.wp + kNarrowThreads - 1) / kNarrowThreads;
    }
    g.lo = a_.lo, g.hi = a_.hi;
    KB_CUDA_TRY(
        cudaMalloc(&partial_, std::max<size_t>(size_t(n_) * g.c_out * g.tiles, 1) * sizeof(float)));
    return Status::ok();
  }

  Status run_narrow(const ImplArgs& args, cudaStream_t stream) {
    NarrowArgs g = narrow_args_;
    g.x = args.inputs[x_].data;
    g.weight = args.params[weight_].data;
    g.bias = args.params[bias_].data;
    g.partial = partial_;
    if (g.tiles > 0 &&
        n_ > 0) {  // no pooling window at all: the mean is 0 / 0 = NaN, as in PyTorch
      const dim3 grid(static_cast<unsigned>(g.tiles), static_cast<unsigned>(n_));
      if (split_narrow_) {
        narrow3x3::Args s = split_plan_.args;
        s.x = g.x, s.weight = g.weight, s.bias = g.bias, s.partial = g.partial;
        KB_TRY(narrow3x3::launch(s, split_plan_.smem_bytes, n_, stream));
      } else if (patch_narrow_) {
        narrow3x3_pool_kernel<<<grid, kNarrowThreads, 0, stream>>>(g, patch_tiles_x_);
      } else {
        narrow_conv_pool_kernel<<<grid, kNarrowThreads, 0, stream>>>(g);
      }
      KB_CUDA_TRY(cudaGetLastError());
    }
    const int planes = n_ * g.c_out;
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(partial_, args.output.data, planes, g.tiles,
                                                        float(int64_t{hp_} * a_.wp));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  // ---- fast path: 3x3, dilation 1, padding 1 (conv3x3_pool_patch.cuh) ----

  Status setup_fast() {
    bool wgmma_loaded = false;
    KB_CUDA_TRY(tf32x3::wgmma::loaded_here(&wgmma_loaded));
    wgmma_ = wgmma_loaded && a_.w_in >= wgp::Conv3x3Wgmma::kMinWidth;
    if (wgmma_) return setup_wgmma();
    patch::PatchArgs& f = f_;
    f.c_in = c_in_, f.c_out = a_.c_out, f.h = a_.h, f.w = a_.w_in;
    f.hp = hp_;
    f.wp = a_.wp;
    f.chunks = (c_in_ + patch::kChunkCi - 1) / patch::kChunkCi;
    f.co_tiles = (a_.c_out + patch::kTileCo - 1) / patch::kTileCo;
    f.tiles_h = (2 * f.hp + patch::kTileRows - 1) / patch::kTileRows;
    f.tiles_w = (2 * f.wp + patch::kTileCols - 1) / patch::kTileCols;
    const int64_t tiles = int64_t{n_} * f.co_tiles * f.tiles_h * f.tiles_w;
    if (tiles > 0x7fffffff) return Status::failed_precondition("L2_010 custom: too many tiles");
    f.tiles_total = static_cast<int>(tiles);
    f.lo = a_.lo, f.hi = a_.hi;
    const size_t w_floats = size_t(f.co_tiles) * f.chunks * patch::kAStageFloats;
    const size_t partial_floats = size_t(n_) * f.c_out * std::max(f.tiles_h * f.tiles_w, 1);
    KB_CUDA_TRY(cudaMalloc(&w_split_, w_floats * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&partial_, partial_floats * sizeof(float)));
    KB_CUDA_TRY(cudaFuncSetAttribute(patch::conv3x3_pool_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     patch::kSmemBytes));
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    int per_sm = 0;
    KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, patch::conv3x3_pool_kernel,
                                                              patch::kThreads, patch::kSmemBytes));
    if (per_sm < 1)
      return Status::failed_precondition("L2_010 custom: fast kernel does not fit an SM");
    grid_ = static_cast<unsigned>(std::min<int64_t>(tiles, int64_t{sms} * per_sm));
    return Status::ok();
  }

  // ---- fast path on wgmma (sm_90a), images of 80 columns or more (conv3x3_pool_wgmma.cuh) ----

  Status setup_wgmma() {
    KB_TRY(wgmma_plan_.setup<PoolSumEpilogue>({n_, c_in_, a_.c_out, a_.h, a_.w_in, /*pad=*/1,
                                               2 * hp_, 2 * a_.wp,  // the rows the pool reads
                                               /*transposed_flipped=*/true}));
    const wgp::WgmmaArgs& f = wgmma_plan_.args();
    const size_t partial_floats = size_t(n_) * f.c_out * std::max(f.tiles_h * f.tiles_w, 1);
    KB_CUDA_TRY(cudaMalloc(&partial_, partial_floats * sizeof(float)));
    return Status::ok();
  }

  Status run_wgmma(const ImplArgs& args, cudaStream_t stream) {
    const wgp::WgmmaArgs& f = wgmma_plan_.args();
    const PoolSumEpilogue epi{args.params[bias_].data, partial_, hp_, a_.wp, a_.lo, a_.hi};
    // No pooling window at all (no tile): the mean is 0 / 0 = NaN, as in PyTorch.
    KB_TRY(wgmma_plan_.run(args.inputs[x_].data, args.params[weight_].data, epi, stream));
    const int planes = n_ * f.c_out;  // out: (N, C_out, 1, 1)
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(
        partial_, args.output.data, planes, f.tiles_h * f.tiles_w, float(int64_t{hp_} * a_.wp));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Status run_fast(const ImplArgs& args, cudaStream_t stream) {
    if (wgmma_) return run_wgmma(args, stream);
    patch::PatchArgs f = f_;
    f.x = args.inputs[x_].data;
    f.w_split = w_split_;
    f.bias = args.params[bias_].data;
    f.partial = partial_;
    constexpr int kPrepThreads = 256;
    const int prep_items = f.co_tiles * f.chunks * (patch::kAStageFloats / 2);
    patch::split_weight_kernel<<<(prep_items + kPrepThreads - 1) / kPrepThreads, kPrepThreads, 0,
                                 stream>>>(args.params[weight_].data, w_split_, f.c_in, f.c_out,
                                           f.chunks, f.co_tiles);
    KB_CUDA_TRY(cudaGetLastError());
    if (grid_ > 0) {  // no pooling window at all: the mean is 0 / 0 = NaN, as in PyTorch
      patch::conv3x3_pool_kernel<<<grid_, patch::kThreads, patch::kSmemBytes, stream>>>(f);
      KB_CUDA_TRY(cudaGetLastError());
    }
    const int planes = n_ * f.c_out;  // out: (N, C_out, 1, 1)
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(
        partial_, args.output.data, planes, f.tiles_h * f.tiles_w, float(int64_t{f.hp} * f.wp));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  // ---- geometry ----

  static std::vector<int64_t> ints_or(const ProblemInstance& p, const char* node, const char* attr,
                                      int64_t fill) {
    return p.has_attr(node, attr) ? p.ints(node, attr) : std::vector<int64_t>(2, fill);
  }

  // Stride-1 transposed conv (= conv with padding dil*(k-1) - pad), then 2x2/2 max pool.
  Status read_geometry(const ProblemInstance& p) {
    const Shape& xs = p.shape_of("x");                      // (N, C_in, H, W)
    const Shape& ws = p.shape_of("conv_transpose.weight");  // (C_in, C_out, KH, KW)
    const Shape& ys = p.shape_of("y");                      // (N, C_out, Ho, Wo)
    const Shape& ms = p.shape_of("m");                      // (N, C_out, Ho/2, Wo/2)
    const std::vector<int64_t> st = ints_or(p, "conv_transpose", "stride", 1),
                               pad = ints_or(p, "conv_transpose", "padding", 0),
                               opad = ints_or(p, "conv_transpose", "output_padding", 0),
                               dil = ints_or(p, "conv_transpose", "dilation", 1),
                               pk = p.ints("maxpool", "kernel_size"),
                               ps = ints_or(p, "maxpool", "stride", 2),
                               pp = ints_or(p, "maxpool", "padding", 0);
    const int64_t groups =
        p.has_attr("conv_transpose", "groups") ? p.int_attr("conv_transpose", "groups") : 1;
    bool ok = xs.size() == 4 && ws.size() == 4 && ys.size() == 4 && ms.size() == 4 && groups == 1 &&
              ws[0] == xs[1] && dil.size() == 2 && dil[0] == dil[1] && ys[1] == ws[1] &&
              ms[2] == ys[2] / 2 && ms[3] == ys[3] / 2;
    for (int i = 0; ok && i < 2; ++i) {
      const int64_t conv_pad = dil[i] * (ws[2 + i] - 1) - pad[i];
      ok = st[i] == 1 && opad[i] == 0 && conv_pad >= 0 && pk[i] == 2 && ps[i] == 2 && pp[i] == 0 &&
           ys[2 + i] == xs[2 + i] + 2 * conv_pad - dil[i] * (ws[2 + i] - 1);
    }
    constexpr int64_t kIntMax = 0x7fffffff;
    if (!ok || xs[1] * xs[2] * xs[3] > kIntMax || xs[1] * ws[2] * ws[3] > kIntMax / 8 ||
        4 * ms[2] * ms[3] > kIntMax - kBN || ws[1] > kIntMax - kBM || ys[2] > kIntMax / 4)
      return Status::failed_precondition(
          "L2_010 custom: needs a stride-1 ConvTranspose2d and a 2x2/2 max pool in int range");
    n_ = static_cast<int>(xs[0]), c_in_ = static_cast<int>(xs[1]);
    kh_ = static_cast<int>(ws[2]), kw_ = static_cast<int>(ws[3]), dil_ = static_cast<int>(dil[0]);
    a_.x_image = xs[1] * xs[2] * xs[3];
    a_.c_out = static_cast<int>(ws[1]);
    a_.k = c_in_ * kh_ * kw_;
    a_.k_pad = (a_.k + kBK - 1) / kBK * kBK;
    a_.h = static_cast<int>(xs[2]), a_.w_in = static_cast<int>(xs[3]);
    a_.wp = static_cast<int>(ms[3]);
    hp_ = static_cast<int>(ms[2]);
    a_.cols_total = static_cast<int>(4 * ms[2] * ms[3]);
    a_.ph = static_cast<int>(dil[0] * (kh_ - 1) - pad[0]);
    a_.pw = static_cast<int>(dil[1] * (kw_ - 1) - pad[1]);
    a_.co_tiles = (a_.c_out + kBM - 1) / kBM;
    a_.col_tiles = (a_.cols_total + kBN - 1) / kBN;
    fast_ = kh_ == patch::kKernel && kw_ == patch::kKernel && dil_ == 1 && a_.ph == 1 && a_.pw == 1;
    narrow_ = a_.c_out <= kNarrowCo && n_ <= 65535;
    if (int64_t{n_} * a_.col_tiles * a_.co_tiles > kIntMax)
      return Status::failed_precondition("L2_010 custom: too many tiles");
    return Status::ok();
  }

  size_t x_ = 0, weight_ = 0, bias_ = 0;
  int n_ = 0, c_in_ = 0, kh_ = 0, kw_ = 0, dil_ = 1;
  PoolConvArgs a_{};           // sizes; pointers are filled per call
  int* taps_ = nullptr;        // (3 K_pad) tap table
  float* w_t_ = nullptr;       // (C_out, K) flipped weight, rewritten every call
  float* partial_ = nullptr;   // (N, C_out, col_tiles) or, fast, (N, C_out, tiles_h * tiles_w)
  int hp_ = 0;                 // pooled rows
  bool fast_ = false;          // 3x3, dilation 1, padding 1: conv3x3_pool_patch.cuh
  bool narrow_ = false;        // C_out <= 8: narrow_conv_pool_kernel (fp32 FMA)
  NarrowArgs narrow_args_{};   // narrow path sizes; pointers are filled per call
  bool patch_narrow_ = false;  // narrow and 3x3, dilation 1: narrow3x3_pool_kernel
  int patch_tiles_x_ = 0;      // narrow3x3_pool_kernel's tiles along the pooled width
  bool split_narrow_ = false;  // patch_narrow_ on narrow3x3.cuh (channel splits, double-buffered)
  narrow3x3::Plan split_plan_{};  // its sizes; pointers are filled per call
  patch::PatchArgs f_{};          // fast path sizes; pointers are filled per call
  bool wgmma_ = false;            // fast path on wgmma (conv3x3_pool_wgmma.cuh)
  wgp::Conv3x3Wgmma wgmma_plan_;  // its plan: sizes, split weights, launches
  float* w_split_ = nullptr;      // fast, mma.sync: (co_tiles, chunks, kAStageFloats), every call
  unsigned grid_ = 0;             // fast, mma.sync: persistent CTAs
};

}  // namespace kb::custom::L2_010

KB_REGISTER_IMPLEMENTATION(L2_010, custom, kb::custom::L2_010::ConvPoolMeanTanh)
