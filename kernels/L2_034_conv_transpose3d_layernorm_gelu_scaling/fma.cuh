// L2_034's strict-fp32 kernel for small layers (fma): ConvTranspose3d(k 4, s 2, p 1) + bias +
// LayerNorm over the 2W output columns of each row + gelu_erf + scale, in plain fp32 FMA.
//   x: (N, C_in, D, H, W); weight: (C_in, C_out, 4, 4, 4), reordered per call into w_r
//   (reorder_weight_kernel); out: (N, C_out, 2D, 2H, 2W) fp32 NCDHW; W <= 64 (kMaxWGroups w
//   groups of 8 input columns), N <= 65535 (grid y), the x slab within shared memory.
// Taken (custom.cu's class): rows of W 17..64 in layers of at most kFmaMaxMacs multiply-adds
// (kFmaMaxMacs x kFmaWasteCap where row_ln.cuh's tile is mostly padding), and at any size where
// row_ln cannot address the layer; rows of W <= 16 run narrow.cuh's kernel instead.
//
// Design: a CTA per (n, od, oh, 64-channel block): the x slab x[n][:, 2 d taps, 2 h taps, :] in
// shared memory with a zero halo; thread (co, w group) computes 16 consecutive outputs of its
// channel's row (8 input columns x both W parities): per (ci, sd, sh) one float4 of weights (4 kw)
// and 4 broadcast float4 of x feed 32 FMAs; the row's LayerNorm (two-pass mean / variance over the
// w groups through shared memory), gamma/beta, gelu and scale in registers, one store. Short
// serial work per CTA: below kFmaMaxMacs it beats row_ln's 256 x 64 tiles (the measurements are
// at kFmaMaxMacs in custom.cu's class). Rows of W <= 16 run narrow.cuh's kernel instead (here 6
// of 32 lanes work at C_out 6).
//
// Thread safety: device code without state; the launches are custom.cu's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/gelu.cuh"

namespace kb::custom::L2_034::fma {

constexpr int kCoPerCta = 64;   // two warps' worth of channels per w group
constexpr int kMPerThread = 8;  // input columns per thread -> 16 outputs
constexpr int kHalo = 4;        // zero columns left of x in the slab (aligned float4 loads)
constexpr int kMaxWGroups = 8;  // 64 x 8 = 512 threads; W <= 64
static_assert(kCoPerCta == 64, "thread -> (lane, half, w group) mapping below");
static_assert(kHalo == 4 && kMPerThread == 8, "the four float4 x loads cover m-4 .. m+11");

struct Args {
  const float* x;      // (N, C_in, D, H, W)
  const float* w_r;    // (2 pd, 2 ph, C_in, 2 sd, 2 sh, co_pad, 4 kw): reordered weight
  const float* bias;   // (C_out)
  const float* gamma;  // (2W)
  const float* beta;   // (2W)
  float* out;          // (N, C_out, 2D, 2H, 2W)
  int c_in, c_out, co_pad, d, h, w, w_groups, w_pad;  // w_pad: slab row length
  float eps, scale;
};

// w_r[pd][ph][ci][sd][sh][co][kw] = weight[ci][co][2sd+1-pd][2sh+1-ph][kw], 0 for co >= C_out.
__global__ void reorder_weight_kernel(const float* __restrict__ weight, float* __restrict__ w_r,
                                      int c_in, int c_out, int co_pad) {
  const int total = 16 * c_in * co_pad * 4;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int kw = i % 4, co = i / 4 % co_pad, r = i / (4 * co_pad);
    const int sh = r % 2, sd = r / 2 % 2, ci = r / 4 % c_in, ph = r / (4 * c_in) % 2,
              pd = r / (8 * c_in);
    const int kd = 2 * sd + 1 - pd, kh = 2 * sh + 1 - ph;
    w_r[i] = co < c_out ? weight[((int64_t{ci} * c_out + co) * 4 + kd) * 16 + kh * 4 + kw] : 0.0f;
  }
}

// Fills slab[ci][sd][sh][w_pad] with x[n][ci][md+pd-sd][mh+ph-sh][col - kHalo], zero outside x.
__device__ __forceinline__ void load_slab(const Args& p, float* slab, int n, int md, int pd, int mh,
                                          int ph) {
  const int total = p.c_in * 4 * p.w_pad;
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    const int col = i % p.w_pad, r = i / p.w_pad;
    const int sh = r % 2, sd = r / 2 % 2, ci = r / 4;
    const int id = md + pd - sd, ih = mh + ph - sh, iw = col - kHalo;
    const bool ok = id >= 0 && id < p.d && ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
    slab[i] =
        ok ? __ldg(p.x + ((((int64_t{n} * p.c_in + ci) * p.d + id) * p.h + ih) * p.w + iw)) : 0.0f;
  }
}

// Block: 64 * w_groups threads (32 * w_groups when C_out <= 32: half 0 only); grid: (2H * 2D, N,
// co tiles). Thread (lane, half, w group g): channel co0 + 32 half + lane, outputs w = 16 g ..
// 16 g + 15 of row (n, co, od, oh).
__global__ void __launch_bounds__(kCoPerCta* kMaxWGroups) convt_ln_gelu_kernel(const Args p) {
  extern __shared__ __align__(16) float smem[];  // slab, then red (w_groups x 64)
  const int oh = blockIdx.x % (2 * p.h), od = blockIdx.x / (2 * p.h), n = blockIdx.y;
  const int pd = od & 1, md = od >> 1, ph = oh & 1, mh = oh >> 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = warp % p.w_groups, cl = (warp / p.w_groups) * 32 + lane;  // cl < 64
  const int co = blockIdx.z * kCoPerCta + cl, mb = g * kMPerThread;
  float* slab = smem;
  float* red = smem + p.c_in * 4 * p.w_pad;
  load_slab(p, slab, n, md, pd, mh, ph);
  __syncthreads();

  float acc[2 * kMPerThread] = {};
  const float4* wq =
      reinterpret_cast<const float4*>(p.w_r) + int64_t{(pd * 2 + ph) * p.c_in} * 4 * p.co_pad + co;
  for (int ci = 0; ci < p.c_in; ++ci)
#pragma unroll
    for (int sds = 0; sds < 4; ++sds) {  // (sd, sh)
      const float4 wv = __ldg(wq + (ci * 4 + sds) * p.co_pad);
      const float wk[4] = {wv.x, wv.y, wv.z, wv.w};
      // xv[c] = x at input column mb - 4 + c
      const float4* row = reinterpret_cast<const float4*>(slab + (ci * 4 + sds) * p.w_pad + mb);
      float xv[16];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 v = row[q];
        xv[4 * q] = v.x, xv[4 * q + 1] = v.y, xv[4 * q + 2] = v.z, xv[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < 2 * kMPerThread; ++j)  // w = 2 (mb + j/2) + pw
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const int pw = j & 1, iw = j / 2 + pw - s;  // input column - mb
          acc[j] = fmaf(xv[iw + kHalo], wk[2 * s + 1 - pw], acc[j]);
        }
    }

  // LayerNorm over the row's 2W outputs: the 16 of each of the w_groups threads of channel cl.
  const int w_out = 2 * p.w, w0 = 2 * mb;
  const float b = co < p.c_out ? __ldg(p.bias + co) : 0.0f;
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 2 * kMPerThread; ++j) {
    acc[j] += b;
    if (w0 + j < w_out) s += acc[j];
  }
  red[g * kCoPerCta + cl] = s;
  __syncthreads();
  float mean = 0.0f;
  for (int k = 0; k < p.w_groups; ++k) mean += red[k * kCoPerCta + cl];
  mean /= static_cast<float>(w_out);
  float q = 0.0f;
#pragma unroll
  for (int j = 0; j < 2 * kMPerThread; ++j)
    if (w0 + j < w_out) q += (acc[j] - mean) * (acc[j] - mean);
  __syncthreads();  // everyone has read the sums
  red[g * kCoPerCta + cl] = q;
  __syncthreads();
  float var = 0.0f;
  for (int k = 0; k < p.w_groups; ++k) var += red[k * kCoPerCta + cl];
  const float rstd = rsqrtf(var / static_cast<float>(w_out) + p.eps);
  if (co >= p.c_out) return;
  float* out = p.out + (((int64_t{n} * p.c_out + co) * 2 * p.d + od) * 2 * p.h + oh) * w_out;
#pragma unroll
  for (int j = 0; j < 2 * kMPerThread; ++j)
    if (w0 + j < w_out) {
      const float z = (acc[j] - mean) * rstd * __ldg(p.gamma + w0 + j) + __ldg(p.beta + w0 + j);
      out[w0 + j] = gelu_erf_fast(z) * p.scale;
    }
}

}  // namespace kb::custom::L2_034::fma
