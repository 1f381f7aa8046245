// L2_010's generic path: any stride-1 ConvTranspose2d (kernel size, dilation, padding) as the
// conv2d with the flipped, transposed weight and padding dil*(k-1) - pad, on the im2col 3xTF32
// core of kernels/cores/conv2d_pool_tf32x3/conv2d_pool_core.cuh (64 x 128 tiles, 4-byte gathers
// through a tap table), with this problem's epilogue: 2x2 max pool -> +bias -> clamp -> the
// tile's sum per channel.
//   x: (N, C_in, H, W); w: (C_out, K = C_in KH KW), flipped and transposed per call by
//   flip_weight_kernel; taps: (3 K_pad), the core's build_tap_table; partial: (N, C_out,
//   col_tiles), which custom.cu's finish_kernel turns into out (N, C_out, 1, 1).
// Taken (custom.cu's class): layers for neither the narrow path (C_out <= 8, N <= 65535) nor the
// fast paths (3x3, dilation 1, padding 1). Its cost against the fast path: custom.cu's cost model
// (the im2col version, v1).
//
// Thread safety: device code without state; the launches are custom.cu's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/conv2d_pool_tf32x3/conv2d_pool_core.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"

namespace kb::custom::L2_010 {

using namespace kb::custom::conv2d_pool_tf32x3;

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
      const GatherSource src =
          gather_source<true>(o, k0 + j, p.k, offs[e], dh[e], dw[e], p.h, p.w_in);
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

}  // namespace kb::custom::L2_010
