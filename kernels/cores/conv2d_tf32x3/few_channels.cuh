// The conv2d core's few-channel kernel: strict fp32 FMA, a thread per output pixel and 2, 4 or 8
// channels, for few output channels over many pixels (conv2d_core.cuh's few_channels_group has
// the rule and its measurements), with the core's epilogues and statistics layout; the narrow
// kernel's pixel window and tile moments (narrow_fma.cuh).
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/conv2d_tf32x3/conv_args.cuh"
#include "kernels/cores/conv2d_tf32x3/narrow_fma.cuh"

namespace kb::custom::conv2d_tf32x3 {

// ---- the few-channel kernel (C_out <= kFewMaxChannels, long K, many pixels) ----
//
// A thread per output pixel and kCo channels (a block: kBN pixels of one image, the channels of
// blockIdx.y's group), kCo fp32 accumulators: each input value loaded serves kCo channels, where
// the tile's 128-channel rows would be mostly padding and the narrow kernel loads x once a
// channel. The group's weights go to shared memory as [k][kCo] (zero past C_out), a tap's kCo
// weights one broadcast load of 8 or 16 bytes. Sums per channel in narrow_pixel's order (ci; per
// kernel row a chain of FMAs; rows added), plain fp32; the same epilogue and statistics layout
// as the narrow kernel.
constexpr int kFewMaxChannels = 16;
// The weights' shared-memory copy: K x kCo floats within the default 48 KB of a block, less the
// statistics' arrays.
constexpr int kFewWeightsMaxBytes = 48 * 1024 - kNarrowStaticSmem;

// row[j] += ws[k][j] * x for the kCo channels: the tap's weights as one float2 or kCo / 4 float4
// broadcast loads from shared memory.
template <int kCo>
__device__ __forceinline__ void few_tap(float (&row)[kCo], const float* ws, int k, float x) {
  if constexpr (kCo == 2) {
    const float2 w = reinterpret_cast<const float2*>(ws)[k];
    row[0] = fmaf(w.x, x, row[0]), row[1] = fmaf(w.y, x, row[1]);
  } else {
#pragma unroll
    for (int q = 0; q < kCo / 4; ++q) {
      const float4 w = reinterpret_cast<const float4*>(ws)[k * (kCo / 4) + q];
      float* r = row + 4 * q;
      r[0] = fmaf(w.x, x, r[0]), r[1] = fmaf(w.y, x, r[1]);
      r[2] = fmaf(w.z, x, r[2]), r[3] = fmaf(w.w, x, r[3]);
    }
  }
}

// Six blocks an SM (24 warps) leave 80 registers: at 8 (64) the statistics epilogue spilled.
template <int kCo, class Epi>
__global__ void __launch_bounds__(kNarrowThreads, 6)
    conv2d_few_channels_kernel(const ConvArgs p, const int kh_n, const int kw_n, const int dh,
                               const int dw, const Epi epi) {
  static_assert(kCo == 2 || kCo == 4 || kCo == 8, "the weights' vector loads");
  extern __shared__ __align__(16) float few_w[];  // [k][kCo]
  const int co0 = static_cast<int>(blockIdx.y) * kCo;
  for (int i = static_cast<int>(threadIdx.x); i < p.k * kCo; i += kNarrowThreads) {
    const int k = i / kCo, co = co0 + i % kCo;
    few_w[i] = co < p.c_out ? __ldg(p.w + int64_t{co} * p.k + k) : 0.0f;
  }
  __syncthreads();
  const int pt = static_cast<int>(blockIdx.x) % p.pix_tiles;
  const int n = static_cast<int>(blockIdx.x) / p.pix_tiles;
  const int i = static_cast<int>(threadIdx.x);
  const int pixel = pt * kBN + i;
  const bool ok = pixel < p.hw_out;
  float acc[kCo] = {};
  if (ok) {
    const PixelWindow win = pixel_window(p, pixel, kh_n, kw_n, dh, dw);
    const int64_t hw_in = int64_t{p.h} * p.w_in;
    const float* xc = p.x + n * p.x_image + int64_t{win.ih0} * p.w_in + win.iw0;
    const int taps = kh_n * kw_n;
    if (win.full_3x3(kh_n, kw_n)) {  // all nine loads of a channel in flight at once
#pragma unroll 1
      for (int ci = 0, k = 0; ci < p.k / 9; ++ci, xc += hw_in, k += 9) {
        float xv[9];
#pragma unroll
        for (int a = 0; a < 3; ++a)
#pragma unroll
          for (int b = 0; b < 3; ++b) xv[a * 3 + b] = __ldg(xc + int64_t{a} * dh * p.w_in + b * dw);
#pragma unroll
        for (int a = 0; a < 3; ++a) {
          float row[kCo] = {};
#pragma unroll
          for (int b = 0; b < 3; ++b) few_tap<kCo>(row, few_w, k + a * 3 + b, xv[a * 3 + b]);
#pragma unroll
          for (int j = 0; j < kCo; ++j) acc[j] += row[j];
        }
      }
    } else {
#pragma unroll 1
      for (int ci = 0, k0 = 0; ci < p.k / taps; ++ci, xc += hw_in, k0 += taps) {
        for (int a = win.a_lo; a < win.a_hi; ++a) {
          const float* xr = xc + int64_t{a} * dh * p.w_in;
          float row[kCo] = {};
          for (int b = win.b_lo; b < win.b_hi; ++b)
            few_tap<kCo>(row, few_w, k0 + a * kw_n + b, __ldg(xr + b * dw));
#pragma unroll
          for (int j = 0; j < kCo; ++j) acc[j] += row[j];
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kCo; ++j) {
    const int co = co0 + j;
    if (co >= p.c_out) break;  // uniform across the block
    const float v = ok ? epi(epi.row(co), acc[j]) : 0.0f;
    if (ok) p.y[(int64_t{n} * p.c_out + co) * p.hw_out + pixel] = v;
    if constexpr (Epi::kStats) store_tile_moments(p, v, ok, n, co, pt);
  }
}

}  // namespace kb::custom::conv2d_tf32x3
