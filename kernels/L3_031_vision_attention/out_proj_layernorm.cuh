// L3_031's epilogue: out_proj + bias + residual + two-pass LayerNorm over the embedding, written
// in the image layout. Two kernels of one contract (EpilogueArgs), picked by custom.cu:
//   out_proj_layernorm_kernel        32 tokens per CTA (lane = token), W read through L1: the
//                                    full preset's kernel (1024 CTAs, ~0.05 ms of 4.84 ms).
//   out_proj_layernorm_small_kernel  8 tokens per CTA, W staged in shared memory by cp.async:
//                                    for grids under one wave. At N 1, E 76, L 495 the 32-token
//                                    kernel ran 16 CTAs for 36.8 us (ncu), latency-bound on its
//                                    W loads inside the FMA loop; this one runs 62 CTAs whose
//                                    loads are all in flight at once before one wait.
// Both sum each output as bias + sum_e o[e] W[c, e] (e ascending) + x, then mean, then the
// centred sum of squares, 1 / sqrtf: the same values bit for bit.
//
// Thread safety: device code without state; the launches are custom.cu's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::L3_031 {

using ::kb::cores::warp_sum;

constexpr int kEpiWarps = 8, kEpiThreads = 32 * kEpiWarps;

struct EpilogueArgs {
  const float* o;      // (N, L, heads * hd_stride): head h's dims at h * hd_stride
  const float* x;      // (N, E, L): the residual
  const float* w;      // out_proj.weight (E, E)
  const float* bias;   // out_proj.bias (E)
  const float* gamma;  // norm.weight (E)
  const float* beta;   // norm.bias (E)
  float* out;          // (N, E, L)
  int len, embed;
  int head_dim, hd_stride;
  float eps;
};

// One warp's LayerNorm statistics of the token row y (E values): two passes (mean, then the
// centred sum of squares: a shift of x costs no digits), biased variance as LayerNorm, 1 / sqrtf.
__device__ __forceinline__ void row_stats(const float* y, int lane, const EpilogueArgs& a,
                                          float& mean, float& rstd) {
  float s = 0.f;
  for (int c = lane; c < a.embed; c += 32) s += y[c];
  const float mu = warp_sum(s) / a.embed;
  float s2 = 0.f;
  for (int c = lane; c < a.embed; c += 32) s2 = fmaf(y[c] - mu, y[c] - mu, s2);
  const float var = warp_sum(s2) / a.embed;
  if (lane == 0) mean = mu, rstd = 1.f / sqrtf(var + a.eps);
}

// ---- 32 tokens per CTA ----

constexpr int kEpiTok = 32;
static_assert(kEpiTok == 32, "lane = token");

// Dynamic smem: os[32][E + 1] (attention rows), ys[32][E + 1] (pre-norm values), stats[2][32].
__host__ __device__ constexpr int epilogue_smem_bytes(int embed) {
  return (2 * kEpiTok * (embed + 1) + 2 * kEpiTok) * 4;
}

// grid (ceil(L / 32), N).
__global__ void __launch_bounds__(kEpiThreads) out_proj_layernorm_kernel(const EpilogueArgs a) {
  extern __shared__ float sm[];
  const int stride = a.embed + 1, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* os = sm;
  float* ys = os + kEpiTok * stride;
  float* mean = ys + kEpiTok * stride;
  float* rstd = mean + kEpiTok;
  const int n = blockIdx.y, l0 = blockIdx.x * kEpiTok, l = l0 + lane;
  const int o_row = a.embed / a.head_dim * a.hd_stride;
  const float* o = a.o + (int64_t{n} * a.len + l0) * o_row;
  for (int i = threadIdx.x; i < kEpiTok * a.embed; i += kEpiThreads) {
    const int tok = i / a.embed, e = i - tok * a.embed;
    const int h = e / a.head_dim, col = h * a.hd_stride + (e - h * a.head_dim);
    os[tok * stride + e] = l0 + tok < a.len ? o[int64_t{tok} * o_row + col] : 0.f;
  }
  __syncthreads();
  const float* x = a.x + int64_t{n} * a.embed * a.len;
  for (int c0 = 4 * warp; c0 < a.embed; c0 += 4 * kEpiWarps) {  // 4 channels per step
    float acc[4];
    const int cn = min(4, a.embed - c0);  // 4 unless E % 4 != 0
#pragma unroll
    for (int u = 0; u < 4; ++u) acc[u] = u < cn ? a.bias[c0 + u] : 0.f;
    for (int e = 0; e < a.embed; ++e) {
      const float ov = os[lane * stride + e];
#pragma unroll
      for (int u = 0; u < 4; ++u)  // warp-uniform W loads (broadcast)
        if (u < cn) acc[u] = fmaf(ov, a.w[int64_t{c0 + u} * a.embed + e], acc[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (u < cn)
        ys[lane * stride + c0 + u] = acc[u] + (l < a.len ? x[int64_t{c0 + u} * a.len + l] : 0.f);
  }
  __syncthreads();
  for (int tok = warp; tok < kEpiTok; tok += kEpiWarps)
    row_stats(ys + tok * stride, lane, a, mean[tok], rstd[tok]);
  __syncthreads();
  if (l >= a.len) return;
  float* out = a.out + int64_t{n} * a.embed * a.len + l;
  for (int c = warp; c < a.embed; c += kEpiWarps)
    out[int64_t{c} * a.len] =
        (ys[lane * stride + c] - mean[lane]) * rstd[lane] * a.gamma[c] + a.beta[c];
}

// ---- 8 tokens per CTA, W in shared memory (grids under one wave; E % 4 == 0) ----

constexpr int kEpiSmallTok = 8;
constexpr int kEpiQuads = 32 / kEpiSmallTok;              // channel quads per warp
constexpr int kEpiSmallPass = kEpiWarps * kEpiQuads * 4;  // 128 channels per pass of the CTA
static_assert(kEpiSmallTok == kEpiWarps, "one warp per token for the statistics");

// Dynamic smem: ws[E][E + 1] (out_proj.weight, rows c), os[8][E + 1], ys[8][E + 1], stats[2][8].
// Odd row strides keep the GEMM loop's loads conflict-free: 8 token rows, 4 W rows of stride
// 4 (E + 1) per warp.
__host__ __device__ constexpr int epilogue_small_smem_bytes(int embed) {
  return ((embed + 2 * kEpiSmallTok) * (embed + 1) + 2 * kEpiSmallTok) * 4;
}

// Issues the copies of W (E, E) into ws and of the 8 tokens' attention rows into os (zeros past
// L); one commit group.
__device__ __forceinline__ void stage_epilogue_small(const EpilogueArgs& a, const float* o, int l0,
                                                     float* ws, float* os) {
  using ::kb::tf32x3::cp_async_4;
  const int stride = a.embed + 1, wn = a.embed * a.embed, on = kEpiSmallTok * a.embed;
  const uint32_t ws_saddr = static_cast<uint32_t>(__cvta_generic_to_shared(ws));
  const uint32_t os_saddr = static_cast<uint32_t>(__cvta_generic_to_shared(os));
  for (int i = threadIdx.x; i < wn; i += kEpiThreads) {  // coalesced along e
    const int c = i / a.embed;
    cp_async_4(ws_saddr + (i + c) * 4, a.w + i, true);  // ws[c * stride + e], e = i - c * E
  }
  const int o_row = a.embed / a.head_dim * a.hd_stride;
  for (int i = threadIdx.x; i < on; i += kEpiThreads) {
    const int tok = i / a.embed, e = i - tok * a.embed;
    const int h = e / a.head_dim, col = h * a.hd_stride + (e - h * a.head_dim);
    const bool ok = l0 + tok < a.len;
    cp_async_4(os_saddr + (tok * stride + e) * 4, ok ? o + int64_t{tok} * o_row + col : o, ok);
  }
  ::kb::tf32x3::cp_async_commit();
}

// grid (ceil(L / 8), N). Lane = (token lane % 8, channel quad lane / 8): warp w's pass p covers
// channels 128 p + 16 w + 4 quad + (0..3).
__global__ void __launch_bounds__(kEpiThreads)
    out_proj_layernorm_small_kernel(const EpilogueArgs a) {
  extern __shared__ float sm[];
  const int stride = a.embed + 1, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float* ws = sm;
  float* os = ws + a.embed * stride;
  float* ys = os + kEpiSmallTok * stride;
  float* mean = ys + kEpiSmallTok * stride;
  float* rstd = mean + kEpiSmallTok;
  const int n = blockIdx.y, l0 = blockIdx.x * kEpiSmallTok;
  const int tok = lane % kEpiSmallTok, l = l0 + tok;
  const int o_row = a.embed / a.head_dim * a.hd_stride;
  stage_epilogue_small(a, a.o + (int64_t{n} * a.len + l0) * o_row, l0, ws, os);

  const float* x = a.x + int64_t{n} * a.embed * a.len;
  // The first pass's bias and residual load while the copies fly.
  int c0 = 16 * warp + 4 * (lane / kEpiSmallTok);
  float acc[4], res[4];
  const auto load_pass = [&] {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const bool ok = c0 < a.embed;
      acc[u] = ok ? a.bias[c0 + u] : 0.f;
      res[u] = ok && l < a.len ? x[int64_t{c0 + u} * a.len + l] : 0.f;
    }
  };
  load_pass();
  ::kb::tf32x3::cp_async_wait<0>();
  __syncthreads();
  const float* orow = os + tok * stride;
  while (c0 < a.embed) {
    const float* wrow = ws + c0 * stride;
#pragma unroll 4
    for (int e = 0; e < a.embed; ++e) {
      const float ov = orow[e];
#pragma unroll
      for (int u = 0; u < 4; ++u) acc[u] = fmaf(ov, wrow[u * stride + e], acc[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) ys[tok * stride + c0 + u] = acc[u] + res[u];
    c0 += kEpiSmallPass;
    load_pass();
  }
  __syncthreads();
  row_stats(ys + warp * stride, lane, a, mean[warp], rstd[warp]);  // warp = token
  __syncthreads();
  float* out = a.out + int64_t{n} * a.embed * a.len + l0;
  for (int i = threadIdx.x; i < kEpiSmallTok * a.embed; i += kEpiThreads) {  // 32-byte runs of l
    const int t = i % kEpiSmallTok, c = i / kEpiSmallTok;
    if (l0 + t < a.len)
      out[int64_t{c} * a.len + t] =
          (ys[t * stride + c] - mean[t]) * rstd[t] * a.gamma[c] + a.beta[c];
  }
}

}  // namespace kb::custom::L3_031
