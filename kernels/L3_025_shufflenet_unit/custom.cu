// L3_025 custom: ShuffleNet unit, every BatchNorm in training mode (batch statistics, biased var).
//   x: (N, C_in, H, W) -> out: (N, C_out, H, W), fp32 NCHW; mid = C_out / 4, G groups,
//   cg = mid / G (conv3 inputs per group), opg = C_out / G (conv3 outputs per group).
//   out = relu(BN3(conv3(shuffle(BN2(dw3x3(relu(BN1(conv1(x)))))))) + BN_sc(conv_sc(x)).
//   conv1: (mid, C_in / G, 1, 1), groups G; dw3x3: (mid, 1, 3, 3), padding 1; conv3: (C_out,
//   mid / G, 1, 1), groups G; conv_sc: (C_out, C_in, 1, 1); BN = (y - mean) / sqrt(var + eps)
//   gamma + beta per channel over (N, H, W) (full preset: x (10, 240, 224, 224) -> out (10, 480,
//   224, 224), G = 3, mid 120).
//
// Cost (full preset 10 x 240 -> 480 x 224 x 224, docs/problems.md#l3_025): 150.35 GFLOP (conv_sc
// 77%), 1.45 GB minimum DRAM traffic; floor 2.24 ms in fp32 FMA (3xTF32 ~0.92 ms of tensor work).
// Reference 11.1 ms, best strict-fp32 peer 9.22 ms (torch.compile, docs/baselines.md), goal
// <= 3.59 ms (1.6 x the floor). Plain TF32 fails the 1e-4 budget.
//
// Design (all statistics in double, no plain TF32):
//  A. prep: Wcat = [W_sc; W1 as a dense (mid, C_in) block-diagonal] (M = C_out + mid rows), and
//     shift[r] = (Wcat x)[r] at pixel (0, 0) (moments of Y - shift: no cancellation).
//  B. one 3xTF32 GEMM per image (kernels/cores/shufflenet_tf32x3/gemm_stats.cuh, tiles of
//     kernels/cores/tf32x3/gemm128.cuh): Y = Wcat @ x; rows < C_out (the raw shortcut conv) go
//     straight into `out`, the conv1 rows into c1; the epilogue reduces each row's moments ->
//     BN_sc and BN1 coefficients. (conv1 as dense rows wastes 2/3 of its 4.8 GMAC, ~10% more
//     tensor work, and spares a second pass over x.)
//  C. dw3x3: d2 = dwconv(relu(BN1(c1))) (zero padding after the ReLU), + its moments -> BN2.
//  D. Gram: per conv3 group, G_g = sum_pixels z z^T over the group's cg shuffled channels,
//     z = BN2(d2), with a constant-1 channel appended (gives sum z). BN3's mean and variance of
//     conv3 = W3 z follow exactly: E[y] = w.E[z], E[y^2] = w^T E[zz^T] w (2.4 GMAC, not 9.6).
//  E. final: per group and 128-pixel tile, conv3 in fp32 FMA from shared memory (8 x 4 outputs
//     per thread), out = relu(BN3(acc)) + BN_sc(out) (out holds the raw shortcut conv).
// Any geometry of the unit runs this plan (C_in, C_out, mid, G divisible as the layer requires,
// a 3x3 depthwise conv); where shared memory is too small for E, final_generic_kernel (one
// thread per output, same math) replaces it. Other layer attributes fail setup.
//
// Predicted on the H200: B ~2.2 ms (72 GMAC of 3xTF32 at ~65 TFLOP/s), C ~0.15 ms (0.5 GB),
// D ~0.2 ms, E ~0.55 ms (2.2 GB + 9.6 GMAC fp32), ~0.05 ms small kernels: ~3.2 ms (3.3-3.8 ms in
// docs/kernels.md). Measured: 5.19 ms (v1, 2026-11-30, docs/kernels.md), 5.218 ms in
// docs/bench-h200-2026-12-02b.json (2.3x the floor, 1.45x the goal). Next (docs/kernels.md):
// profile the GEMM (K = 240: 8 k-steps per tile, short) and E's dependent read-modify-write of
// `out`.
//
// Accuracy of the statistics (why inputs in [100, 101) or x 1000 do not cost the custom digits):
// every BatchNorm's moments are formed about a value near the data, never as raw fp32 sums of y
// and y^2: B about shift[r] (the row's value at pixel (0, 0)), C about each thread's first value
// (raw sums rebuilt in double), and D's Gram is of z = BN2(d2), which BN2 has already centred
// and scaled (mean beta2, std gamma2: with gamma/beta of the random-affine trials |mean|/std
// <= 1, so E[y^2] - mean^2 costs < 1 digit). What remains under shifted or scaled inputs is the
// 1x1 convs' own rounding relative to |Wx| (3xTF32 ~ fp32), which BN then divides by the
// channel std, as the fp32 reference does: tests/gpu/robustness_test.cu measures both.
// Error sources: 3xTF32 products (K = 240 in the MMA accumulator) for conv_sc and conv1, fp32
// FMA for dw3x3 and conv3, IEEE sqrt in double for the BN coefficients, no fast intrinsics; five
// stacked normalizations amplify them (TF32 would fail 29.5x, docs/problems.md#l3_025). Measured
// max |err| 1.7e-5 (2026-11-30) and 1.9e-5 (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed.
// Robustness trials (small preset, seed 7, vs the golden model): shift (x + 100) 5.3x the
// tolerance, `ill_conditioned` (the reference 6.4x: the shortcut conv's rounding relative to
// |Wx| ~ 100 sum|w|, divided by the channel std); scale (x 1000) 0.045x (0.040x); centered
// 0.036x (0.019x); random_affine 0.067x (0.045x).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/shufflenet_tf32x3/gemm_stats.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L3_025 {

struct Geometry {
  int64_t batch, c_in, c_out, mid, groups, h, w, plane;  // plane = h * w
  int cg, opg;  // mid / groups, c_out / groups
};

struct BnParams {
  const float* gamma;
  const float* beta;
  float eps;
};

constexpr int kSmallThreads = 256;
constexpr int kWarpSize = 32;

// ---- A: Wcat (M, C_in) = [W_sc (C_out, C_in); W1 dense (mid, C_in)], shift[r] = Y[0, r, 0] ----
__global__ void __launch_bounds__(kSmallThreads)
    prep_kernel(const float* __restrict__ w_sc, const float* __restrict__ w1,
                const float* __restrict__ x, Geometry g, float* __restrict__ wcat,
                float* __restrict__ shift) {
  const int64_t m = g.c_out + g.mid, k = g.c_in, cin_pg = g.c_in / g.groups;
  const int64_t mid_pg = g.mid / g.groups;
  auto weight = [&](int64_t r, int64_t c) -> float {
    if (r < g.c_out) return w_sc[r * k + c];
    const int64_t o = r - g.c_out, lo = (o / mid_pg) * cin_pg;  // conv1 output o's group
    return c >= lo && c < lo + cin_pg ? w1[o * cin_pg + (c - lo)] : 0.0f;
  };
  for (int64_t e = int64_t{blockIdx.x} * kSmallThreads + threadIdx.x; e < m * k;
       e += int64_t{gridDim.x} * kSmallThreads) {
    wcat[e] = weight(e / k, e % k);
    if (e < m) {
      float y = 0.0f;
      for (int64_t c = 0; c < k; ++c) y = fmaf(weight(e, c), x[c * g.plane], y);
      shift[e] = y;
    }
  }
}

// ---- BN coefficients from moments: rows < split use `a`, the others `b` (index r - split) ----
__global__ void __launch_bounds__(kSmallThreads)
    bn_coefficients_kernel(const double2* __restrict__ moments, const float* __restrict__ shift,
                           int rows, int split, BnParams a, BnParams b, double count,
                           float2* __restrict__ scale_shift) {
  const int r = blockIdx.x * kSmallThreads + threadIdx.x;
  if (r >= rows) return;
  const BnParams bn = r < split ? a : b;
  const int i = r < split ? r : r - split;
  const double mean_d = moments[r].x / count;
  const double var = fmax(moments[r].y / count - mean_d * mean_d, 0.0);  // biased
  const double mean = (shift != nullptr ? shift[r] : 0.0) + mean_d;
  const double s = bn.gamma[i] / sqrt(var + static_cast<double>(bn.eps));
  scale_shift[r] = make_float2(static_cast<float>(s), static_cast<float>(bn.beta[i] - mean * s));
}

// ---- C: d2 = dw3x3(relu(BN1(c1))) and its per-channel moments ----
constexpr int64_t kDwChunk = 8192;  // pixels of one (n, c) plane per block

// c1, d2: (N, mid, H, W); w2: (mid, 1, 3, 3); block b: plane b / chunks, chunk b % chunks.
__global__ void __launch_bounds__(kSmallThreads)
    dwconv_moments_kernel(const float* __restrict__ c1, const float2* __restrict__ ss1,
                          const float* __restrict__ w2, Geometry g, int64_t chunks,
                          float* __restrict__ d2, double2* __restrict__ moments2) {
  const int64_t b = blockIdx.x, plane_idx = b / chunks;
  const int c = static_cast<int>(plane_idx % g.mid);
  const int64_t lo = (b % chunks) * kDwChunk, hi = min(g.plane, lo + kDwChunk);
  const float* src = c1 + plane_idx * g.plane;
  float wk[9];
#pragma unroll
  for (int t = 0; t < 9; ++t) wk[t] = w2[c * 9 + t];
  const float2 ss = ss1[c];
  const int h = static_cast<int>(g.h), w = static_cast<int>(g.w);
  // Sums of d - pilot and (d - pilot)^2, pilot = the thread's first value: no fp32 cancellation
  // whatever the channel's mean; the raw sums are rebuilt in double before the block sum.
  float s1 = 0.0f, s2 = 0.0f, pilot = 0.0f;  // <= kDwChunk / kSmallThreads values per thread
  int count = 0;
  for (int64_t e = lo + threadIdx.x; e < hi; e += kSmallThreads) {
    const int i = static_cast<int>(e / w), j = static_cast<int>(e % w);
    float acc = 0.0f;
#pragma unroll
    for (int di = 0; di < 3; ++di) {
      const int ii = i + di - 1;
      if (ii < 0 || ii >= h) continue;
#pragma unroll
      for (int dj = 0; dj < 3; ++dj) {
        const int jj = j + dj - 1;
        if (jj < 0 || jj >= w) continue;
        const float a = fmaxf(fmaf(__ldg(src + int64_t{ii} * w + jj), ss.x, ss.y), 0.0f);
        acc = fmaf(wk[di * 3 + dj], a, acc);
      }
    }
    d2[plane_idx * g.plane + e] = acc;
    if (count++ == 0) pilot = acc;
    const float d = acc - pilot;
    s1 += d;
    s2 = fmaf(d, d, s2);
  }
  const double p = pilot, d1 = s1, n = count;
  const double2 m = cores::block_sum<kSmallThreads>(  // in thread 0, fixed order
      make_double2(fma(n, p, d1), fma(n * p, p, fma(2.0 * p, d1, double{s2}))));
  if (threadIdx.x == 0) {
    atomicAdd(&moments2[c].x, m.x);
    atomicAdd(&moments2[c].y, m.y);
  }
}

// b channel feeding shuffled channel j: (j % G) * (mid / G) + j / G.
__device__ __forceinline__ int64_t shuffle_source(int64_t j, const Geometry& g) {
  return (j % g.groups) * g.cg + j / g.groups;
}

// ---- D: per-group Gram of (z, 1), z = BN2(d2) over the group's shuffled channels ----
constexpr int kGramTile = 64;            // pixels per shared tile
constexpr int kGramStride = kGramTile + 1;  // odd stride: rows fall in different banks
constexpr int64_t kGramChunk = 2048;     // pixels per block: fp32 partial sums, then double

// zs[k][j] for k < rows4 (zero rows past cg, ones at row cg), pixels [p0, p0 + kGramTile).
__device__ void load_gram_tile(const float* d2, const float2* ss2, const Geometry& g, int grp,
                               int64_t n, int64_t p0, int64_t hi, int rows4, float* zs) {
  for (int e = threadIdx.x; e < rows4 * kGramTile; e += kSmallThreads) {
    const int k = e / kGramTile, j = e % kGramTile;
    const int64_t p = p0 + j;
    float v = 0.0f;
    if (p < hi && k < g.cg) {
      const int64_t ch = shuffle_source(int64_t{grp} * g.cg + k, g);
      const float2 ss = ss2[ch];
      v = fmaf(d2[(n * g.mid + ch) * g.plane + p], ss.x, ss.y);
    } else if (p < hi && k == g.cg) {
      v = 1.0f;
    }
    zs[k * kGramStride + j] = v;
  }
}

// gram[grp][k][l] += sum_p z_k z_l, k, l <= cg (z_cg = 1). Block: (image n, chunk), y = group.
// Thread item = (4x4 tile of (k, l), pixel split); items past the block size run in rounds.
__global__ void __launch_bounds__(kSmallThreads)
    gram_kernel(const float* __restrict__ d2, const float2* __restrict__ ss2, Geometry g,
                int64_t chunks, double* __restrict__ gram) {
  extern __shared__ float zs[];
  const int grp = blockIdx.y, dim = g.cg + 1, nkb = (dim + 3) / 4, tiles = nkb * nkb;
  const int splits = max(1, kSmallThreads / tiles), items = tiles * splits;
  const int64_t n = blockIdx.x / chunks, lo = (blockIdx.x % chunks) * kGramChunk;
  const int64_t hi = min(g.plane, lo + kGramChunk);
  double* gm = gram + int64_t{grp} * dim * dim;
  for (int base = 0; base < items; base += kSmallThreads) {
    const int item = base + threadIdx.x, tile = item % tiles, split = item / tiles;
    const int kb = 4 * (tile / nkb), lb = 4 * (tile % nkb);
    float acc[4][4] = {};
    for (int64_t p0 = lo; p0 < hi; p0 += kGramTile) {
      __syncthreads();
      load_gram_tile(d2, ss2, g, grp, n, p0, hi, 4 * nkb, zs);
      __syncthreads();
      if (item >= items) continue;
      for (int j = split; j < kGramTile; j += splits) {
        float za[4], zb[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          za[i] = zs[(kb + i) * kGramStride + j];
          zb[i] = zs[(lb + i) * kGramStride + j];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int t = 0; t < 4; ++t) acc[i][t] = fmaf(za[i], zb[t], acc[i][t]);
      }
    }
    if (item >= items) continue;
    for (int i = 0; i < 4; ++i)
      for (int t = 0; t < 4; ++t)
        if (kb + i < dim && lb + t < dim) atomicAdd(&gm[(kb + i) * dim + lb + t], double{acc[i][t]});
  }
}

// BN3 coefficients of conv3 output o = thread: y = w.z, w = W3[o, :] (cg), over its group's Gram.
__global__ void __launch_bounds__(kSmallThreads)
    bn3_coefficients_kernel(const double* __restrict__ gram, const float* __restrict__ w3,
                            Geometry g, BnParams bn, double count, float2* __restrict__ ss3) {
  const int o = blockIdx.x * kSmallThreads + threadIdx.x;
  if (o >= g.c_out) return;
  const int dim = g.cg + 1;
  const double* gm = gram + (o / g.opg) * int64_t{dim} * dim;
  const float* w = w3 + int64_t{o} * g.cg;
  double mean = 0.0, ey2 = 0.0;
  for (int k = 0; k < g.cg; ++k) {
    double row = 0.0;
    for (int l = 0; l < g.cg; ++l) row += gm[k * dim + l] * w[l];
    ey2 += w[k] * row;
    mean += w[k] * gm[k * dim + g.cg];
  }
  mean /= count;
  const double var = fmax(ey2 / count - mean * mean, 0.0);
  const double s = bn.gamma[o] / sqrt(var + static_cast<double>(bn.eps));
  ss3[o] = make_float2(static_cast<float>(s), static_cast<float>(bn.beta[o] - mean * s));
}

// ---- E: conv3 (fp32 FMA) + BN3 + ReLU + BN_sc(out) + add, in place on out ----
constexpr int kFinalThreads = 320;
constexpr int kFinalTile = 128;  // pixels per tile, one image
constexpr int kOutsO = 8, kOutsP = 4;  // outputs per thread item: 8 channels x 4 pixels
constexpr int kQuads = kFinalTile / kOutsP;
static_assert(kFinalThreads % kWarpSize == 0 && kFinalTile % kOutsP == 0, "whole warps, quads");
static_assert(kOutsO == 8 && kOutsP == 4, "the weights are two float4s, the pixels one");

__host__ __device__ constexpr int round_up8(int v) { return (v + 7) / 8 * 8; }

__device__ __forceinline__ float finish(float acc, float2 s3, float raw_sc, float2 ssc) {
  return fmaxf(fmaf(acc, s3.x, s3.y), 0.0f) + fmaf(raw_sc, ssc.x, ssc.y);
}

// out[n, grp * opg + o, p], p in [p0 + 4q, + 4): reads the raw shortcut conv, writes the result.
__device__ __forceinline__ void finish_item(float* out, const Geometry& g, int64_t n, int grp,
                                            int o0, int64_t p, bool vec, const float2* ss3,
                                            const float2* ss_sc, const float (&acc)[kOutsO][kOutsP]) {
#pragma unroll
  for (int i = 0; i < kOutsO; ++i) {
    if (o0 + i >= g.opg) break;
    const int64_t oc = int64_t{grp} * g.opg + o0 + i;
    const float2 s3 = ss3[oc], ssc = ss_sc[oc];
    float* dst = out + (n * g.c_out + oc) * g.plane + p;
    if (vec) {  // plane % 4 == 0: the quad is all in range
      if (p >= g.plane) continue;
      const float4 r = *reinterpret_cast<const float4*>(dst);
      *reinterpret_cast<float4*>(dst) =
          make_float4(finish(acc[i][0], s3, r.x, ssc), finish(acc[i][1], s3, r.y, ssc),
                      finish(acc[i][2], s3, r.z, ssc), finish(acc[i][3], s3, r.w, ssc));
    } else {
#pragma unroll
      for (int u = 0; u < kOutsP; ++u)
        if (p + u < g.plane) dst[u] = finish(acc[i][u], s3, dst[u], ssc);
    }
  }
}

// Persistent over the pixel tiles (n, tile) of group y = grp. Shared: ws[cg][opad] = W3 of
// the group transposed and zero-padded to opad = round_up8(opg), zs[cg][kFinalTile] = BN2(d2).
__global__ void __launch_bounds__(kFinalThreads, 2)
    final_kernel(const float* __restrict__ d2, const float2* __restrict__ ss2,
                 const float* __restrict__ w3, const float2* __restrict__ ss3,
                 const float2* __restrict__ ss_sc, Geometry g, int64_t tiles_per_image, bool vec,
                 float* __restrict__ out) {
  extern __shared__ float4 smem4[];
  const int grp = blockIdx.y, opad = round_up8(g.opg), cg = g.cg;
  float* ws = reinterpret_cast<float*>(smem4);
  float* zs = ws + cg * opad;  // cg * opad is a multiple of 8: float4-aligned
  for (int e = threadIdx.x; e < cg * opad; e += kFinalThreads) {
    const int k = e / opad, o = e % opad;
    ws[e] = o < g.opg ? w3[(int64_t{grp} * g.opg + o) * cg + k] : 0.0f;
  }
  const int items = (opad / kOutsO) * kQuads;
  for (int64_t t = blockIdx.x; t < g.batch * tiles_per_image; t += gridDim.x) {
    const int64_t n = t / tiles_per_image, p0 = (t % tiles_per_image) * kFinalTile;
    __syncthreads();  // ws staged / the previous tile's zs consumed
    for (int e = threadIdx.x; e < cg * kFinalTile; e += kFinalThreads) {
      const int k = e / kFinalTile, j = e % kFinalTile;
      const int64_t ch = shuffle_source(int64_t{grp} * cg + k, g), p = p0 + j;
      const float2 ss = ss2[ch];
      zs[e] = p < g.plane ? fmaf(d2[(n * g.mid + ch) * g.plane + p], ss.x, ss.y) : 0.0f;
    }
    __syncthreads();
    for (int item = threadIdx.x; item < items; item += kFinalThreads) {
      const int o0 = (item / kQuads) * kOutsO, q = item % kQuads;
      float acc[kOutsO][kOutsP] = {};
      for (int k = 0; k < cg; ++k) {
        const float4 z = *reinterpret_cast<const float4*>(zs + k * kFinalTile + kOutsP * q);
        const float4 wa = *reinterpret_cast<const float4*>(ws + k * opad + o0);
        const float4 wb = *reinterpret_cast<const float4*>(ws + k * opad + o0 + 4);
        const float wv[kOutsO] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
        const float zv[kOutsP] = {z.x, z.y, z.z, z.w};
#pragma unroll
        for (int i = 0; i < kOutsO; ++i)
#pragma unroll
          for (int u = 0; u < kOutsP; ++u) acc[i][u] = fmaf(wv[i], zv[u], acc[i][u]);
      }
      finish_item(out, g, n, grp, o0, p0 + kOutsP * q, vec, ss3, ss_sc, acc);
    }
  }
}

// Any size (shared memory too small for final_kernel): one thread per output element.
__global__ void __launch_bounds__(kSmallThreads)
    final_generic_kernel(const float* __restrict__ d2, const float2* __restrict__ ss2,
                         const float* __restrict__ w3, const float2* __restrict__ ss3,
                         const float2* __restrict__ ss_sc, Geometry g, float* __restrict__ out) {
  const int64_t total = g.batch * g.c_out * g.plane;
  for (int64_t e = int64_t{blockIdx.x} * kSmallThreads + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kSmallThreads) {
    const int64_t p = e % g.plane, oc = (e / g.plane) % g.c_out, n = e / (g.plane * g.c_out);
    const int64_t grp = oc / g.opg;
    float acc = 0.0f;
    for (int k = 0; k < g.cg; ++k) {
      const int64_t ch = shuffle_source(grp * g.cg + k, g);
      const float z = fmaf(d2[(n * g.mid + ch) * g.plane + p], ss2[ch].x, ss2[ch].y);
      acc = fmaf(w3[oc * g.cg + k], z, acc);
    }
    out[e] = finish(acc, ss3[oc], out[e], ss_sc[oc]);
  }
}

// ---- Host side ----

bool is_aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

class ShuffleNetUnit final : public Implementation {
 public:
  ~ShuffleNetUnit() override {
    for (void* p : {static_cast<void*>(wcat_), static_cast<void*>(shift_), static_cast<void*>(c1_),
                    static_cast<void*>(d2_), static_cast<void*>(ss_cat_), static_cast<void*>(ss2_),
                    static_cast<void*>(ss3_), static_cast<void*>(acc_)})
      KB_CUDA_WARN(cudaFree(p));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    KB_TRY(read_geometry(p));
    x_ = input_index(p, "x");
    for (int i = 0; i < kNorms; ++i) {
      gamma_[i] = param_index(p, std::string(kNormNames[i]) + ".weight");
      beta_[i] = param_index(p, std::string(kNormNames[i]) + ".bias");
      eps_[i] = static_cast<float>(p.number(kNormNames[i], "eps"));
    }
    w1_ = param_index(p, "conv1.weight");
    w2_ = param_index(p, "conv2.weight");
    w3_ = param_index(p, "conv3.weight");
    w_sc_ = param_index(p, "shortcut.0.weight");
    KB_TRY(allocate());
    return plan_launches();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;  // (N, C_in, H, W)
    float* out = args.output.data;          // (N, C_out, H, W)
    const Geometry& g = g_;
    const double count = static_cast<double>(g.batch) * static_cast<double>(g.plane);
    KB_CUDA_TRY(cudaMemsetAsync(acc_, 0, acc_doubles_ * sizeof(double), stream));
    prep_kernel<<<prep_blocks_, kSmallThreads, 0, stream>>>(param(args, w_sc_), param(args, w1_),
                                                            x, g, wcat_, shift_);
    KB_CUDA_TRY(cudaGetLastError());
    KB_TRY(launch_gemm(x, out, stream));
    bn_coefficients_kernel<<<blocks_for(m_), kSmallThreads, 0, stream>>>(
        moments_, shift_, m_, static_cast<int>(g.c_out), bn(args, kShortcut), bn(args, kBn1),
        count, ss_cat_);
    KB_CUDA_TRY(cudaGetLastError());
    dwconv_moments_kernel<<<dw_blocks_, kSmallThreads, 0, stream>>>(
        c1_, ss_cat_ + g.c_out, param(args, w2_), g, dw_chunks_, d2_, moments2_);
    KB_CUDA_TRY(cudaGetLastError());
    const int mid = static_cast<int>(g.mid);
    bn_coefficients_kernel<<<blocks_for(mid), kSmallThreads, 0, stream>>>(
        moments2_, nullptr, mid, mid, bn(args, kBn2), bn(args, kBn2), count, ss2_);
    KB_CUDA_TRY(cudaGetLastError());
    gram_kernel<<<dim3(gram_blocks_, static_cast<unsigned>(g.groups)), kSmallThreads, gram_smem_, stream>>>(
        d2_, ss2_, g, gram_chunks_, gram_);
    KB_CUDA_TRY(cudaGetLastError());
    bn3_coefficients_kernel<<<blocks_for(static_cast<int>(g.c_out)), kSmallThreads, 0, stream>>>(
        gram_, param(args, w3_), g, bn(args, kBn3), count, ss3_);
    KB_CUDA_TRY(cudaGetLastError());
    return launch_final(args, out, stream);
  }

 private:
  enum Norm { kBn1, kBn2, kBn3, kShortcut, kNorms };
  static constexpr const char* kNormNames[kNorms] = {"bn1", "bn2", "bn3", "shortcut.1"};

  static const float* param(const ImplArgs& args, size_t i) { return args.params[i].data; }
  BnParams bn(const ImplArgs& args, Norm i) const {
    return BnParams{param(args, gamma_[i]), param(args, beta_[i]), eps_[i]};
  }
  static unsigned blocks_for(int64_t n) {
    return static_cast<unsigned>(std::max<int64_t>(1, (n + kSmallThreads - 1) / kSmallThreads));
  }

  // The spec fixes the layer attributes; the kernels assume them.
  Status read_geometry(const ProblemInstance& p) {
    const std::vector<int64_t> one{1, 1}, zero{0, 0};
    bool ok = true;
    for (const char* conv : {"conv1", "conv2", "conv3", "shortcut.0"})
      ok = ok && p.ints(conv, "stride") == one && p.ints(conv, "dilation") == one &&
           p.ints(conv, "padding") == (std::string(conv) == "conv2" ? one : zero);
    const Shape& xs = p.shape_of("x");                // (N, C_in, H, W)
    const Shape& w1 = p.shape_of("conv1.weight");     // (mid, C_in / G, 1, 1)
    const Shape& w2 = p.shape_of("conv2.weight");     // (mid, 1, 3, 3)
    const Shape& w3 = p.shape_of("conv3.weight");     // (C_out, mid / G, 1, 1)
    const int64_t groups = p.int_attr("shuffle", "groups");
    g_ = Geometry{xs[0], xs[1], p.output_shape()[1], w1[0], groups, xs[2], xs[3], xs[2] * xs[3],
                  0, 0};
    ok = ok && groups > 0 && g_.c_in % groups == 0 && g_.mid % groups == 0 &&
         g_.c_out % groups == 0 && p.int_attr("conv1", "groups") == groups &&
         p.int_attr("conv3", "groups") == groups && p.int_attr("conv2", "groups") == g_.mid &&
         p.int_attr("shortcut.0", "groups") == 1 && w1[1] * groups == g_.c_in &&
         w2[2] == 3 && w2[3] == 3 && w3[1] * groups == g_.mid && w3[0] == g_.c_out;
    ok = ok && g_.c_out + g_.mid <= INT_MAX / 2 && g_.plane <= INT_MAX / 2 && g_.batch <= 65535;
    if (!ok) return Status::failed_precondition("L3_025 custom: unsupported layer attributes");
    g_.cg = static_cast<int>(g_.mid / groups);
    g_.opg = static_cast<int>(g_.c_out / groups);
    m_ = static_cast<int>(g_.c_out + g_.mid);
    return Status::ok();
  }

  Status allocate() {
    const int64_t mid_numel = g_.batch * g_.mid * g_.plane, dim = g_.cg + 1;
    acc_doubles_ = 2 * m_ + 2 * g_.mid + g_.groups * dim * dim;
    KB_CUDA_TRY(cudaMalloc(&wcat_, int64_t{m_} * g_.c_in * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&shift_, m_ * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&c1_, mid_numel * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&d2_, mid_numel * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&ss_cat_, m_ * sizeof(float2)));
    KB_CUDA_TRY(cudaMalloc(&ss2_, g_.mid * sizeof(float2)));
    KB_CUDA_TRY(cudaMalloc(&ss3_, g_.c_out * sizeof(float2)));
    KB_CUDA_TRY(cudaMalloc(&acc_, acc_doubles_ * sizeof(double)));
    moments_ = reinterpret_cast<double2*>(acc_);
    moments2_ = reinterpret_cast<double2*>(acc_ + 2 * m_);
    gram_ = acc_ + 2 * m_ + 2 * g_.mid;
    return Status::ok();
  }

  Status plan_launches() {
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    KB_ASSIGN_OR_RETURN(const int optin,
                        cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
    int per_sm = 0;
    for (auto kernel : {tf32x3_conv1x1_moments_kernel<true>, tf32x3_conv1x1_moments_kernel<false>})
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       kSmemBytes));
    tiles_m_ = (m_ + kBM - 1) / kBM;
    const int64_t gemm_x = tiles_m_ * ((g_.plane + kBN - 1) / kBN);
    prep_blocks_ = static_cast<int>(std::clamp<int64_t>((m_ * g_.c_in + 255) / 256, 1, sms * 8));
    dw_chunks_ = (g_.plane + kDwChunk - 1) / kDwChunk;
    gram_chunks_ = (g_.plane + kGramChunk - 1) / kGramChunk;
    const int64_t dw_blocks = g_.batch * g_.mid * dw_chunks_, gram_x = g_.batch * gram_chunks_;
    const int nkb = (g_.cg + 1 + 3) / 4;
    gram_smem_ = static_cast<size_t>(4 * nkb) * kGramStride * sizeof(float);
    if (gemm_x > INT_MAX || dw_blocks > INT_MAX || gram_x > INT_MAX || g_.groups > 65535 ||
        gram_smem_ > static_cast<size_t>(optin))
      return Status::failed_precondition("L3_025 custom: problem too large for the grids");
    gemm_blocks_ = static_cast<unsigned>(gemm_x);
    dw_blocks_ = static_cast<unsigned>(dw_blocks);
    gram_blocks_ = static_cast<unsigned>(gram_x);
    KB_CUDA_TRY(cudaFuncSetAttribute(gram_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(gram_smem_)));
    final_smem_ = static_cast<size_t>(g_.cg) * (round_up8(g_.opg) + kFinalTile) * sizeof(float);
    final_fast_ = final_smem_ <= static_cast<size_t>(optin);
    if (final_fast_) {
      KB_CUDA_TRY(cudaFuncSetAttribute(final_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(final_smem_)));
      KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, final_kernel,
                                                                kFinalThreads, final_smem_));
    }
    tiles_per_image_ = (g_.plane + kFinalTile - 1) / kFinalTile;
    const int64_t resident = int64_t{sms} * std::max(per_sm, 1);
    final_blocks_ = static_cast<unsigned>(std::clamp<int64_t>(
        g_.batch * tiles_per_image_, 1, std::max<int64_t>(1, resident / g_.groups)));
    generic_blocks_ = static_cast<unsigned>(sms * 8);
    return Status::ok();
  }

  Status launch_gemm(const float* x, float* out, cudaStream_t stream) {
    const GemmArgs a{wcat_, x, out, c1_, shift_, moments_, m_, static_cast<int>(g_.plane),
                     static_cast<int>(g_.c_in), static_cast<int>(g_.c_out), tiles_m_};
    const dim3 grid(gemm_blocks_, static_cast<unsigned>(g_.batch));
    const bool vec = g_.c_in % 4 == 0 && g_.plane % 4 == 0 && is_aligned16(x) && is_aligned16(out);
    if (vec) {
      tf32x3_conv1x1_moments_kernel<true><<<grid, kThreads, kSmemBytes, stream>>>(a);
    } else {
      tf32x3_conv1x1_moments_kernel<false><<<grid, kThreads, kSmemBytes, stream>>>(a);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Status launch_final(const ImplArgs& args, float* out, cudaStream_t stream) {
    const float* w3 = param(args, w3_);
    if (final_fast_) {
      const bool vec = g_.plane % 4 == 0 && is_aligned16(out);
      final_kernel<<<dim3(final_blocks_, static_cast<unsigned>(g_.groups)), kFinalThreads, final_smem_, stream>>>(
          d2_, ss2_, w3, ss3_, ss_cat_, g_, tiles_per_image_, vec, out);
    } else {
      final_generic_kernel<<<generic_blocks_, kSmallThreads, 0, stream>>>(d2_, ss2_, w3, ss3_,
                                                                          ss_cat_, g_, out);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Geometry g_{};
  int m_ = 0, tiles_m_ = 1, prep_blocks_ = 1;  // m_: Wcat rows = C_out + mid
  size_t x_ = 0, w1_ = 0, w2_ = 0, w3_ = 0, w_sc_ = 0;
  size_t gamma_[kNorms] = {}, beta_[kNorms] = {};
  float eps_[kNorms] = {};
  int64_t dw_chunks_ = 1, gram_chunks_ = 1, tiles_per_image_ = 1, acc_doubles_ = 0;
  unsigned gemm_blocks_ = 1, dw_blocks_ = 1, gram_blocks_ = 1, final_blocks_ = 1,
           generic_blocks_ = 1;
  size_t gram_smem_ = 0, final_smem_ = 0;
  bool final_fast_ = false;
  // Owned device buffers (freed by the destructor).
  float* wcat_ = nullptr;     // (M, C_in)
  float* shift_ = nullptr;    // [M]
  float* c1_ = nullptr;       // (N, mid, H, W) raw conv1
  float* d2_ = nullptr;       // (N, mid, H, W) raw depthwise conv
  float2* ss_cat_ = nullptr;  // [M]: BN_sc (rows < C_out) then BN1 (scale, shift)
  float2* ss2_ = nullptr;     // [mid]
  float2* ss3_ = nullptr;     // [C_out]
  double* acc_ = nullptr;     // zeroed per run: moments_, moments2_, gram_
  double2* moments_ = nullptr;   // [M]
  double2* moments2_ = nullptr;  // [mid]
  double* gram_ = nullptr;       // [G][cg + 1][cg + 1]
};

}  // namespace kb::custom::L3_025

KB_REGISTER_IMPLEMENTATION(L3_025, custom, kb::custom::L3_025::ShuffleNetUnit)
