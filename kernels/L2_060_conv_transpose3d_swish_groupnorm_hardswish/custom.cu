// L2_060 custom: hardswish(GroupNorm(swish(ConvTranspose3d(x)))), conv k3 s2 p1 (groups 1).
//   x: (N, C_in, D, H, W), w: (C_in, C_out, 3, 3, 3), bias, gamma, beta: (C_out); out: (N, C_out,
//   2D-1, 2H-1, 2W-1), fp32 NCDHW (full preset: x (128, 3, 16, 32, 32) -> out (128, 16, 31, 63,
//   63), GroupNorm(4, 16), eps 1e-5). s = swish(y + bias) = (y + bias) sigmoid(y + bias); per
//   (n, group of 4 channels, 492,156 values): out = hardswish((s - mean) / sqrt(var + eps)
//   gamma[c] + beta[c]), biased var.
//
// Cost (full preset 128 x 3 x 16 x 32 x 32 -> 128 x 16 x 31 x 63 x 63,
// docs/problems.md#l2_060): 2.5 G MAC, ~4.5 G elementwise FLOP; 1.03 GB (the 1.0 GB output) ->
// floor 0.24 ms (memory). Reference 13.9-14.2 ms, best strict-fp32 peer 8.94 ms (autotuned
// cuDNN, docs/baselines.md), goal <= 0.38 ms (1.6 x the floor).
//
// Math: per axis, output o = 2i - 1 + k. Even o = 2m takes one tap (i = m, k = 1); odd o = 2m + 1
// takes two (i = m, k = 2 and i = m + 1, k = 0), all inside the input: no bounds tests. So a row
// pair (ow = 2q, 2q + 1) of one (od, oh) needs x[.., q] and x[.., q + 1] and 3 FMA per
// (c, kd, kh) tap, whose 3 kw weights come in one float4.
//
// Design: recompute, never materialize y. Three launches (kernels/cores/group_norm_pipeline/
// pipeline.cuh):
//   stats_kernel:     conv + bias + swish, each warp item's per-(n, group) sums of s and s^2 to
//                     its own partials slot (fp32 sums of s - pilot and (s - pilot)^2 per thread
//                     and warp, pilot = a warp-uniform value of the group; raw sums rebuilt in
//                     double per warp item); nothing else written;
//   coefficients:     a block per (n, group) folds the items' partials -> coef[n][o];
//   normalize_kernel: the same conv + swish, then s * scale + shift, hardswish, stores.
// Both big launches are persistent grids of independent warps (weights staged once per block,
// then no block barrier): warp w runs the flattened (n, item) = w, w + warps, ...
// A warp item is (n, od parity, 4 rows od of that parity, oh, 32 columns q): each lane keeps the
// (4 + 1) x 2 x C_in x 2 inputs it needs in registers and loops over all channels with the
// weights broadcast from shared memory (one LDS.128 per 12 FMA).
// Stores are 8-byte pairs of a row's columns (PairStores), shifted by a lane on odd rows.
// Materialized paths: C_in != 3 (or a C_out too large for the fast path's shared memory) runs
// unit_swish_kernel, s = swish(y) materialized with the same parity taps; any other geometry
// (not reachable from the spec, whose graph fixes k 3, s 2, p 1) runs a one-thread-per-output
// gather (kernels/cores/conv_transpose_gather/generic.cuh) instead. Both are followed by parallel
// statistics and an elementwise normalize (see "Materialized paths" below).
//
// Predicted / measured (H200, full preset): see the ladder; v2 (this code) predicted 0.43-0.48
// ms, measured 0.824 ms (docs/kernels.md) and 0.837 ms in docs/bench-h200-2026-12-02b.json (3.5x
// the floor, 2.2x the goal). ncu of v2 (docs/profiles/ncu-h200-2026-11-30-L2_060.txt): stats
// 331 us (issue 62% busy, DRAM 2%) + normalize 486 us (2.15 TB/s, DRAM 45%), both at 25%
// occupancy (128 registers): the normalize pass is latency-bound.
//
// Accuracy. Error sources: the conv in strict fp32 FMA (at most 8 taps x C_in = 24 products per
// output); swish by fast intrinsics (ex2.approx and rcp.approx with -log2(e) folded in: relative
// error ~2^-22 each, |s| ~ |y|); the group statistics (below); the coefficients in double (IEEE
// sqrt), rounded to fp32 once; s * scale + shift and hardswish in fp32. GroupNorm divides the
// upstream error by the group std (TF32 would fail 6.5x, docs/problems.md#l2_060). The generic
// path's swish is the same.
// Accuracy of the statistics: raw fp32 sums of s and s^2 (before) lose 2 log10(mean/std) digits
// of the group variance, which matters once the inputs move (x in [100, 101): conv outputs of
// ~100 sum|w| with a spread of ~1). About a pilot near the data the fp32 sums keep fp32's
// relative accuracy on n std^2, and the mean^2 cancellation happens in double (16 digits).
// Measured max |err| 4.1e-6 (2026-11-30) and 4.3e-6 (bench 2026-12-02b) vs 1e-4 + 1e-4 |r|
// allowed. Robustness trials (small preset, seed 7, vs the golden model; C_in 3: the fast path):
// shift (x + 100) 0.0035x the tolerance (reference 0.0042x), scale (x 1000) 0.0033x (0.0038x),
// centered 0.0041x (0.0034x), random_affine (gamma, beta) 0.0042x (0.0033x).
//
// Ladder (H200, full preset; floor 0.240 ms):
//   v1 one-launch ticket pipeline, S and N tasks interleaved, lag 5 phases
//      predicted 0.31-0.33 ms (~19 + ~17 issued instr/output, stores overlapped) -> measured 0.702
//      (why, from the code: each 8-warp task pays a ticket atomic, an acquire spin, double-math
//      coefficients, double atomics + two __threadfence, and a cold x load, all serial per block,
//      with only 2 blocks/SM (128 regs) to hide them; warps of one task differ 2x in taps and wait
//      for the slowest at the next barrier)
//   v2 two launches (stats, normalize) + a 512-warp coefficient fold: no tickets, spins, fences or
//      global atomics; stats 0.128 ms of issue -> ~0.16, normalize max(0.16 issue -> ~0.2,
//      1.0 GB of stores ~0.26) -> ~0.28; predicted 0.43-0.48 ms -> measured 0.824 ms
//      (docs/kernels.md): slower than v1, the two passes no longer overlap; kept because L2_021
//      shares the pipeline header and v2 fixed L2_021.
//   v3, v4 (session 2, docs/kernels.md): a persistent warp-ticket pipeline (4.38 ms: N warps
//      spun on S stragglers) and two plain launches with 8-byte stores (1.30 ms): rejected;
//      __launch_bounds__(256, 3 / 4) spilled (0.99 / 1.15 ms): reverted.
//   session 11: kRows 2 at __launch_bounds__(256, 3) (80 registers, 20 / 44 bytes spilled):
//      0.895 against 0.835 ms in one call. Rejected (the registers are the weight prefetch).
//   v5 (session 17) 8-byte stores (store_row_pair: a lane's column pair, shifted by one lane on
//      rows that start odd; ncu of v2 this session: 14.6 of 32 bytes per store sector, L2 63%
//      busy against DRAM 44%, normalize 488 us, stats 343 us, both at 25% occupancy) -> predicted
//      a few % -> measured 0.835 / 0.835 -> **0.807 / 0.808 ms** (kb bench L2_060 --time-cap 2
//      --seed 7, alternating with the previous pack in one call); the 8 bytes of spill are gone.
//   v6 (session 18) independent warps: a block task of 8 consecutive items (even and odd oh,
//      kTh 1 and 2) waited at two barriers per task for its slowest warps; each item now writes
//      its own partials slot (the fold's 504 entries per (n, group) by a block: 14.1 -> 5.3 us)
//      -> measured 0.806 / 0.807 -> **0.762 / 0.762 ms** (same call, HEAD's pack alternating;
//      ncu: stats 340 -> 312 us, normalize 463 -> 444 us; C_out 12 sweep shapes 3-7% faster).
//      Rejected in session 18 (docs/kernels.md): one fused launch, a cluster per (n, group),
//      s kept in L2 (1.06 ms) or in the cluster's shared memory (1.09 ms).
//   v7 (session 21) the normalize pass's stores as predicated instructions (PairStores, formed
//      once per item; the alignment test once per channel): the per-row tests and branches were
//      ~100 of the ~300 PTX instructions per channel of a warp item. ncu: normalize 288 M -> 247 M
//      warp instructions, 443 -> 429 us (issue 0.65 -> 0.60 per scheduler: now waiting on fixed-
//      latency dependencies, 31%); `kb bench L2_060 --time-cap 2 --seed 7` alternating with the v6
//      pack in one call: 0.760 / 0.756 against 0.762 / 0.761 ms. Rejected in session 21
//      (docs/kernels.md): -log2(e) folded into the staged weights (0.762 against 0.759 ms) and
//      the channel loop unrolled by 2 (0.94 ms).
//   next: fewer live values per thread for occupancy (both passes hold 110-128 registers: 2
//      blocks per SM, 5-6 cycles per issued instruction).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/group_norm_pipeline/pipeline.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_060 {

namespace sp = kb::gn_pipeline;
using sp::ex2_approx;
using sp::kNegLog2e;
using sp::rcp_approx;

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kWarps = kThreads / kWarp;
constexpr int kCin = 3;   // input channels of the fast path (the spec's value)
constexpr int kRows = 4;  // output rows od (of one parity) per warp item
static_assert(kThreads % kWarp == 0, "whole warps");

struct Geometry {
  int64_t batch, c_in, c_out, in_d, in_h, in_w, out_d, out_h, out_w;
  int64_t groups, cpg;                // GroupNorm groups, channels per group
  int64_t m_chunks, q_chunks, items;  // fast path: warp items per sample
  float eps;
  __host__ __device__ int64_t plane() const { return out_d * out_h * out_w; }
};

struct Buffers {
  const float* x;      // (N, C_in, D, H, W)
  const float* w;      // (C_in, C_out, 3, 3, 3)
  const float* bias;   // (C_out)
  const float* gamma;  // (C_out)
  const float* beta;   // (C_out)
  float* out;          // (N, C_out, 2D-1, 2H-1, 2W-1)
  float* s;            // generic path: swish(y), (N, C_out, Do, Ho, Wo)
  double2* partials;   // [N][items or parts][groups] (sum s, sum s^2) of each warp item or part
  float2* coef;        // [N][C_out] (scale, shift)
};

// ---- Elementwise pieces ----

// y * sigmoid(y); -> -0 for y -> -inf (exp overflows to inf, the reciprocal to 0).
__device__ __forceinline__ float swish(float y) {
  return y * rcp_approx(1.0f + ex2_approx(kNegLog2e * y));
}

// t * clamp(t + 3, 0, 6) / 6 as t * saturate(t / 6 + 1 / 2).
__device__ __forceinline__ float hardswish(float t) {
  return t * __saturatef(fmaf(t, 1.0f / 6.0f, 0.5f));
}

// ---- Fast path: one warp item ----

struct SmemLayout {  // dynamic shared memory of both fast kernels, in this order
  float4* w;         // [C_out][C_in][kd][kh] = (w[.., kw = 0], kw = 1, kw = 2, 0)
  float* bias;       // [C_out]
};

__host__ __device__ inline size_t smem_bytes(const Geometry& g) {
  return sizeof(float4) * g.c_out * kCin * 9 + sizeof(float) * g.c_out;
}

__device__ SmemLayout carve(unsigned char* base, const Geometry& g) {
  SmemLayout s;
  s.w = reinterpret_cast<float4*>(base);
  s.bias = reinterpret_cast<float*>(s.w + g.c_out * kCin * 9);
  return s;
}

struct Item {
  int64_t m0, oh, q0;
  int pd;  // parity of the rows od = 2 (m0 + k) + pd
};

__device__ Item decode_item(const Geometry& g, int64_t item) {
  Item it;
  it.q0 = (item % g.q_chunks) * kWarp;
  item /= g.q_chunks;
  it.oh = item % g.out_h;
  item /= g.out_h;
  it.m0 = (item % g.m_chunks) * kRows;
  it.pd = static_cast<int>(item / g.m_chunks);
  return it;
}

// How a lane stores its column pair (2 q, 2 q + 1) of a row; fixed for a warp item (ok0: column
// 2 q exists, ok1: 2 q + 1 does; ok1 of a lane equals ok0 of the next), so every value is stored
// once as 8-byte stores. Why 8 bytes: scalar stores of the even, then the odd columns half-filled
// every sector twice (ncu, session 17: 14.6 of 32 bytes per sector, L2 63% busy against DRAM 44%).
// Where column 2 q is 8-byte aligned (the parity is the warp's: 2 q is even, and the same for all
// rows of a channel: rows are an even number of floats apart) a lane stores (h0, h1), or h0
// alone at the row's end; else pairs (2 q - 1, 2 q) take the left lane's h1 by shuffle, lane 0
// stores its h0 alone and lane 31 its h1. The predicates are formed once per item so that a
// row's stores are predicated instructions, not branches (session 21: the per-row tests were a
// third of the normalize pass's instructions).
struct PairStores {
  bool aligned_pair, aligned_single;  // aligned rows: (h0, h1) at p; h0 alone at p
  bool shifted_pair, shifted_first;   // other rows: (left h1, h0) at p - 1; h0 alone at p
  bool shifted_last;                  // other rows: h1 alone at p + 1

  __device__ PairStores(int lane, bool ok0, bool ok1)
      : aligned_pair(ok1),
        aligned_single(ok0 && !ok1),
        shifted_pair(ok0 && lane > 0),
        shifted_first(ok0 && lane == 0),
        shifted_last(ok1 && lane == kWarp - 1) {}
};

// Tap t of an axis with kTaps taps (1: even outputs, 2: odd): kernel index and input offset.
template <int kTaps>
__device__ constexpr int tap_k(int t) {
  return kTaps == 1 ? 1 : (t == 0 ? 2 : 0);
}

// Computes warp item `item` (decoded: it) of sample n for all channels. kNormalize: normalize
// with coef[n][*], hardswish and store; otherwise write the item's per-group sums to
// partials[n][item][*].
template <int kTd, int kTh, bool kNormalize>
__device__ void run_item(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                         int64_t item, const Item& it) {
  constexpr int kPlanes = kRows + kTd - 1;
  const int lane = threadIdx.x % kWarp;
  const int64_t q = it.q0 + lane, p = it.oh / 2;
  // x[n, c, m0 + a, p + t, q + e] = xb[c * vol + (a * H + t) * W + e]; all offsets fit an int
  const float* xb = b.x + ((n * kCin * g.in_d + it.m0) * g.in_h + p) * g.in_w + q;
  const int vol = static_cast<int>(g.in_d * g.in_h * g.in_w), in_w = static_cast<int>(g.in_w);
  const int in_hw = static_cast<int>(g.in_h * g.in_w);
  const int planes_ok = static_cast<int>(g.in_d - it.m0);
  float xin[kPlanes][kTh][kCin][2];
#pragma unroll
  for (int a = 0; a < kPlanes; ++a)
#pragma unroll
    for (int t = 0; t < kTh; ++t)
#pragma unroll
      for (int c = 0; c < kCin; ++c)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const bool ok = a < planes_ok && q + e < g.in_w;  // ih = p + t < H always
          xin[a][t][c][e] = ok ? __ldg(xb + c * vol + a * in_hw + t * in_w + e) : 0.0f;
        }
  // rows k < rows_ok exist: od = 2 (m0 + k) + pd < out_d
  const int64_t rows_left = (g.out_d - it.pd + 1) / 2 - it.m0;
  const int rows_ok = rows_left < kRows ? static_cast<int>(rows_left) : kRows;
  const bool even_ok = q < g.in_w, odd_ok = q + 1 < g.in_w;
  const int64_t row0 = ((2 * it.m0 + it.pd) * g.out_h + it.oh) * g.out_w + 2 * q;
  const int row_step = static_cast<int>(2 * g.out_h * g.out_w);

  const PairStores stores(lane, even_ok, odd_ok);
  const int cpg = static_cast<int>(g.cpg);
  float* dst = b.out + n * g.c_out * g.plane() + row0;  // channel o's rows: dst + o * plane
#pragma unroll 1
  for (int grp = 0; grp < static_cast<int>(g.groups); ++grp) {
    float s1 = 0.0f, s2 = 0.0f, pilot = 0.0f;  // sums of s - pilot, (s - pilot)^2
#pragma unroll 1
    for (int o = grp * cpg; o < (grp + 1) * cpg; ++o, dst += g.plane()) {
      float acc[kRows][2];
      const float bias = s.bias[o];
#pragma unroll
      for (int k = 0; k < kRows; ++k) acc[k][0] = acc[k][1] = bias;
#pragma unroll
      for (int c = 0; c < kCin; ++c)
#pragma unroll
        for (int td = 0; td < kTd; ++td)
#pragma unroll
          for (int th = 0; th < kTh; ++th) {
            const float4 wv = s.w[((o * kCin + c) * 3 + tap_k<kTd>(td)) * 3 + tap_k<kTh>(th)];
#pragma unroll
            for (int k = 0; k < kRows; ++k) {
              const float v0 = xin[k + td][th][c][0], v1 = xin[k + td][th][c][1];
              acc[k][0] = fmaf(v0, wv.y, acc[k][0]);
              acc[k][1] = fmaf(v1, wv.x, fmaf(v0, wv.z, acc[k][1]));
            }
          }
      if constexpr (kNormalize) {
        const float2 cf = __ldg(&b.coef[n * g.c_out + o]);
        float h[kRows][2];
#pragma unroll
        for (int k = 0; k < kRows; ++k) {
          h[k][0] = hardswish(fmaf(swish(acc[k][0]), cf.x, cf.y));
          h[k][1] = hardswish(fmaf(swish(acc[k][1]), cf.x, cf.y));
        }
        if ((reinterpret_cast<uintptr_t>(dst) & 7) == 0) {  // warp-uniform
#pragma unroll
          for (int k = 0; k < kRows; ++k) {
            if (k >= rows_ok) break;  // warp-uniform
            float* p = dst + k * row_step;
            if (stores.aligned_pair)
              __stcs(reinterpret_cast<float2*>(p), make_float2(h[k][0], h[k][1]));
            if (stores.aligned_single) __stcs(p, h[k][0]);
          }
        } else {
#pragma unroll
          for (int k = 0; k < kRows; ++k) {
            if (k >= rows_ok) break;
            float* p = dst + k * row_step;
            const float left = __shfl_up_sync(0xffffffffu, h[k][1], 1);
            if (stores.shifted_pair)
              __stcs(reinterpret_cast<float2*>(p - 1), make_float2(left, h[k][0]));
            if (stores.shifted_first) __stcs(p, h[k][0]);
            if (stores.shifted_last) __stcs(p + 1, h[k][1]);
          }
        }
      } else {
        // Lane 0's first value of the group's first channel (row 0 and column 2 q0 exist).
        if (o == grp * cpg) pilot = __shfl_sync(0xffffffffu, swish(acc[0][0]), 0);
#pragma unroll
        for (int k = 0; k < kRows; ++k) {
          const float v0 = k < rows_ok && even_ok ? swish(acc[k][0]) - pilot : 0.0f;
          const float v1 = k < rows_ok && odd_ok ? swish(acc[k][1]) - pilot : 0.0f;
          s1 += v0 + v1;
          s2 = fmaf(v0, v0, fmaf(v1, v1, s2));
        }
      }
    }
    if constexpr (!kNormalize) {  // the warp's sums of this group: raw sums in double
      const float values =
          static_cast<float>(cpg * rows_ok * ((even_ok ? 1 : 0) + (odd_ok ? 1 : 0)));
      const float3 t = cores::warp_sum(make_float3(s1, s2, values));  // (s1, s2, count) of the warp
      const double p = pilot, d1 = t.x;
      if (lane == 0)
        b.partials[(n * g.items + item) * g.groups + grp] = make_double2(
            fma(t.z, p, d1), fma(t.z * p, p, fma(2.0 * p, d1, static_cast<double>(t.y))));
    }
  }
}

// Runs warp item `item` of sample n; false (nothing done) when it is past the end or holds no
// row (the last odd-parity chunk when D - 1 is a multiple of kRows).
template <bool kNormalize>
__device__ bool dispatch_item(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                              int64_t item) {
  if (item >= g.items) return false;
  const Item it = decode_item(g, item);
  if (2 * it.m0 + it.pd >= g.out_d) return false;
  const bool odd_h = it.oh % 2 == 1;
  if (it.pd == 0) {
    odd_h ? run_item<1, 2, kNormalize>(b, g, s, n, item, it)
          : run_item<1, 1, kNormalize>(b, g, s, n, item, it);
  } else {
    odd_h ? run_item<2, 2, kNormalize>(b, g, s, n, item, it)
          : run_item<2, 1, kNormalize>(b, g, s, n, item, it);
  }
  return true;
}

// ---- Fast path: the two kernels ----
//
// Both are persistent grids of independent warps: warp w of the grid runs the warp items
// (n, item) = w, w + warps, ... of the flattened batch x items, with no block barrier once the
// weights are staged. (Before session 18 a block ran a task of 8 consecutive items between two
// barriers: items alternate even and odd oh, whose kTh is 1 and 2, so half the warps of a task
// waited for the other half at every barrier.)

__device__ void stage_parameters(const Buffers& b, const Geometry& g, const SmemLayout& s) {
  for (int64_t e = threadIdx.x; e < g.c_out * kCin * 9; e += kThreads) {
    const int64_t kh = e % 3, kd = (e / 3) % 3, c = (e / 9) % kCin, o = e / (9 * kCin);
    const float* src = b.w + (((c * g.c_out + o) * 3 + kd) * 3 + kh) * 3;
    s.w[e] = make_float4(src[0], src[1], src[2], 0.0f);
  }
  for (int64_t o = threadIdx.x; o < g.c_out; o += kThreads) s.bias[o] = b.bias[o];
}

// Writes every item's per-group sums to b.partials[n][item][*] (zeros for an empty item).
__global__ void __launch_bounds__(kThreads, 2) stats_kernel(Buffers b, Geometry g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const SmemLayout s = carve(smem_raw, g);
  stage_parameters(b, g, s);
  __syncthreads();
  const int64_t warps = int64_t{gridDim.x} * kWarps;
  for (int64_t f = int64_t{blockIdx.x} * kWarps + threadIdx.x / kWarp; f < g.batch * g.items;
       f += warps) {
    const int64_t n = f / g.items, item = f % g.items;
    if (!dispatch_item<false>(b, g, s, n, item)) {
      for (int64_t k = threadIdx.x % kWarp; k < g.groups; k += kWarp)
        b.partials[f * g.groups + k] = make_double2(0.0, 0.0);
    }
  }
}

// Normalizes every item with b.coef[n][*].
__global__ void __launch_bounds__(kThreads, 2) normalize_kernel(Buffers b, Geometry g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const SmemLayout s = carve(smem_raw, g);
  stage_parameters(b, g, s);
  __syncthreads();
  const int64_t warps = int64_t{gridDim.x} * kWarps;
  for (int64_t f = int64_t{blockIdx.x} * kWarps + threadIdx.x / kWarp; f < g.batch * g.items;
       f += warps)
    dispatch_item<true>(b, g, s, f / g.items, f % g.items);
}

// ---- Materialized paths (C_in != 3, or any other geometry) ----
//
// Three passes over a materialized s = swish(y), all of them fully parallel (the first generic
// path recomputed the convolution inside one block per (n, group) and took 3.0 ms where the
// reference takes 0.14 ms at odd channel counts):
//   unit_swish_kernel (k 3, stride 2, padding 1: the spec's geometry, any C_in) or
//   generic_swish_kernel (any other geometry): bias, swish -> s;
//   sp::launch_group_partials: `parts` blocks per (n, group), each summing a contiguous chunk
//                             of the group's s and s^2 in double -> partials (two-launch form);
//   coefficients + generic_normalize_kernel: hardswish(s * scale + shift), float4 when aligned.
// No library call: the work is this pack's own.

// The unit geometry's swish pass. A warp item is (n, od, oh parity ph, 32 consecutive (row r,
// column q) pairs with oh = 2 r + ph); a block is 8 warp items of one block of kUnitCo output
// channels (blockIdx.y), whose weights it stages as float4 (kw 0, 1, 2, 0) per (c, kd, kh, co):
// one broadcast LDS.128 per 3 FMA. Each lane sums the column pair ow = 2q, 2q + 1 of kUnitCo
// channels over every input channel and the 1 or 2 taps of d and h (warp-uniform: od and ph are),
// from 2 loads of x (q, q + 1) per (c, tap). The gather it replaces evaluated all 27 taps per
// output with lanes of alternating column parity diverging: 0.589 ms against the reference's
// 0.306 at N 82, C_in 13, C_out 4, D 5, H 17, W 27 (H200, seed 2026); this path takes 0.109 ms
// there (2.8x the reference), 0.028 ms at N 39, C_in 1 (4.0x; the gather 0.115 ms, 0.96x), and
// 2.94 ms at the full preset with C_in 5 (4.7x; the C_in 3 fast path takes 0.83 ms).
constexpr int kUnitCo = 4;  // output channels per lane

__host__ __device__ inline int64_t unit_lane_chunks(const Geometry& g) {
  return (g.in_h * g.in_w + kWarp - 1) / kWarp;  // rows of parity 0 (H of them) and 1 (H - 1)
}

inline size_t unit_smem_bytes(const Geometry& g) {
  return sizeof(float4) * static_cast<size_t>(g.c_in) * 9 * kUnitCo;
}

template <int kTd, int kTh>
__device__ void unit_item(const Buffers& b, const Geometry& g, const float4* w, int64_t n,
                          int64_t od, int64_t oh, int64_t q, int64_t co0) {
  const int64_t vol = g.in_d * g.in_h * g.in_w;
  const int in_w = static_cast<int>(g.in_w), in_hw = static_cast<int>(g.in_h * g.in_w);
  // x[n, c, od / 2 + td, oh / 2 + th, q + e]: taps td, th of the odd axes read the next plane/row
  const float* xc = b.x + n * g.c_in * vol + (od / 2 * g.in_h + oh / 2) * g.in_w + q;
  const bool right = q + 1 < g.in_w;  // else ow = 2q + 1 is past the row and x[q + 1] unused
  const int c_in = static_cast<int>(g.c_in);
  float acc[kUnitCo][2] = {};
#pragma unroll 1
  for (int c = 0; c < c_in; ++c, xc += vol) {
#pragma unroll
    for (int td = 0; td < kTd; ++td)
#pragma unroll
      for (int th = 0; th < kTh; ++th) {
        const float* xp = xc + td * in_hw + th * in_w;
        const float x0 = __ldg(xp), x1 = right ? __ldg(xp + 1) : 0.0f;
        const float4* wt = w + ((c * 3 + tap_k<kTd>(td)) * 3 + tap_k<kTh>(th)) * kUnitCo;
#pragma unroll
        for (int j = 0; j < kUnitCo; ++j) {
          const float4 v = wt[j];
          acc[j][0] = fmaf(x0, v.y, acc[j][0]);
          acc[j][1] = fmaf(x1, v.x, fmaf(x0, v.z, acc[j][1]));
        }
      }
  }
  float* dst =
      b.s + ((n * g.c_out + co0) * g.out_d + od) * g.out_h * g.out_w + oh * g.out_w + 2 * q;
#pragma unroll
  for (int j = 0; j < kUnitCo; ++j, dst += g.plane()) {
    if (co0 + j >= g.c_out) break;
    const float bias = __ldg(&b.bias[co0 + j]);
    dst[0] = swish(acc[j][0] + bias);
    if (right) dst[1] = swish(acc[j][1] + bias);
  }
}

__global__ void __launch_bounds__(kThreads, 2) unit_swish_kernel(Buffers b, Geometry g) {
  extern __shared__ float4 unit_w[];  // [C_in][kd][kh][kUnitCo]
  const int64_t co0 = int64_t{blockIdx.y} * kUnitCo;
  for (int64_t e = threadIdx.x; e < g.c_in * 9 * kUnitCo; e += kThreads) {
    const int64_t j = e % kUnitCo, tap = e / kUnitCo % 9, c = e / (9 * kUnitCo);
    const float* src = b.w + ((c * g.c_out + co0 + j) * 9 + tap) * 3;
    unit_w[e] = co0 + j < g.c_out ? make_float4(__ldg(src), __ldg(src + 1), __ldg(src + 2), 0.0f)
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  __syncthreads();
  const int64_t chunks = unit_lane_chunks(g);
  int64_t item = int64_t{blockIdx.x} * kWarps + threadIdx.x / kWarp;
  if (item >= g.batch * g.out_d * 2 * chunks) return;
  const int64_t flat = item % chunks * kWarp + threadIdx.x % kWarp;
  item /= chunks;
  const int ph = static_cast<int>(item % 2);
  item /= 2;
  const int64_t od = item % g.out_d, n = item / g.out_d;
  const int64_t r = flat / g.in_w, q = flat % g.in_w, oh = 2 * r + ph;
  if (oh >= g.out_h) return;  // past the last row of this parity
  if (od % 2 == 0) {
    ph ? unit_item<1, 2>(b, g, unit_w, n, od, oh, q, co0)
       : unit_item<1, 1>(b, g, unit_w, n, od, oh, q, co0);
  } else {
    ph ? unit_item<2, 2>(b, g, unit_w, n, od, oh, q, co0)
       : unit_item<2, 1>(b, g, unit_w, n, od, oh, q, co0);
  }
}

// s = swish(conv_transpose(x) + bias), one thread per output (gather::gather_one: any geometry).
__global__ void __launch_bounds__(kThreads)
    generic_swish_kernel(Buffers b, gather::ConvTransposeGeometry cg, gather::GatherDividers dv) {
  const int64_t total = cg.output_numel();
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    int64_t n, co, o[gather::kSpatial];
    gather::decode_output(e, cg, dv, n, co, o);
    b.s[e] = swish(__ldg(&b.bias[co]) + gather::gather_one(b.x, b.w, cg, dv, n, co, o));
  }
}

__global__ void __launch_bounds__(kThreads) generic_normalize_kernel(Buffers b, Geometry g) {
  const int64_t plane = g.plane(), total = g.batch * g.c_out * plane;
  const int64_t step = int64_t{gridDim.x} * kThreads;
  if (plane % 4 == 0) {  // a float4 never crosses a channel plane
    const auto* s4 = reinterpret_cast<const float4*>(b.s);
    auto* out4 = reinterpret_cast<float4*>(b.out);
    for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total / 4; e += step) {
      const float2 cf = b.coef[(4 * e) / plane];
      float4 v = __ldcs(&s4[e]);
      v = make_float4(hardswish(fmaf(v.x, cf.x, cf.y)), hardswish(fmaf(v.y, cf.x, cf.y)),
                      hardswish(fmaf(v.z, cf.x, cf.y)), hardswish(fmaf(v.w, cf.x, cf.y)));
      __stcs(&out4[e], v);
    }
    return;
  }
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total; e += step) {
    const float2 cf = b.coef[e / plane];
    b.out[e] = hardswish(fmaf(__ldcs(&b.s[e]), cf.x, cf.y));
  }
}

// ---- Host side ----

class ConvTransposeSwishGroupNormHardswish final : public Implementation {
 public:
  ~ConvTransposeSwishGroupNormHardswish() override { KB_CUDA_WARN(cudaFree(workspace_)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    w_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    gamma_ = param_index(p, "group_norm.weight");
    beta_ = param_index(p, "group_norm.bias");
    const Shape& xs = p.shape_of("x");                      // (N, C_in, D, H, W)
    const Shape& ws = p.shape_of("conv_transpose.weight");  // (C_in, C_out, kD, kH, kW)
    const Shape& os = p.output_shape();                     // (N, C_out, Do, Ho, Wo)
    g_ = Geometry{xs[0], xs[1], os[1], xs[2], xs[3], xs[4], os[2], os[3],
                  os[4], 0,     0,     0,     0,     0,     0.0f};
    g_.groups = p.int_attr("group_norm", "num_groups");
    g_.cpg = g_.c_out / g_.groups;
    g_.eps = static_cast<float>(p.number("group_norm", "eps"));
    if (p.int_attr("conv_transpose", "groups") != 1 || ws[1] != g_.c_out)
      return Status::failed_precondition("L2_060 custom: needs a conv_transpose with groups 1");
    KB_ASSIGN_OR_RETURN(cg_, gather::read_conv_transpose(p, "conv_transpose"));
    bool unit = true;  // k 3, stride 2, padding 1, dilation 1, output_padding 0 on every axis
    for (int a = 0; a < 3; ++a) {
      unit = unit && cg_.kernel[a] == 3 && cg_.stride[a] == 2 && cg_.padding[a] == 1 &&
             cg_.dilation[a] == 1 && cg_.out[a] == 2 * cg_.in[a] - 1;
    }
    g_.m_chunks = (g_.in_d + kRows - 1) / kRows;
    g_.q_chunks = (g_.in_w + kWarp - 1) / kWarp;
    g_.items = 2 * g_.m_chunks * g_.out_h * g_.q_chunks;
    smem_ = smem_bytes(g_);
    fast_ = unit && g_.c_in == kCin && smem_ <= 96 * 1024;
    const int64_t unit_blocks =
        (g_.batch * g_.out_d * 2 * unit_lane_chunks(g_) + kWarps - 1) / kWarps;
    unit_ = unit && !fast_ && unit_smem_bytes(g_) <= 96 * 1024 && unit_blocks <= 0x7fffffff &&
            (g_.c_out + kUnitCo - 1) / kUnitCo <= 65535;
    int64_t parts = g_.items;
    size_t s_bytes = 0;
    if (fast_) {
      KB_TRY(plan_fast());
    } else {
      if (unit_) {
        KB_CUDA_TRY(cudaFuncSetAttribute(unit_swish_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(unit_smem_bytes(g_))));
      }
      KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
      parts_ = sp::group_partial_parts(g_.batch, g_.groups, g_.cpg * g_.plane(), sms);
      parts = parts_;
      s_bytes = sizeof(float) * g_.batch * g_.c_out * g_.plane();
    }
    // workspace: partials [N * parts * groups] double2 | coef [N * C_out] float2 | s (generic)
    partials_bytes_ = sizeof(double2) * g_.batch * parts * g_.groups;
    coef_bytes_ = sizeof(float2) * g_.batch * g_.c_out;
    KB_CUDA_TRY(cudaMalloc(&workspace_, partials_bytes_ + coef_bytes_ + s_bytes));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // Every workspace slot a launch reads was written earlier in this run: no zeroing.
    auto* base = static_cast<unsigned char*>(workspace_);
    auto* partials = reinterpret_cast<double2*>(base);
    auto* coef = reinterpret_cast<float2*>(base + partials_bytes_);
    auto* s = reinterpret_cast<float*>(base + partials_bytes_ + coef_bytes_);
    const Buffers b{args.inputs[x_].data,
                    args.params[w_].data,
                    args.params[bias_].data,
                    args.params[gamma_].data,
                    args.params[beta_].data,
                    args.output.data,
                    s,
                    partials,
                    coef};
    const double count = static_cast<double>(g_.cpg * g_.plane());
    if (fast_) {
      stats_kernel<<<stats_blocks_, kThreads, smem_, stream>>>(b, g_);
      KB_CUDA_TRY(cudaGetLastError());
      sp::launch_coefficients(partials, g_.batch, g_.items, g_.groups, g_.cpg, count, b.gamma,
                              b.beta, g_.eps, coef, stream);
      KB_CUDA_TRY(cudaGetLastError());
      normalize_kernel<<<normalize_blocks_, kThreads, smem_, stream>>>(b, g_);
    } else {
      const int64_t total = g_.batch * g_.c_out * g_.plane();
      const auto grid = [](int64_t n) {
        return static_cast<unsigned>(
            std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 1 << 20));
      };
      if (unit_) {
        const int64_t items = g_.batch * g_.out_d * 2 * unit_lane_chunks(g_);
        const dim3 blocks(static_cast<unsigned>((items + kWarps - 1) / kWarps),
                          static_cast<unsigned>((g_.c_out + kUnitCo - 1) / kUnitCo));
        unit_swish_kernel<<<blocks, kThreads, unit_smem_bytes(g_), stream>>>(b, g_);
      } else {
        generic_swish_kernel<<<grid(total), kThreads, 0, stream>>>(b, cg_,
                                                                   gather::GatherDividers(cg_));
      }
      KB_CUDA_TRY(cudaGetLastError());
      sp::launch_group_partials(s, g_.batch, g_.groups, g_.cpg * g_.plane(), parts_, partials,
                                stream);
      KB_CUDA_TRY(cudaGetLastError());
      sp::launch_coefficients(partials, g_.batch, parts_, g_.groups, g_.cpg, count, b.gamma, b.beta,
                              g_.eps, coef, stream);
      KB_CUDA_TRY(cudaGetLastError());
      generic_normalize_kernel<<<grid(g_.plane() % 4 == 0 ? total / 4 : total), kThreads, 0,
                                 stream>>>(b, g_);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  Status plan_fast() {
    const int64_t tasks = (g_.batch * g_.items + kWarps - 1) / kWarps;  // blocks' worth of items
    for (const void* k : {reinterpret_cast<const void*>(stats_kernel),
                          reinterpret_cast<const void*>(normalize_kernel)})
      KB_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem_)));
    KB_ASSIGN_OR_RETURN(
        stats_blocks_,
        sp::persistent_blocks(reinterpret_cast<const void*>(stats_kernel), kThreads, smem_, tasks));
    KB_ASSIGN_OR_RETURN(normalize_blocks_,
                        sp::persistent_blocks(reinterpret_cast<const void*>(normalize_kernel),
                                              kThreads, smem_, tasks));
    return Status::ok();
  }

  size_t x_ = 0, w_ = 0, bias_ = 0, gamma_ = 0, beta_ = 0;
  Geometry g_{};
  gather::ConvTransposeGeometry cg_{};
  bool fast_ = false;  // the recomputing fast path (C_in 3)
  bool unit_ = false;  // else the unit geometry's swish pass, else the gather
  size_t smem_ = 0;
  int stats_blocks_ = 1, normalize_blocks_ = 1;
  int64_t parts_ = 1;  // generic path: statistics blocks per (n, group)
  size_t partials_bytes_ = 0, coef_bytes_ = 0;
  void* workspace_ = nullptr;  // partials, coefficients, s (generic path); owned
};

}  // namespace kb::custom::L2_060

KB_REGISTER_IMPLEMENTATION(L2_060, custom, kb::custom::L2_060::ConvTransposeSwishGroupNormHardswish)
