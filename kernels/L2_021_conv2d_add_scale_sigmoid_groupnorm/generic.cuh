// L2_021's paths for any conv geometry (custom.cu's design, "Fallback"): one block per (sample,
// group) when the group fits in shared memory, else three simple kernels in place in `out`.
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/activation.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/geometry.cuh"
#include "kernels/cores/block_reduce.cuh"

namespace kb::custom::L2_021 {

// ---- Generic path (any conv geometry): three simple kernels, in place in `out` ----

struct ConvGeom {
  int64_t kh, kw, stride[2], pad[2], dil[2];
};

// The conv at output (i, j) of one sample and channel, any geometry: x_n is the sample's input
// (C_in, H, W), w_o the channel's weights (C_in, kH, kW), in global or shared memory.
__device__ float conv_at(const float* x_n, const float* w_o, const Geometry& g, const ConvGeom& cv,
                         int64_t i, int64_t j) {
  float acc = 0.0f;
  for (int64_t c = 0; c < g.c_in; ++c)
    for (int64_t kh = 0; kh < cv.kh; ++kh) {
      const int64_t ih = i * cv.stride[0] - cv.pad[0] + kh * cv.dil[0];
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t kw = 0; kw < cv.kw; ++kw) {
        const int64_t iw = j * cv.stride[1] - cv.pad[1] + kw * cv.dil[1];
        if (iw < 0 || iw >= g.w) continue;
        acc = fmaf(x_n[(c * g.h + ih) * g.w + iw], w_o[(c * cv.kh + kh) * cv.kw + kw], acc);
      }
    }
  return acc;
}

// g of channel o from its conv value, rounded as the reference: ((y + conv bias) + bias) * scale.
__device__ __forceinline__ float generic_sigmoid(const Buffers& b, int64_t o, float acc) {
  return activation(acc + b.b_conv[o], b.bias[o], b.scale[o]);
}

// One thread per output. For a 3x3 unit conv, narrow.cuh's kernel takes its place where its plan
// fits (custom.cu, setup_narrow).
__global__ void __launch_bounds__(kThreads)
    generic_activation_kernel(Buffers b, Geometry g, ConvGeom cv) {
  const int64_t total = g.batch * g.c_out * g.plane();
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    const int64_t j = e % g.wo, i = (e / g.wo) % g.ho, o = (e / g.plane()) % g.c_out;
    const int64_t n = e / (g.plane() * g.c_out);
    const float acc =
        conv_at(b.x + n * g.c_in * g.h * g.w, b.w + o * g.c_in * cv.kh * cv.kw, g, cv, i, j);
    b.out[e] = generic_sigmoid(b, o, acc);
  }
}

// ---- Small groups: one block per (n, group), one launch ----
//
// When the group's values, the sample's input and the group's weights fit in shared memory
// (group_smem_floats), one block per (n, group) stages the input and weights with parallel loads,
// computes the group's g into shared memory (conv_at; group_unit_values for a 3x3 unit conv), the
// mean, the centred sum of squares (two passes, no cancellation), and writes (g - mean) (rstd
// gamma) + beta. The generic path's four launches, each thread's conv a chain of dependent global
// loads, took 45 us at the sweep's N 99, C_in 3, C_out 8, 61 x 9 (the reference 37 us). H200,
// session 11 (`kb bench L2_021 --dims ...`, one call): there 30 against the generic path's 48 us; N
// 37, C_in 6, 5 x 5: 11 against 29; small / odd presets 16 / 10 against 24 / 24 us. Without the
// staging (global loads) it was 45.
constexpr int64_t kGroupMaxSmemFloats = 12 * 1024;  // 48 KB: no opt-in needed

__host__ __device__ inline int64_t group_smem_floats(const Geometry& g, const ConvGeom& cv) {
  return g.cpg * g.plane() + g.c_in * g.h * g.w + g.cpg * g.c_in * cv.kh * cv.kw;
}

// Copies len floats from global src to shared dst, kStageBatch loads in flight per thread.
__device__ __forceinline__ void stage_group_floats(const float* __restrict__ src, float* dst,
                                                   int len) {
  constexpr int kStageBatch = 4;
  for (int e0 = threadIdx.x; e0 < len; e0 += kStageBatch * kThreads) {
    float t[kStageBatch];
#pragma unroll
    for (int k = 0; k < kStageBatch; ++k) {
      const int e = e0 + k * kThreads;
      t[k] = e < len ? __ldg(src + e) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kStageBatch; ++k)
      if (e0 + k * kThreads < len) dst[e0 + k * kThreads] = t[k];
  }
}

// The group's g into v [channel][pixel] for a 3x3 unit conv: a thread per output pixel, a quad of
// channels at a time, so each staged input value is read once per quad and the weights are
// warp-wide broadcasts. The sums run in conv_at's order (c, kh, kw from 0): g is bit for bit the
// any-geometry loop's.
__device__ __forceinline__ void group_unit_values(const Buffers& b, const Geometry& g, int o0,
                                                  const float* xs, const float* ws, float* v) {
  const int plane = static_cast<int>(g.plane()), wo = static_cast<int>(g.wo);
  const int w = static_cast<int>(g.w), hw = static_cast<int>(g.h * g.w);
  const int cpg = static_cast<int>(g.cpg), c_in = static_cast<int>(g.c_in);
  for (int r = threadIdx.x; r < plane; r += kThreads) {
    const float* xp = xs + r / wo * w + r % wo;
    for (int q = 0; q < cpg; q += kQuad) {
      float acc[kQuad] = {};
      for (int c = 0; c < c_in; ++c) {
        const float* xc = xp + c * hw;
#pragma unroll
        for (int t = 0; t < 9; ++t) {
          const float xv = xc[t / 3 * w + t % 3];
#pragma unroll
          for (int k = 0; k < kQuad; ++k)
            if (q + k < cpg) acc[k] = fmaf(xv, ws[((q + k) * c_in + c) * 9 + t], acc[k]);
        }
      }
#pragma unroll
      for (int k = 0; k < kQuad; ++k)
        if (q + k < cpg) v[(q + k) * plane + r] = generic_sigmoid(b, o0 + q + k, acc[k]);
    }
  }
}

// kUnit: the conv is 3x3 with stride 1, no padding, no dilation (group_unit_values); else any
// geometry through conv_at.
template <bool kUnit>
__global__ void __launch_bounds__(kThreads) group_kernel(Buffers b, Geometry g, ConvGeom cv) {
  extern __shared__ float smem[];  // v (the group's g) | the sample's x | the group's weights
  __shared__ float warp_sums[2][kThreads / kWarp];
  __shared__ float stats[2];  // mean, rstd
  const int64_t n = blockIdx.x / g.groups, o0 = blockIdx.x % g.groups * g.cpg;
  const int len = static_cast<int>(g.cpg * g.plane()), plane = static_cast<int>(g.plane());
  const int x_len = static_cast<int>(g.c_in * g.h * g.w);
  const int w_per_o = static_cast<int>(g.c_in * cv.kh * cv.kw);
  float* v = smem;
  float* xs = v + len;
  float* ws = xs + x_len;
  stage_group_floats(b.x + n * x_len, xs, x_len);
  stage_group_floats(b.w + o0 * w_per_o, ws, static_cast<int>(g.cpg) * w_per_o);
  __syncthreads();
  if constexpr (kUnit) {
    group_unit_values(b, g, static_cast<int>(o0), xs, ws, v);
  } else {
    for (int e = threadIdx.x; e < len; e += kThreads) {
      const int o = e / plane, r = e % plane;
      v[e] = generic_sigmoid(b, o0 + o, conv_at(xs, ws + o * w_per_o, g, cv, r / g.wo, r % g.wo));
    }
  }
  __syncthreads();
  float sum = 0.0f;
  for (int e = threadIdx.x; e < len; e += kThreads) sum += v[e];
  sum = cores::block_sum<kThreads>(sum, warp_sums[0]);
  if (threadIdx.x == 0) stats[0] = sum / static_cast<float>(len);
  __syncthreads();
  const float mean = stats[0];
  float sq = 0.0f;
  for (int e = threadIdx.x; e < len; e += kThreads) sq = fmaf(v[e] - mean, v[e] - mean, sq);
  sq = cores::block_sum<kThreads>(sq, warp_sums[1]);
  if (threadIdx.x == 0)
    stats[1] = static_cast<float>(1.0 / sqrt(static_cast<double>(sq) / len + g.eps));
  __syncthreads();
  const float rstd = stats[1];
  float* out = b.out + (n * g.c_out + o0) * g.plane();
  for (int e = threadIdx.x; e < len; e += kThreads) {
    const int o = static_cast<int>(o0) + e / plane;
    out[e] = fmaf(v[e] - mean, rstd * __ldg(&b.gamma[o]), __ldg(&b.beta[o]));
  }
}

__global__ void __launch_bounds__(kThreads) generic_normalize_kernel(Buffers b, Geometry g) {
  const int64_t total = g.batch * g.c_out * g.plane();
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    const float2 cf = b.coef[e / g.plane()];
    b.out[e] = fmaf(b.out[e], cf.x, cf.y);
  }
}

}  // namespace kb::custom::L2_021
