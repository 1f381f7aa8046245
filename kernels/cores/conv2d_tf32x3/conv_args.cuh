// The conv2d core's kernel arguments and its im2col gather (which x element feeds B(k, pixel)),
// shared by the core's kernels (tensor_tile.cuh, flat_fma.cuh, narrow_fma.cuh, few_channels.cuh).
//   x: (N, C_in, H, W) fp32 NCHW; w: (C_out, C_in, KH, KW) OIHW; y: (N, C_out, Ho, Wo); groups 1.
//   k = (ci*KH + kh)*KW + kw; the tap table maps k to the offset of x[n][ci][kh*dh][kw*dw] from
//   x[n][0][0][0] (and, for padded layers, to (kh*dh, kw*dw)).
// Thread safety: plain data and stateless functions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/tf32x3/gemm128.cuh"

namespace kb::custom::conv2d_tf32x3 {

using gemm128::kBK;

// ---- the gather: which x element feeds B(k, pixel) ----

// Per thread and tile: where its pixel's receptive field starts.
struct PixelOrigin {
  int64_t x_off;  // x index of (n, 0, ih0, iw0); only used when the tap is in range
  int ih0, iw0;   // top-left input row / column of the receptive field (may be < 0 with padding)
  bool ok;        // the pixel exists (pixel < Ho*Wo; flat tile: q < N*Ho*Wo; pooled: see there)
};
__host__ __device__ inline PixelOrigin pixel_origin(int64_t image_off, int pixel, int hw_out,
                                                    int wo, int w_in, int sh, int sw, int ph,
                                                    int pw) {
  const bool ok = pixel < hw_out;
  const int q = ok ? pixel : 0;
  const int oh = q / wo, ow = q - (q / wo) * wo;
  const int ih0 = oh * sh - ph, iw0 = ow * sw - pw;
  return {image_off + int64_t{ih0} * w_in + iw0, ih0, iw0, ok};
}
// Where the gather reads B(k, pixel): x index o.x_off + rel, inside x even when the copy reads
// nothing (a missing pixel uses pixel 0, k >= K table entry 0 = offset 0, a padded tap the
// image's first element), and whether it is real (`ok`; else the copy zero-fills).
// tap_off = ci*H*W + kh*dh*W + kw*dw, (tap_dh, tap_dw) = (kh*dh, kw*dw).
struct GatherSource {
  int rel;
  bool ok;
};
template <bool kPadded>
__host__ __device__ inline GatherSource gather_source(const PixelOrigin& o, int k, int k_total,
                                                      int tap_off, int tap_dh, int tap_dw, int h,
                                                      int w_in) {
  bool ok = o.ok && k < k_total;
  if constexpr (kPadded) {
    ok = ok && static_cast<unsigned>(o.ih0 + tap_dh) < static_cast<unsigned>(h) &&
         static_cast<unsigned>(o.iw0 + tap_dw) < static_cast<unsigned>(w_in);
    return {ok ? tap_off : -(o.ih0 * w_in + o.iw0), ok};
  }
  return {tap_off, ok};  // unpadded: every tap of pixel 0 .. Ho*Wo - 1 is inside x
}

// ---- kernel arguments ----

// Sizes validated to fit int by Conv2dTf32x3::setup(). Grid of the 3xTF32 tile: one CTA per (n,
// pixel tile, channel tile), blockIdx.x = (n * pix_tiles + pixel tile) * co_tiles + channel tile;
// of the flat tile (flat_fma.cuh): pix_tiles tiles over all n * Ho*Wo pixels, blockIdx.x = pixel
// tile * co_tiles + channel tile.
struct ConvArgs {
  const float* x;      // (N, C_in, H, W)
  const float* w;      // (C_out, K)
  const int* tap_off;  // (K_pad): ci*H*W + kh*dh*W + kw*dw, 0 past K; K_pad = ceil(K / kBK) * kBK
  const int2* tap_hw;  // (K_pad): (kh*dh, kw*dw); follows tap_off in one allocation
  int k_pad;
  int table_ints;      // ints of the table the gather reads (K_pad, or 3 K_pad with padding)
  bool table_in_smem;  // copy them to shared memory first (table_ints * 4 <= kMaxSmemTableBytes)
  float* y;            // (N, C_out, Ho*Wo)
  float2* stats;       // (N, C_out, StatsTiles::slots): tile (mean, M2); kStats only, not flat
  int64_t x_image;     // C_in*H*W
  int n, c_out, k, h, w_in, wo, hw_out;
  int sh, sw, ph, pw;
  int co_tiles, pix_tiles;
  bool vec_y;  // Ho*Wo % 4 == 0 and y 16-byte aligned: float4 stores
};

// The tap table a kernel's gather reads: copied by its kThreads threads to `behind` (shared memory
// past the kernel's stages) when p.table_in_smem (broadcast loads, no competition with the
// gathered x lines for L1; a barrier follows), else the global one.
template <int kThreads>
__device__ __forceinline__ const int* staged_tap_table(const ConvArgs& p, float* behind) {
  if (!p.table_in_smem) return p.tap_off;
  int* table = reinterpret_cast<int*>(behind);
  for (int i = threadIdx.x; i < p.table_ints; i += kThreads) table[i] = __ldg(p.tap_off + i);
  __syncthreads();
  return table;
}

}  // namespace kb::custom::conv2d_tf32x3
