// L2_034's FMA kernel for narrow rows (W <= 16, so C_out = 2W <= 32), taken by custom.cu's FMA
// path in place of its CTA-per-row kernel (fma.cuh) at those widths.
//
// Why: fma's CTA per output row (n, od, oh) puts a channel on each of 32 lanes and 16 output
// columns on each thread; at C_out 6 (W 3) 6 of 32 lanes and 6 of 16 columns are real work
// (7%), and its 4,500 one-warp CTAs at N 25, C_in 25, 15 x 3 x 3 ran 0.59x the reference.
// Here a thread owns one whole output row (n, co, od, oh) of 2W values for kCo = 2 channels: lane
// = row, so a warp is 32 consecutive rows (all lanes busy whatever C_out is) and its stores cover
// one contiguous run per channel; warp = (32-row block, channel pair). Per (ci, sd, sh) the
// thread reads the W input columns of its x row (L1-cached loads; the lanes' rows share lines)
// and one float4 of 4 kw weights per channel straight from the (C_in, C_out, 4, 4, 4) weight
// (kd, kh fixed, kw contiguous: 16-byte aligned), then 2 (4W - 2) FMAs (the two taps at iw = -1
// and iw = W are zero and dropped at compile time: W is a template argument). No shared memory,
// no barrier: the LayerNorm is the thread's own 2W values.
//
// Numerics: the same sums in the same order as fma's kernel (ci, then (sd, sh), then the two kw
// taps s = 0, 1 per output; bias after; mean, then the centred sum of squares, over the row in
// w order; rsqrtf; gelu_erf_fast), so outputs match it bit for bit but for zero signs (fma adds
// the halo's +0 products).
//
// Thread safety: device code without state; launch() enqueues on the caller's stream.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <utility>

#include "common/cuda/cuda_check.h"
#include "common/status.h"
#include "kernels/cores/gelu.cuh"

namespace kb::custom::L2_034::narrow {

constexpr int kMaxW = 16;  // input columns the kernel takes: rows of up to 32 outputs
constexpr int kCo = 2;     // channels per thread: each x value feeds both
constexpr int kWarps = 4;  // per CTA: the 4 warps of a CTA share x rows through L1
constexpr int kThreads = 32 * kWarps;

struct Args {
  const float* x;      // (N, C_in, D, H, W)
  const float4* w4;    // (C_in, C_out, 4 kd, 4 kh) float4s of 4 kw: the weight, 16-byte aligned
  const float* bias;   // (C_out)
  const float* gamma;  // (2W)
  const float* beta;   // (2W)
  float* out;          // (N, C_out, 2D, 2H, 2W)
  int64_t rows;        // N 2D 2H output rows per channel
  int c_in, c_out, co_pairs, d, h;
  float eps, scale;
};

// Block kThreads; grid ceil(ceil(rows / 32) co_pairs / kWarps). Warp v: rows 32 (v / co_pairs)
// + lane, channels 2 (v % co_pairs) and the next (computed on a clamped channel and not stored
// when C_out is odd).
template <int W>
__global__ void __launch_bounds__(kThreads) convt_ln_gelu_kernel(const Args p) {
  constexpr int kOut = 2 * W;
  const int64_t warp = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  const int64_t row = warp / p.co_pairs * 32 + threadIdx.x % 32;
  if (row >= p.rows) return;
  const int co0 = kCo * static_cast<int>(warp % p.co_pairs);
  const int rows_per_n = 4 * p.d * p.h;
  const int n = static_cast<int>(row / rows_per_n), r = static_cast<int>(row % rows_per_n);
  const int od = r / (2 * p.h), oh = r % (2 * p.h);
  const int pd = od & 1, md = od >> 1, ph = oh & 1, mh = oh >> 1;

  // Tap (sd, sh) = sds: x row (id, ih) = (md + pd - sd, mh + ph - sh), zero outside x; weight
  // (kd, kh) = (2 sd + 1 - pd, 2 sh + 1 - ph) -> float4 co 16 + kd 4 + kh.
  const int64_t plane = int64_t{p.d} * p.h * W;  // x's channel stride
  const float* xr[4];
  bool inside[4];
#pragma unroll
  for (int sds = 0; sds < 4; ++sds) {
    const int id = md + pd - (sds >> 1), ih = mh + ph - (sds & 1);
    inside[sds] = id >= 0 && id < p.d && ih >= 0 && ih < p.h;
    xr[sds] = p.x + int64_t{n} * p.c_in * plane + (inside[sds] ? (int64_t{id} * p.h + ih) * W : 0);
  }
  const float4* wr[kCo];
#pragma unroll
  for (int k = 0; k < kCo; ++k)
    wr[k] = p.w4 + min(co0 + k, p.c_out - 1) * 16 + (1 - pd) * 4 + (1 - ph);
  const int64_t w_ci = int64_t{p.c_out} * 16;  // float4s per input channel

  float acc[kCo][kOut] = {};
  constexpr int kUnroll = W <= 8 ? 2 : 1;  // two channels' loads in flight where registers allow
#pragma unroll kUnroll
  for (int ci = 0; ci < p.c_in; ++ci) {
#pragma unroll
    for (int sds = 0; sds < 4; ++sds) {
      float xv[W];
#pragma unroll
      for (int c = 0; c < W; ++c) xv[c] = inside[sds] ? __ldg(xr[sds] + ci * plane + c) : 0.0f;
#pragma unroll
      for (int k = 0; k < kCo; ++k) {
        const float4 wv = __ldg(wr[k] + ci * w_ci + (sds >> 1) * 8 + (sds & 1) * 2);
        const float wk[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
        for (int j = 0; j < kOut; ++j)  // w = 2m + pw
#pragma unroll
          for (int s = 0; s < 2; ++s) {
            const int pw = j & 1, iw = j / 2 + pw - s;
            if (iw >= 0 && iw < W) acc[k][j] = fmaf(xv[iw], wk[2 * s + 1 - pw], acc[k][j]);
          }
      }
    }
  }

#pragma unroll
  for (int k = 0; k < kCo; ++k) {
    const int co = co0 + k;
    if (co >= p.c_out) break;
    const float b = __ldg(p.bias + co);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kOut; ++j) {
      acc[k][j] += b;
      s += acc[k][j];
    }
    const float mean = s / static_cast<float>(kOut);
    float q = 0.0f;
#pragma unroll
    for (int j = 0; j < kOut; ++j) q += (acc[k][j] - mean) * (acc[k][j] - mean);
    const float rstd = rsqrtf(q / static_cast<float>(kOut) + p.eps);
    float* out = p.out + ((int64_t{n} * p.c_out + co) * rows_per_n + r) * kOut;
#pragma unroll
    for (int j = 0; j < kOut; ++j) {
      const float z = (acc[k][j] - mean) * rstd * __ldg(p.gamma + j) + __ldg(p.beta + j);
      out[j] = gelu_erf_fast(z) * p.scale;
    }
  }
}

template <int... Ws>
constexpr auto kernels_for(std::integer_sequence<int, Ws...>) {
  return std::array<void (*)(Args), sizeof...(Ws)>{&convt_ln_gelu_kernel<Ws + 1>...};
}

// Enqueues the kernel for rows of 2w outputs (1 <= w <= kMaxW); a.w4 16-byte aligned.
inline Status launch(const Args& a, int w, cudaStream_t stream) {
  static constexpr auto kKernels = kernels_for(std::make_integer_sequence<int, kMaxW>{});
  const int64_t warps = (a.rows + 31) / 32 * a.co_pairs;
  const int64_t blocks = (warps + kWarps - 1) / kWarps;
  if (w < 1 || w > kMaxW || blocks > 0x7fffffff)
    return Status::failed_precondition("L2_034 narrow: W outside 1..16 or more than 2^31 CTAs");
  kKernels[w - 1]<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(a);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

}  // namespace kb::custom::L2_034::narrow
