// The conv2d core's narrow kernel: strict fp32 FMA for small layers, a thread or a warp per output
// pixel (conv2d_core.cuh's narrow_is_faster has the rule and its measurements), with the core's
// epilogues and the 3xTF32 tile's statistics layout (epilogue.cuh). store_tile_moments and the
// pixel window are shared with the few-channel kernel (few_channels.cuh).
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/conv2d_tf32x3/conv_args.cuh"
#include "kernels/cores/conv2d_tf32x3/epilogue.cuh"
#include "kernels/cores/tf32x3/gemm128.cuh"

namespace kb::custom::conv2d_tf32x3 {

using gemm128::kBN;

// ---- the narrow kernel (small layers) ----
//
// One block per (n, pixel tile of kBN pixels, co), strict fp32 FMA, then the epilogue and, with
// kStats, the tile's (mean, M2) in the layout the 3xTF32 kernel writes. kSplitK false (kBN
// threads): a thread per pixel sums all of K, the in-range taps clamped once per pixel; true
// (long K; kNarrowSplitThreads): a warp per pixel, lanes striding over k through the tap table
// (kNarrowChains taps in flight), a shuffle sum, each of the kNarrowSplitWarps warps taking
// every kNarrowSplitWarps-th pixel of the tile. For layers whose 128 x 128 tiles would be mostly
// padding, or whose work cannot fill the machine through the tile's K loop.
constexpr int kNarrowThreads = kBN;
constexpr int kNarrowWarps = kNarrowThreads / 32;
constexpr int kNarrowSplitWarps = 16;  // 8 pixels of the tile a warp
constexpr int kNarrowSplitThreads = 32 * kNarrowSplitWarps;
static_assert(kNarrowThreads % 32 == 0 && kNarrowThreads <= kNarrowSplitThreads, "whole warps");

// The window of output `pixel`: its top-left input (ih0, iw0), and the taps kh in [a_lo, a_hi) and
// kw in [b_lo, b_hi) that land inside x.
struct PixelWindow {
  int ih0, iw0, a_lo, a_hi, b_lo, b_hi;
  __device__ __forceinline__ bool full_3x3(int kh_n, int kw_n) const {
    return kh_n == 3 && kw_n == 3 && a_lo == 0 && a_hi == 3 && b_lo == 0 && b_hi == 3;
  }
};
__device__ __forceinline__ PixelWindow pixel_window(const ConvArgs& p, int pixel, int kh_n,
                                                    int kw_n, int dh, int dw) {
  const int oh = pixel / p.wo, ow = pixel % p.wo;
  PixelWindow r;
  r.ih0 = oh * p.sh - p.ph, r.iw0 = ow * p.sw - p.pw;
  r.a_lo = r.ih0 >= 0 ? 0 : (-r.ih0 + dh - 1) / dh;
  r.a_hi = min(kh_n, r.ih0 < p.h ? (p.h - r.ih0 + dh - 1) / dh : 0);
  r.b_lo = r.iw0 >= 0 ? 0 : (-r.iw0 + dw - 1) / dw;
  r.b_hi = min(kw_n, r.iw0 < p.w_in ? (p.w_in - r.iw0 + dw - 1) / dw : 0);
  return r;
}

// conv(x, w) at `pixel` of image n, channel co, by one thread.
__device__ __forceinline__ float narrow_pixel(const ConvArgs& p, int n, int co, int pixel, int kh_n,
                                              int kw_n, int dh, int dw) {
  const PixelWindow win = pixel_window(p, pixel, kh_n, kw_n, dh, dw);
  const int a_lo = win.a_lo, a_hi = win.a_hi, b_lo = win.b_lo, b_hi = win.b_hi;
  const int64_t hw_in = int64_t{p.h} * p.w_in;
  const float* xc = p.x + n * p.x_image + int64_t{win.ih0} * p.w_in + win.iw0;
  const float* wc = p.w + int64_t{co} * p.k;
  float acc = 0.0f;
  if (win.full_3x3(kh_n, kw_n)) {
    // A 3 x 3 window all inside: the same sums in the same order, unrolled, so that a channel's
    // nine loads are in flight at once (the loops below wait for each row's loads in turn).
    for (int ci = 0; ci < p.k / 9; ++ci, xc += hw_in, wc += 9) {
#pragma unroll
      for (int a = 0; a < 3; ++a) {
        const float* xr = xc + int64_t{a} * dh * p.w_in;
        float row = 0.0f;
#pragma unroll
        for (int b = 0; b < 3; ++b) row = fmaf(__ldg(wc + a * 3 + b), __ldg(xr + b * dw), row);
        acc += row;
      }
    }
    return acc;
  }
  for (int ci = 0; ci < p.k / (kh_n * kw_n); ++ci, xc += hw_in, wc += kh_n * kw_n) {
    for (int a = a_lo; a < a_hi; ++a) {
      const float* xr = xc + int64_t{a} * dh * p.w_in;
      float row = 0.0f;  // rows are independent chains
      for (int b = b_lo; b < b_hi; ++b)
        row = fmaf(__ldg(wc + a * kw_n + b), __ldg(xr + b * dw), row);
      acc += row;
    }
  }
  return acc;
}

// The split kernel's taps of one output channel: (kh dh, kw dw), the input offset and the weight
// of each k < K, read from the global tap table and weights, or from the block's copy in shared
// memory (the kernel's kTapsInSmem: hw, then off, then w; narrow_taps_bytes(K) <=
// kNarrowTapsMaxSmem), where a pixel's tap costs one global load (x) instead of three dependent
// ones.
struct NarrowTaps {
  const int2* hw;
  const int* off;
  const float* w;
};
// The copy's bound: the default 48 KB of a block (no opt-in) less a reserve for the kernel's
// static arrays (conv[], the statistics' warp sums): K <= 3,008. (A 48 KB bound let K 3,041-3,072
// ask for more than a block may have.)
constexpr int kNarrowStaticSmem = 1024;
static_assert(kNarrowThreads * sizeof(float) + kNarrowWarps * (sizeof(float2) + sizeof(float)) <=
                  kNarrowStaticSmem,
              "conv2d_narrow_kernel's static shared memory fits the reserve");
constexpr int kNarrowTapsMaxSmem = 48 * 1024 - kNarrowStaticSmem;
inline int narrow_taps_bytes(int k) {
  return k * static_cast<int>(sizeof(int2) + sizeof(int) + sizeof(float));
}

// conv(x, w) at `pixel` of image n by the calling warp (the sum in every lane), over `taps`.
// A lane sums its taps lane, lane + 32, ... into kNarrowChains chains (tap k into chain k / 32
// mod kNarrowChains, so their loads are in flight together), adds them in chain order, then the
// warp's shuffle sum.
constexpr int kNarrowChains = 4;
__device__ __forceinline__ float narrow_pixel_warp(const ConvArgs& p, const NarrowTaps& taps, int n,
                                                   int pixel, int lane) {
  const int oh = pixel / p.wo, ow = pixel % p.wo;
  const int ih0 = oh * p.sh - p.ph, iw0 = ow * p.sw - p.pw;
  const float* x0 = p.x + n * p.x_image + int64_t{ih0} * p.w_in + iw0;
  const auto tap = [&](int k, float& acc) {
    const int2 hw = taps.hw[k];
    if (static_cast<unsigned>(ih0 + hw.x) < static_cast<unsigned>(p.h) &&
        static_cast<unsigned>(iw0 + hw.y) < static_cast<unsigned>(p.w_in))
      acc = fmaf(taps.w[k], __ldg(x0 + taps.off[k]), acc);
  };
  float chain[kNarrowChains] = {};
  int k = lane;
  for (; k + 32 * (kNarrowChains - 1) < p.k; k += 32 * kNarrowChains) {
#pragma unroll
    for (int c = 0; c < kNarrowChains; ++c) tap(k + 32 * c, chain[c]);
  }
#pragma unroll
  for (int c = 0; c < kNarrowChains - 1; ++c)  // the last 1-3 taps of the lane
    if (k + 32 * c < p.k) tap(k + 32 * c, chain[c]);
  float acc = chain[0];
#pragma unroll
  for (int c = 1; c < kNarrowChains; ++c) acc += chain[c];
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  return acc;
}

// Channel co's taps for the split kernel: copied by the block into its dynamic shared memory
// (kInSmem; a barrier follows) or the global table and weights as they are.
template <bool kInSmem>
__device__ __forceinline__ NarrowTaps narrow_taps(const ConvArgs& p, int co) {
  const float* w = p.w + int64_t{co} * p.k;
  if constexpr (!kInSmem) {
    return {p.tap_hw, p.tap_off, w};
  } else {
    extern __shared__ __align__(16) int narrow_smem[];
    int2* hw = reinterpret_cast<int2*>(narrow_smem);
    int* off = narrow_smem + 2 * p.k;
    float* ws = reinterpret_cast<float*>(off + p.k);
    for (int k = static_cast<int>(threadIdx.x); k < p.k; k += static_cast<int>(blockDim.x)) {
      hw[k] = __ldg(p.tap_hw + k);
      off[k] = __ldg(p.tap_off + k);
      ws[k] = __ldg(w + k);
    }
    __syncthreads();
    return {hw, off, ws};
  }
}

// stats[n][co][pt] = (mean, M2) of the values v of a kBN-pixel tile, one a thread of the first
// kNarrowThreads (ok: the thread's pixel is in the plane): pilot-shifted per warp, Chan merges
// across warps. Every thread of the block calls it; it ends on a barrier, so that it may be called
// again (another channel) at once.
__device__ __forceinline__ void store_tile_moments(const ConvArgs& p, float v, bool ok, int n,
                                                   int co, int pt) {
  __shared__ float2 warp_m[kNarrowWarps];
  __shared__ float warp_n[kNarrowWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float pilot = __shfl_sync(0xffffffffu, v, 0);
  float cnt = ok ? 1.0f : 0.0f, s = ok ? v - pilot : 0.0f, q = s * s;
  for (int off = 16; off > 0; off /= 2) {
    cnt += __shfl_xor_sync(0xffffffffu, cnt, off);
    s += __shfl_xor_sync(0xffffffffu, s, off);
    q += __shfl_xor_sync(0xffffffffu, q, off);
  }
  if (lane == 0 && warp < kNarrowWarps) {  // the warps of the tile's pixels
    const float mean_d = cnt > 0.0f ? s / cnt : 0.0f;
    warp_m[warp] = make_float2(pilot + mean_d, fmaxf(fmaf(-s, mean_d, q), 0.0f));
    warp_n[warp] = cnt;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float nt = 0.0f;
    float2 m = make_float2(0.0f, 0.0f);
    for (int w = 0; w < kNarrowWarps; ++w) {
      m = merge_moments(nt, m, warp_n[w], warp_m[w]);
      nt += warp_n[w];
    }
    p.stats[(int64_t{n} * p.c_out + co) * p.pix_tiles + pt] = m;
  }
  __syncthreads();
}

// kTapsInSmem (kSplitK only): the channel's taps copied to shared memory first (narrow_taps).
template <bool kSplitK, bool kTapsInSmem, class Epi>
__global__ void __launch_bounds__(kSplitK ? kNarrowSplitThreads : kNarrowThreads, kSplitK ? 2 : 8)
    conv2d_narrow_kernel(const ConvArgs p, const int kh_n, const int kw_n, const int dh,
                         const int dw, const Epi epi) {
  static_assert(kSplitK || !kTapsInSmem, "only the split kernel reads a tap table");
  __shared__ float conv[kNarrowThreads];
  const int co = static_cast<int>(blockIdx.x % p.c_out);
  const int r = static_cast<int>(blockIdx.x / p.c_out);
  const int pt = r % p.pix_tiles, n = r / p.pix_tiles;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int p0 = pt * kBN, pixels = min(kBN, p.hw_out - p0);
  if constexpr (kSplitK) {
    const NarrowTaps taps = narrow_taps<kTapsInSmem>(p, co);
    for (int i = warp; i < pixels; i += kNarrowSplitWarps) {
      const float acc = narrow_pixel_warp(p, taps, n, p0 + i, lane);
      if (lane == 0) conv[i] = acc;
    }
    __syncthreads();
  }
  const int i = static_cast<int>(threadIdx.x);
  const bool ok = i < pixels;
  float v = 0.0f;
  if (ok) {
    const float acc = kSplitK ? conv[i] : narrow_pixel(p, n, co, p0 + i, kh_n, kw_n, dh, dw);
    v = epi(epi.row(co), acc);
    p.y[(int64_t{n} * p.c_out + co) * p.hw_out + p0 + i] = v;
  }
  if constexpr (Epi::kStats) store_tile_moments(p, v, ok, n, co, pt);
}

}  // namespace kb::custom::conv2d_tf32x3
