// L2_010's narrow path (C_out <= 8, plain fp32 FMA): its arguments (NarrowArgs), the epilogue of
// its kernels and two of them; narrow3x3.cuh holds the third. The launches, and finish_kernel,
// which turns partial into out (N, C_out, 1, 1), are custom.cu's.
//   x: (N, C_in, H, W); weight: (C_in, C_out, KH, KW) as given (unflipped); partial:
//   (N, C_out, tiles), one value per block.
//   narrow_conv_pool_kernel  any stride-1 geometry, straight from global memory.
//   narrow3x3_pool_kernel    3x3, dilation 1 (the problem's geometry), 8 x 32 pooled positions
//                            per block, where narrow3x3.cuh neither narrows the tile nor splits
//                            the channels (measured the faster there: custom.cu's setup_narrow).
//
// Why: the tensor-core paths tile 64 output channels; at C_out = 2 they waste 31 of 32 MMAs and
// ran 3.4x slower than the reference in the shape sweep (N 46, C_in 44, C_out 2, 83 x 125). Here a
// thread owns one pooled position of one image for every output channel: 4 window outputs x
// C_out accumulators over C_in x KH x KW taps (weights warp-uniform, read through the read-only
// cache), then max -> +bias -> clamp, and a fixed-order block sum per channel:
// partial[(n * C_out + co) * tiles + blockIdx.x], summed by finish_kernel.
//
// Thread safety: device code without state; the launches are custom.cu's.
#pragma once

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/narrow3x3.cuh"

namespace kb::custom::L2_010 {

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
// Session 7: first with plain loads, 0.273 ms at N 46, C_in 44, C_out 2, 83 x 125 (0.58x: each
// warp waited on ~27 serial global loads per chunk); with cp.async, all of a chunk's copies in
// flight, 0.126 ms (1.37-1.58x the reference over two runs; kb bench L2_010
// --dims N=46,C_in=44,C_out=2,H=83,W=125, device call 7); at C_out 8, N 128, 128 x 128 0.842 ms
// (1.99x).
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

}  // namespace kb::custom::L2_010
