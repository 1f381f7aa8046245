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
//     kernels/cores/tf32x3/gemm128.cuh): Y = W_sc @ x, the raw shortcut conv, straight into
//     `out`; the epilogue reduces each row's moments -> BN_sc coefficients.
//  B'. conv1 (grouped 1x1) in fp32 FMA from shared tiles of x, into c1, with its moments -> BN1.
//     (Its dense rows in B's Wcat were a fifth m-tile for 120 rows, two thirds zeros: 0.52 ms of
//     B's 2.55. Groups B' does not take, fewer than 21 or more than 40 outputs, stay as rows
//     C_out.. of Wcat in B.)
//  C. dw3x3: d2 = dwconv(relu(BN1(c1))) (zero padding after the ReLU), + its moments -> BN2;
//     a thread walks a column with the 3 x 3 window in registers.
//  D. Gram: per conv3 group, G_g = sum_pixels z z^T over the group's cg shuffled channels,
//     z = BN2(d2), with a constant-1 channel appended (gives sum z). BN3's mean and variance of
//     conv3 = W3 z follow exactly: E[y] = w.E[z], E[y^2] = w^T E[zz^T] w (2.4 GMAC, 1.6 by
//     symmetry, not 9.6).
//  E. final: per group and 128-pixel tile, conv3 in fp32 FMA from shared memory (8 x 4 outputs
//     per thread), out = relu(BN3(acc)) + BN_sc(out) (out holds the raw shortcut conv); D and E
//     copy each tile's d2 by cp.async while the previous tile computes.
// Any geometry of the unit runs this plan (C_in, C_out, mid, G divisible as the layer requires,
// a 3x3 depthwise conv); where shared memory is too small for E, final_generic_kernel (one
// thread per output, same math) replaces it. Other layer attributes fail setup.
//
// Predicted on the H200: B ~2.2 ms (72 GMAC of 3xTF32 at ~65 TFLOP/s), C ~0.15 ms (0.5 GB),
// D ~0.2 ms, E ~0.55 ms (2.2 GB + 9.6 GMAC fp32), ~0.05 ms small kernels: ~3.2 ms (3.3-3.8 ms in
// docs/kernels.md). Measured: 5.19 ms (v1, 2026-11-30, docs/kernels.md), 5.218 ms in
// docs/bench-h200-2026-12-02b.json (2.3x the floor, 1.45x the goal). Session 12 (ncu durations
// at the bench's clock, docs/kernels.md): A 99 us, B 2.55 ms, C 473 us, D 646 us + 136 us of
// BN3 coefficients, E 1.33 ms: every stage but B waited on memory one load at a time (64-bit
// division per staged element, a K-long chain per thread, an `out` round trip per channel).
// Now A 11 us, C 250 us, D 215 us + 21 us, E 770 us (cp.async one tile ahead): 3.83 ms
// (docs/bench-h200-2026-12-03-s12.json, D at 232 us then; 1.07x the goal). Session 13: conv1
// out of B (B' below): B 2.55 -> 2.04 ms, B' 356 us (75% issue, 40% of DRAM): 3.648-3.657 ms
// (1.02x the goal; docs/kernels.md). Session 14: B skips the last stage's zero-filled k8 steps
// (K = 240 is 7.5 stages of 32: 2.05 -> 1.90 ms); the tile copies work out each thread's column
// once (B' 354 -> 328 us: its copy loop was 14% of its instructions, ~40 per 16-byte copy); E's
// conv3 loop unrolled by 8 (760 -> 731 us): 3.436-3.449 ms, under the 3.59 ms goal. Next: B on
// wgmma (55% of the time at 47% issue).
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
__device__ __forceinline__ float wcat_entry(const float* w_sc, const float* w1, const Geometry& g,
                                            int64_t r, int64_t c) {
  if (r < g.c_out) return w_sc[r * g.c_in + c];
  const int64_t cin_pg = g.c_in / g.groups, mid_pg = g.mid / g.groups;
  const int64_t o = r - g.c_out, lo = (o / mid_pg) * cin_pg;  // conv1 output o's group
  return c >= lo && c < lo + cin_pg ? w1[o * cin_pg + (c - lo)] : 0.0f;
}

// Every thread fills Wcat; every warp then forms shift rows (lanes split K, one warp sum): the
// first version gave each row's K-long dependent chain to one thread (99 us of 5.2 ms).
__global__ void __launch_bounds__(kSmallThreads)
    prep_kernel(const float* __restrict__ w_sc, const float* __restrict__ w1,
                const float* __restrict__ x, Geometry g, float* __restrict__ wcat,
                float* __restrict__ shift) {
  const int64_t m = g.c_out + g.mid, k = g.c_in;
  for (int64_t e = int64_t{blockIdx.x} * kSmallThreads + threadIdx.x; e < m * k;
       e += int64_t{gridDim.x} * kSmallThreads)
    wcat[e] = wcat_entry(w_sc, w1, g, e / k, e % k);
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t{gridDim.x} * (kSmallThreads / kWarpSize);
  for (int64_t r = (int64_t{blockIdx.x} * kSmallThreads + threadIdx.x) / kWarpSize; r < m;
       r += warps) {  // warp-uniform
    float y = 0.0f;
    for (int64_t c = lane; c < k; c += kWarpSize)
      y = fmaf(wcat_entry(w_sc, w1, g, r, c), x[c * g.plane], y);
    y = cores::warp_sum(y);
    if (lane == 0) shift[r] = y;
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
constexpr int kDwRows = 32;  // output rows of one (n, c) plane per block
constexpr int kDwAhead = 4;  // rows loaded ahead of the window in one batch (8, at 80 registers
                             // and 3 blocks per SM: 296 against 250 us)

// relu(BN1(c1)) at (i, j) of a plane, 0 outside it (the zero padding comes after the ReLU).
__device__ __forceinline__ float bn1_relu(const float* plane, int i, int j, int h, int w,
                                          float2 ss) {
  return i >= 0 && i < h && j >= 0 && j < w
             ? fmaxf(fmaf(__ldg(plane + i * w + j), ss.x, ss.y), 0.0f)
             : 0.0f;
}

// c1, d2: (N, mid, H, W); w2: (mid, 1, 3, 3). Block b: plane b / bands, rows [r0, r0 + kDwRows)
// of it, r0 = (b % bands) kDwRows. Thread t: column t % lanes (and those `lanes` apart when W >
// kSmallThreads) of row segment t / lanes, lanes = min(W, kSmallThreads); it walks down the
// column with the 3 x 3 window of relu(BN1(c1)) in registers: one new row of 3 values per output.
// (The first version re-derived (i, j) per element with 64-bit division and loaded all 9 taps:
// 473 us, issue-bound.)
__global__ void __launch_bounds__(kSmallThreads, 4)
    dwconv_moments_kernel(const float* __restrict__ c1, const float2* __restrict__ ss1,
                          const float* __restrict__ w2, Geometry g, int bands,
                          float* __restrict__ d2, double2* __restrict__ moments2) {
  const int64_t plane_idx = blockIdx.x / bands;
  const int c = static_cast<int>(plane_idx % g.mid);
  const int h = static_cast<int>(g.h), w = static_cast<int>(g.w);
  const int lanes = min(w, kSmallThreads), segs = kSmallThreads / lanes;
  const int seg = threadIdx.x / lanes, col0 = threadIdx.x % lanes;  // seg == segs: no rows
  const int band0 = static_cast<int>(blockIdx.x % bands) * kDwRows;
  const int band_rows = min(kDwRows, h - band0), per_seg = (band_rows + segs - 1) / segs;
  const int r_lo = band0 + min(band_rows, seg * per_seg);
  const int r_hi = band0 + min(band_rows, (seg + 1) * per_seg);
  const float* src = c1 + plane_idx * g.plane;
  float* dst = d2 + plane_idx * g.plane;
  float wk[9];
#pragma unroll
  for (int t = 0; t < 9; ++t) wk[t] = w2[c * 9 + t];
  const float2 ss = ss1[c];
  // Sums of d - pilot and (d - pilot)^2, pilot = the thread's first value: no fp32 cancellation
  // whatever the channel's mean; the raw sums are rebuilt in double before the block sum.
  float s1 = 0.0f, s2 = 0.0f, pilot = 0.0f;  // <= kDwRows values per column
  int count = 0;
  for (int j = col0; j < w && r_lo < r_hi; j += lanes) {
    float win[2][3];  // rows r - 1, r x columns j - 1, j, j + 1 (row r + 1 in `next`)
#pragma unroll
    for (int di = 0; di < 2; ++di)
#pragma unroll
      for (int dj = 0; dj < 3; ++dj)
        win[di][dj] = bn1_relu(src, r_lo - 1 + di, j - 1 + dj, h, w, ss);
    for (int r0 = r_lo; r0 < r_hi; r0 += kDwAhead) {
      float next[kDwAhead][3];  // rows r0 + 1 + u, loaded together (all in flight at once)
#pragma unroll
      for (int u = 0; u < kDwAhead; ++u)
#pragma unroll
        for (int dj = 0; dj < 3; ++dj)
          next[u][dj] = bn1_relu(src, r0 + 1 + u, j - 1 + dj, h, w, ss);
#pragma unroll
      for (int u = 0; u < kDwAhead; ++u) {
        const int r = r0 + u;
        if (r >= r_hi) break;
        float acc = 0.0f;  // a tap outside the plane adds w * 0: the sum of the in-range taps
#pragma unroll
        for (int di = 0; di < 3; ++di)
#pragma unroll
          for (int dj = 0; dj < 3; ++dj)
            acc = fmaf(wk[di * 3 + dj], di < 2 ? win[di][dj] : next[u][dj], acc);
        dst[r * w + j] = acc;
        if (count++ == 0) pilot = acc;
        const float d = acc - pilot;
        s1 += d;
        s2 = fmaf(d, d, s2);
#pragma unroll
        for (int dj = 0; dj < 3; ++dj) {
          win[0][dj] = win[1][dj];
          win[1][dj] = next[u][dj];
        }
      }
    }
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

// The shuffled inputs of conv3 group grp, for the tile copies: off[k] = channel * plane of
// shuffled input k < cg, zss[k] its BN2 (scale, shift). The caller synchronizes.
template <int kThreads>
__device__ __forceinline__ void stage_group_inputs(const Geometry& g, int grp, const float2* ss2,
                                                   int64_t* off, float2* zss) {
  for (int k = threadIdx.x; k < g.cg; k += kThreads) {
    const int64_t ch = shuffle_source(int64_t{grp} * g.cg + k, g);
    off[k] = ch * g.plane;
    zss[k] = ss2[ch];
  }
}

// ---- D: per-group Gram of (z, 1), z = BN2(d2) over the group's shuffled channels ----
constexpr int kGramTile = 128;  // pixels per tile
constexpr int kGramFold = 16;   // tiles per fp32 partial sum (2,048 pixels), then double

// Columns of the transformed tile: cg values of z, the constant 1, zeros up to a multiple of 4.
__host__ __device__ constexpr int gram_kpad(int cg) {
  return (cg + 1 + 3) / 4 * 4;
}

struct GramSmem {  // gram_kernel's dynamic shared memory
  float* raw;      // [2][cg][kGramTile]: d2 of the current tile and the next (cp.async)
  float* zs;       // [kGramTile][kpad]: the current tile's (z, 1, 0...) per pixel
  int64_t* off;    // [cg]: shuffled input k's channel * plane
  float2* zss;     // [cg]: its BN2 (scale, shift)
  double* red;     // [splits - 1][tiles][16] after the last tile (over raw and zs)
};

__host__ __device__ constexpr size_t gram_smem_bytes(int cg) {
  const int kb = gram_kpad(cg) / 4, tiles = kb * (kb + 1) / 2;
  const int splits = tiles < kSmallThreads ? kSmallThreads / tiles : 1;
  const size_t staged = sizeof(float) * kGramTile * (2 * cg + gram_kpad(cg));
  const size_t tables = (sizeof(int64_t) + sizeof(float2)) * cg;
  const size_t red = sizeof(double) * 16 * static_cast<size_t>(splits - 1) * tiles;
  return (staged > red ? staged : red) + tables;
}

__device__ GramSmem carve_gram(unsigned char* base, int cg) {
  GramSmem m;
  m.raw = reinterpret_cast<float*>(base);
  m.zs = m.raw + 2 * cg * kGramTile;
  m.red = reinterpret_cast<double*>(base);
  const size_t body = gram_smem_bytes(cg) - (sizeof(int64_t) + sizeof(float2)) * cg;
  m.off = reinterpret_cast<int64_t*>(base + body);  // body: a multiple of 8 bytes
  m.zss = reinterpret_cast<float2*>(m.off + cg);
  return m;
}

// Starts the copies of a tile of `rows` channel rows (kGramTile pixels from p0 of one image)
// into dst[rows][kGramTile]: row k is img + row_offset(k). vec: 16-byte copies (plane % 4 == 0),
// else 4-byte ones; pixels past the plane are zero-filled. Thread u of kThreads copies the quads
// u, u + kThreads, ... (its own, for final_kernel's in-place transform): since kThreads is a
// multiple of a row's quads, that is one column quad of rows u / kQuadsPerRow + i kRowStep, so the
// column, its range check and its shared address are worked out once.
template <int kThreads, class RowOffset>
__device__ __forceinline__ void issue_rows_tile(const float* img, int rows, RowOffset row_offset,
                                                int64_t plane, int64_t p0, float* dst, bool vec) {
  constexpr int kQuadsPerRow = kGramTile / 4;
  static_assert(kThreads % kQuadsPerRow == 0, "a thread keeps one column quad");
  constexpr int kRowStep = kThreads / kQuadsPerRow;
  const int j = 4 * (static_cast<int>(threadIdx.x) % kQuadsPerRow);
  const int64_t p = p0 + j;
  const uint32_t sm = static_cast<uint32_t>(__cvta_generic_to_shared(dst + j));
  const int k0 = static_cast<int>(threadIdx.x) / kQuadsPerRow;
  if (vec) {
    const bool in = p < plane;
    const float* src = img + (in ? p : 0);
    for (int k = k0; k < rows; k += kRowStep)
      tf32x3::cp_async_16(sm + 4u * k * kGramTile, src + row_offset(k), in);
    return;
  }
  for (int k = k0; k < rows; k += kRowStep)
#pragma unroll
    for (int u = 0; u < 4; ++u)
      tf32x3::cp_async_4(sm + 4u * (k * kGramTile + u),
                         img + row_offset(k) + (p + u < plane ? p + u : 0), p + u < plane);
}

// Block blockIdx.x's contiguous share [begin, end) of `total` tiles, the grid's blocks in order
// (the Gram and conv1 kernels: each block's tiles are consecutive pixels of one image or two).
struct TileRange {
  int64_t begin, end;
};
__device__ __forceinline__ TileRange block_tile_range(int64_t total) {
  return {total * blockIdx.x / gridDim.x, total * (blockIdx.x + 1) / gridDim.x};
}

// Tile t of a group's shuffled inputs (image t / tiles_per_image) into dst[cg][kGramTile]: row k
// is d2's channel off[k] / plane.
template <int kThreads>
__device__ __forceinline__ void issue_group_tile(const float* d2, const Geometry& g,
                                                 const int64_t* off, float* dst,
                                                 int64_t tiles_per_image, int64_t t, bool vec) {
  const int64_t n = t / tiles_per_image, p0 = (t % tiles_per_image) * kGramTile;
  issue_rows_tile<kThreads>(
      d2 + n * g.mid * g.plane, g.cg, [off](int k) { return off[k]; }, g.plane, p0, dst, vec);
}

// ---- B': conv1 (grouped 1x1) in fp32 FMA with its moments, when the GEMM leaves it out ----
// conv1's dense rows in the GEMM were a fifth m-tile for 120 rows, two thirds of them zeros
// (session 12: the GEMM 2.55 -> 2.03 ms without them).
constexpr int kC1Outs = 5;                           // conv1 outputs per thread (a warp's chunk)
constexpr int kC1WStride = 8;                        // floats per (chunk, k) weight row: 5 used
constexpr int kC1Warps = kSmallThreads / kWarpSize;  // one chunk per warp
constexpr int kC1Tile = kGramTile;                   // pixels per tile: 4 per lane

// conv1_moments_kernel's shared memory: ws[kC1Warps][cin_pg][kC1WStride] (W1 of the group, chunk
// by chunk), xs[2][cin_pg][kC1Tile] (the tile and the next).
__host__ __device__ constexpr size_t conv1_smem_bytes(int64_t cin_pg) {
  return sizeof(float) * static_cast<size_t>(cin_pg) * (kC1Warps * kC1WStride + 2 * kC1Tile);
}

// The fast conv1 takes groups of 21..40 outputs: 5..8 of the 8 warps busy, one chunk each.
__host__ __device__ constexpr bool conv1_fits_warps(int64_t mid_pg) {
  return mid_pg > (kC1Warps - 4) * kC1Outs && mid_pg <= kC1Warps * kC1Outs;
}

// c1[n, grp * cg + o, p] = sum_k w1[grp * cg + o, k] x[n, grp * cin_pg + k, p], and moments1[o']
// += (sum d, sum d^2), d = c1 - shift1[o'] (o' = grp * cg + o). blockIdx.y = grp, blockIdx.x a
// contiguous range of the batch's pixel tiles, each tile's x copied by cp.async one tile ahead.
// Warp w owns outputs [5 w, 5 w + 5) of the group, lane l the tile's pixels [4 l, 4 l + 4): per
// k one LDS.128 of x, a float4 and a float of weights (broadcast), 20 FMA. Moments: fp32 over a
// tile's 4 pixels, double across tiles in registers, one warp sum and atomicAdd per output.
__global__ void __launch_bounds__(kSmallThreads, 2)
    conv1_moments_kernel(const float* __restrict__ x, const float* __restrict__ w1,
                         const float* __restrict__ shift1, Geometry g, int64_t tiles_per_image,
                         bool vec, float* __restrict__ c1, double2* __restrict__ moments1) {
  extern __shared__ float4 c1_smem4[];
  const int grp = blockIdx.y, cg = g.cg;
  const int cin_pg = static_cast<int>(g.c_in / g.groups);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* ws = reinterpret_cast<float*>(c1_smem4);
  float* xs = ws + kC1Warps * cin_pg * kC1WStride;  // a multiple of 8 floats: float4-aligned
  for (int e = threadIdx.x; e < kC1Warps * cin_pg * kC1WStride; e += kSmallThreads) {
    const int i = e % kC1WStride, k = (e / kC1WStride) % cin_pg;
    const int o = e / (kC1WStride * cin_pg) * kC1Outs + i;
    ws[e] = i < kC1Outs && o < cg ? w1[(int64_t{grp} * cg + o) * cin_pg + k] : 0.0f;
  }
  const TileRange range = block_tile_range(g.batch * tiles_per_image);
  const int64_t t_begin = range.begin, t_end = range.end;
  const int64_t c0 = int64_t{grp} * cin_pg;
  const auto issue = [&](int64_t t, float* dst) {
    const int64_t n = t / tiles_per_image;
    issue_rows_tile<kSmallThreads>(
        x + (n * g.c_in + c0) * g.plane, cin_pg, [&](int k) { return k * g.plane; }, g.plane,
        (t % tiles_per_image) * kC1Tile, dst, vec);
  };
  if (t_begin < t_end) issue(t_begin, xs);
  tf32x3::cp_async_commit();

  const int o0 = warp * kC1Outs;  // the warp's first output in the group
  const bool owns = o0 < cg;
  float sh[kC1Outs];
  double m1[kC1Outs], m2[kC1Outs];
#pragma unroll
  for (int i = 0; i < kC1Outs; ++i) {
    sh[i] = o0 + i < cg ? shift1[int64_t{grp} * cg + o0 + i] : 0.0f;
    m1[i] = m2[i] = 0.0;
  }
  const float* wt = ws + warp * cin_pg * kC1WStride;
  int buf = 0;
  for (int64_t t = t_begin; t < t_end; ++t, buf ^= 1) {
    __syncthreads();  // every warp is done with the other buffer (and ws is written)
    if (t + 1 < t_end) issue(t + 1, xs + (buf ^ 1) * cin_pg * kC1Tile);
    tf32x3::cp_async_commit();
    tf32x3::cp_async_wait<1>();  // this thread's copies of tile t have landed
    __syncthreads();             // and everyone's
    if (!owns) continue;
    const float* xt = xs + buf * cin_pg * kC1Tile + 4 * lane;
    float acc[kC1Outs][4];
#pragma unroll
    for (int i = 0; i < kC1Outs; ++i)
#pragma unroll
      for (int u = 0; u < 4; ++u) acc[i][u] = 0.0f;
    const auto step = [&](int k) {
      const float4 xv = *reinterpret_cast<const float4*>(xt + k * kC1Tile);
      const float4 wa = *reinterpret_cast<const float4*>(wt + k * kC1WStride);
      const float wv[kC1Outs] = {wa.x, wa.y, wa.z, wa.w, wt[k * kC1WStride + 4]};
      const float xu[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
      for (int i = 0; i < kC1Outs; ++i)
#pragma unroll
        for (int u = 0; u < 4; ++u) acc[i][u] = fmaf(wv[i], xu[u], acc[i][u]);
    };
    int k = 0;
#pragma unroll 1
    for (; k + 8 <= cin_pg; k += 8)  // whole blocks of 8 fully unrolled: no per-k loop control
#pragma unroll
      for (int u = 0; u < 8; ++u) step(k + u);
#pragma unroll 1
    for (; k < cin_pg; ++k) step(k);
    const int64_t n = t / tiles_per_image, p = (t % tiles_per_image) * kC1Tile + 4 * lane;
    const int in_range = g.plane - p < 4 ? static_cast<int>(g.plane - p) : 4;  // <= 0: none
    float* dst = c1 + (n * g.mid + int64_t{grp} * cg + o0) * g.plane + p;
#pragma unroll
    for (int i = 0; i < kC1Outs; ++i, dst += g.plane) {
      if (o0 + i >= cg) break;
      float s1 = 0.0f, s2 = 0.0f;
      if (vec && in_range == 4) {  // plane % 4 == 0: the quad is all in range or all past it
        *reinterpret_cast<float4*>(dst) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const float d = acc[i][u] - sh[i];
          s1 += d;
          s2 = fmaf(d, d, s2);
        }
      } else {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          if (u >= in_range) break;
          const float d = acc[i][u] - sh[i];
          s1 += d;
          s2 = fmaf(d, d, s2);
          dst[u] = acc[i][u];
        }
      }
      m1[i] += s1;
      m2[i] += s2;
    }
  }
  tf32x3::cp_async_wait<0>();  // nothing in flight at exit
  if (!owns) return;
#pragma unroll
  for (int i = 0; i < kC1Outs; ++i) {
    const double a = cores::warp_sum(m1[i]), b = cores::warp_sum(m2[i]);
    if (lane == 0 && o0 + i < cg) {
      atomicAdd(&moments1[int64_t{grp} * cg + o0 + i].x, a);
      atomicAdd(&moments1[int64_t{grp} * cg + o0 + i].y, b);
    }
  }
}

// gram[grp][k][l] += sum_p z_k z_l, k, l <= cg (z_cg = 1); blockIdx.y = grp, blockIdx.x a
// contiguous range of the batch's pixel tiles. Each tile's d2 is copied by cp.async one tile
// ahead, then transformed into zs (BN2, the constant 1, pixel-major). Thread item = (4 x 4 block
// (a, b) of (k, l) with a <= b: the Gram is symmetric, pixel split): per pixel two LDS.128 and 16
// FMA; fp32 over kGramFold tiles, double across them in registers; splits fold through shared
// memory and each Gram entry gets one double atomicAdd per block (its mirror too when a != b).
// (v1: a block per 2,048-pixel chunk, all 11 x 11 blocks, scalar shared loads, 64-bit division
// per staged element, an atomicAdd per entry, split and chunk: 646 us. v2, the same with
// symmetric float4 blocks and batched register staging: 382 us, waiting on each tile's loads.)
__global__ void __launch_bounds__(kSmallThreads, 2)
    gram_kernel(const float* __restrict__ d2, const float2* __restrict__ ss2, Geometry g,
                int64_t tiles_per_image, bool vec, double* __restrict__ gram) {
  extern __shared__ __align__(16) unsigned char gram_smem[];
  const int grp = blockIdx.y, cg = g.cg, dim = cg + 1, kpad = gram_kpad(cg), nkb = kpad / 4;
  const int tiles = nkb * (nkb + 1) / 2;
  const int splits = max(1, kSmallThreads / tiles), items = tiles * splits;
  const GramSmem m = carve_gram(gram_smem, cg);
  stage_group_inputs<kSmallThreads>(g, grp, ss2, m.off, m.zss);
  __syncthreads();
  const TileRange range = block_tile_range(g.batch * tiles_per_image);
  const int64_t t_begin = range.begin, t_end = range.end;
  double* gm = gram + int64_t{grp} * dim * dim;
  for (int base = 0; base < items; base += kSmallThreads) {  // one round unless tiles > threads
    const int item = base + threadIdx.x, tile = item % tiles, split = item / tiles;
    int a = 0, b = tile;  // tile = (a, b), a <= b, enumerated row by row
    while (b >= nkb - a) b -= nkb - a++;
    b += a;
    double dacc[4][4] = {};
    float acc[4][4] = {};
    const int count = static_cast<int>(t_end - t_begin);
    if (count > 0)
      issue_group_tile<kSmallThreads>(d2, g, m.off, m.raw, tiles_per_image, t_begin, vec);
    tf32x3::cp_async_commit();
    for (int lt = 0; lt < count; ++lt) {
      const int buf = lt & 1;
      if (lt + 1 < count)
        issue_group_tile<kSmallThreads>(d2, g, m.off, m.raw + (buf ^ 1) * cg * kGramTile,
                                        tiles_per_image, t_begin + lt + 1, vec);
      tf32x3::cp_async_commit();
      tf32x3::cp_async_wait<1>();
      __syncthreads();  // tile lt has landed; zs is no longer read
      const int64_t p0 = ((t_begin + lt) % tiles_per_image) * kGramTile;
      const int valid = static_cast<int>(g.plane - p0 < kGramTile ? g.plane - p0 : kGramTile);
      const float* raw = m.raw + buf * cg * kGramTile;
      // Thread e: pixel j's 4 columns from 4k; consecutive threads read consecutive pixels of a
      // row and store 16-byte units kpad / 4 apart (11 at the preset: conflict-free; one value
      // per store was 4-way conflicted, 23% excess shared wavefronts in ncu).
      for (int e = threadIdx.x; e < nkb * kGramTile; e += kSmallThreads) {
        const int k4 = 4 * (e / kGramTile), j = e % kGramTile;
        float v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int k = k4 + i;
          v[i] = 0.0f;
          if (j < valid && k < cg) {
            v[i] = fmaf(raw[k * kGramTile + j], m.zss[k].x, m.zss[k].y);
          } else if (j < valid && k == cg) {
            v[i] = 1.0f;
          }
        }
        *reinterpret_cast<float4*>(m.zs + j * kpad + k4) = make_float4(v[0], v[1], v[2], v[3]);
      }
      __syncthreads();
      if (item < items) {
        for (int j = split; j < valid; j += splits) {
          const float4 za = *reinterpret_cast<const float4*>(m.zs + j * kpad + 4 * a);
          const float4 zb = *reinterpret_cast<const float4*>(m.zs + j * kpad + 4 * b);
          const float va[4] = {za.x, za.y, za.z, za.w}, vb[4] = {zb.x, zb.y, zb.z, zb.w};
#pragma unroll
          for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int u = 0; u < 4; ++u) acc[i][u] = fmaf(va[i], vb[u], acc[i][u]);
        }
      }
      if ((lt + 1) % kGramFold == 0 || lt + 1 == count) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            dacc[i][u] += acc[i][u];
            acc[i][u] = 0.0f;
          }
      }
    }
    __syncthreads();  // the tiles are consumed: red reuses them
    if (item < items && split > 0)
#pragma unroll
      for (int q = 0; q < 16; ++q)
        m.red[((split - 1) * tiles + tile) * 16 + q] = dacc[q / 4][q % 4];
    __syncthreads();
    if (item < items && split == 0) {
      for (int v = 1; v < splits; ++v)
#pragma unroll
        for (int q = 0; q < 16; ++q) dacc[q / 4][q % 4] += m.red[((v - 1) * tiles + tile) * 16 + q];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int k = 4 * a + i, l = 4 * b + u;
          if (k >= dim || l >= dim) continue;
          atomicAdd(&gm[k * dim + l], dacc[i][u]);
          if (a != b) atomicAdd(&gm[l * dim + k], dacc[i][u]);
        }
    }
    __syncthreads();  // red is read before the next round copies tiles over it
  }
}

// BN3 coefficients of conv3 output o = global warp: y = w.z, w = W3[o, :] (cg), over its
// group's Gram; the lanes split the cg^2 terms of w^T G w and the cg of w.E[z] (a thread per
// output walked them in one dependent chain: 136 us).
__global__ void __launch_bounds__(kSmallThreads)
    bn3_coefficients_kernel(const double* __restrict__ gram, const float* __restrict__ w3,
                            Geometry g, BnParams bn, double count, float2* __restrict__ ss3) {
  const int o = (blockIdx.x * kSmallThreads + threadIdx.x) / kWarpSize;  // warp-uniform
  const int lane = threadIdx.x % kWarpSize;
  if (o >= g.c_out) return;
  const int dim = g.cg + 1;
  const double* gm = gram + (o / g.opg) * int64_t{dim} * dim;
  const float* w = w3 + int64_t{o} * g.cg;
  double2 part = make_double2(0.0, 0.0);  // (w.E[z] n, w^T G w) over the lane's terms
  for (int k = lane; k < g.cg; k += kWarpSize) part.x += w[k] * gm[k * dim + g.cg];
  for (int e = lane; e < g.cg * g.cg; e += kWarpSize) {  // independent terms: loads overlap
    const int k = e / g.cg, l = e % g.cg;
    part.y += double{w[k]} * gm[k * dim + l] * w[l];
  }
  part = cores::warp_sum(part);
  if (lane != 0) return;
  const double mean = part.x / count;
  const double var = fmax(part.y / count - mean * mean, 0.0);
  const double s = bn.gamma[o] / sqrt(var + static_cast<double>(bn.eps));
  ss3[o] = make_float2(static_cast<float>(s), static_cast<float>(bn.beta[o] - mean * s));
}

// ---- E: conv3 (fp32 FMA) + BN3 + ReLU + BN_sc(out) + add, in place on out ----
constexpr int kFinalThreads = 320;
constexpr int kFinalTile = 128;  // pixels per tile, one image
static_assert(kFinalTile == kGramTile, "gram_kernel and final_kernel share tiles_per_image");
constexpr int kOutsO = 8, kOutsP = 4;  // outputs per thread item: 8 channels x 4 pixels
constexpr int kQuads = kFinalTile / kOutsP;
static_assert(kFinalThreads % kWarpSize == 0 && kFinalTile % kOutsP == 0, "whole warps, quads");
static_assert(kOutsO == 8 && kOutsP == 4, "the weights are two float4s, the pixels one");

__host__ __device__ constexpr int round_up8(int v) { return (v + 7) / 8 * 8; }

__device__ __forceinline__ float finish(float acc, float2 s3, float raw_sc, float2 ssc) {
  return fmaxf(fmaf(acc, s3.x, s3.y), 0.0f) + fmaf(raw_sc, ssc.x, ssc.y);
}

// out[n, grp * opg + o, p], p in [p0 + 4q, + 4): reads the raw shortcut conv, writes the result.
// The vector path loads all of the item's raw values before its first store (a store to `out`
// would otherwise order each channel's load behind the previous channel's store: one DRAM round
// trip per channel).
__device__ __forceinline__ void finish_item(float* out, const Geometry& g, int64_t n, int grp,
                                            int o0, int64_t p, bool vec, const float2* ss3,
                                            const float2* ss_sc, const float (&acc)[kOutsO][kOutsP]) {
  float* base = out + (n * g.c_out + int64_t{grp} * g.opg + o0) * g.plane + p;
  if (vec) {  // plane % 4 == 0: the quad is all in range or all past the plane
    if (p >= g.plane) return;
    float4 raw[kOutsO];
#pragma unroll
    for (int i = 0; i < kOutsO; ++i)
      raw[i] = o0 + i < g.opg ? *reinterpret_cast<const float4*>(base + i * g.plane)
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int i = 0; i < kOutsO; ++i) {
      if (o0 + i >= g.opg) break;
      const int64_t oc = int64_t{grp} * g.opg + o0 + i;
      const float2 s3 = ss3[oc], ssc = ss_sc[oc];
      const float4 r = raw[i];
      *reinterpret_cast<float4*>(base + i * g.plane) =
          make_float4(finish(acc[i][0], s3, r.x, ssc), finish(acc[i][1], s3, r.y, ssc),
                      finish(acc[i][2], s3, r.z, ssc), finish(acc[i][3], s3, r.w, ssc));
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kOutsO; ++i) {
    if (o0 + i >= g.opg) break;
    const int64_t oc = int64_t{grp} * g.opg + o0 + i;
    const float2 s3 = ss3[oc], ssc = ss_sc[oc];
    float* dst = base + i * g.plane;
#pragma unroll
    for (int u = 0; u < kOutsP; ++u)
      if (p + u < g.plane) dst[u] = finish(acc[i][u], s3, dst[u], ssc);
  }
}

// Persistent over the pixel tiles (n, tile) of group y = grp. Shared: ws[cg][opad] = W3 of
// the group transposed and zero-padded to opad = round_up8(opg), zs[2][cg][kFinalTile]: the
// tile's BN2(d2) and the next tile's d2 in flight (cp.async), off[cg] and zss[cg]: each shuffled
// input's channel offset and BN2 coefficients. Each thread applies BN2 in place to the quads it
// copied. (v1 re-derived the channel per staged element with 64-bit division and waited on each
// tile's loads and on one `out` round trip per channel: 1.33 ms; v2, batched loads: 0.84 ms.)
__global__ void __launch_bounds__(kFinalThreads, 2)
    final_kernel(const float* __restrict__ d2, const float2* __restrict__ ss2,
                 const float* __restrict__ w3, const float2* __restrict__ ss3,
                 const float2* __restrict__ ss_sc, Geometry g, int64_t tiles_per_image, bool vec,
                 float* __restrict__ out) {
  extern __shared__ float4 smem4[];
  const int grp = blockIdx.y, opad = round_up8(g.opg), cg = g.cg;
  float* ws = reinterpret_cast<float*>(smem4);
  float* zbuf = ws + cg * opad;  // cg * opad is a multiple of 8: float4-aligned
  int64_t* off = reinterpret_cast<int64_t*>(zbuf + 2 * cg * kFinalTile);
  float2* zss = reinterpret_cast<float2*>(off + cg);
  for (int e = threadIdx.x; e < cg * opad; e += kFinalThreads) {
    const int k = e / opad, o = e % opad;
    ws[e] = o < g.opg ? w3[(int64_t{grp} * g.opg + o) * cg + k] : 0.0f;
  }
  stage_group_inputs<kFinalThreads>(g, grp, ss2, off, zss);
  __syncthreads();
  const int items = (opad / kOutsO) * kQuads;
  const int64_t total = g.batch * tiles_per_image;
  if (blockIdx.x < total)
    issue_group_tile<kFinalThreads>(d2, g, off, zbuf, tiles_per_image, blockIdx.x, vec);
  tf32x3::cp_async_commit();
  int buf = 0;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x, buf ^= 1) {
    const int64_t n = t / tiles_per_image, p0 = (t % tiles_per_image) * kFinalTile;
    float* zs = zbuf + buf * cg * kFinalTile;
    __syncthreads();  // the previous tile's readers are done with the other buffer
    if (t + gridDim.x < total)
      issue_group_tile<kFinalThreads>(d2, g, off, zbuf + (buf ^ 1) * cg * kFinalTile,
                                      tiles_per_image, t + gridDim.x, vec);
    tf32x3::cp_async_commit();
    tf32x3::cp_async_wait<1>();  // this thread's copies of tile t have landed
    constexpr int kQuadsPerRow = kFinalTile / 4;
    for (int q = threadIdx.x; q < cg * kQuadsPerRow; q += kFinalThreads) {
      const int64_t p = p0 + 4 * (q % kQuadsPerRow);
      const float2 ss = zss[q / kQuadsPerRow];
      float4* z4 = reinterpret_cast<float4*>(zs) + q;
      const float4 v = *z4;
      *z4 = make_float4(p < g.plane ? fmaf(v.x, ss.x, ss.y) : 0.0f,
                        p + 1 < g.plane ? fmaf(v.y, ss.x, ss.y) : 0.0f,
                        p + 2 < g.plane ? fmaf(v.z, ss.x, ss.y) : 0.0f,
                        p + 3 < g.plane ? fmaf(v.w, ss.x, ss.y) : 0.0f);
    }
    __syncthreads();
    for (int item = threadIdx.x; item < items; item += kFinalThreads) {
      const int o0 = (item / kQuads) * kOutsO, q = item % kQuads;
      float acc[kOutsO][kOutsP] = {};
      const auto step = [&](int k) {
        const float4 z = *reinterpret_cast<const float4*>(zs + k * kFinalTile + kOutsP * q);
        const float4 wa = *reinterpret_cast<const float4*>(ws + k * opad + o0);
        const float4 wb = *reinterpret_cast<const float4*>(ws + k * opad + o0 + 4);
        const float wv[kOutsO] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
        const float zv[kOutsP] = {z.x, z.y, z.z, z.w};
#pragma unroll
        for (int i = 0; i < kOutsO; ++i)
#pragma unroll
          for (int u = 0; u < kOutsP; ++u) acc[i][u] = fmaf(wv[i], zv[u], acc[i][u]);
      };
      int k = 0;
#pragma unroll 1
      for (; k + 8 <= cg; k += 8)  // blocks of 8 unrolled: less loop control per FMA
#pragma unroll
        for (int u = 0; u < 8; ++u) step(k + u);
#pragma unroll 1
      for (; k < cg; ++k) step(k);
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
    if (conv1_fast_) {
      conv1_moments_kernel<<<dim3(conv1_blocks_, static_cast<unsigned>(g.groups)), kSmallThreads,
                             conv1_smem_, stream>>>(
          x, param(args, w1_), shift_ + g.c_out, g, tiles_per_image_,
          g.plane % 4 == 0 && is_aligned16(x), c1_, moments_ + g.c_out);
      KB_CUDA_TRY(cudaGetLastError());
    }
    bn_coefficients_kernel<<<blocks_for(m_), kSmallThreads, 0, stream>>>(
        moments_, shift_, m_, static_cast<int>(g.c_out), bn(args, kShortcut), bn(args, kBn1),
        count, ss_cat_);
    KB_CUDA_TRY(cudaGetLastError());
    dwconv_moments_kernel<<<dw_blocks_, kSmallThreads, 0, stream>>>(
        c1_, ss_cat_ + g.c_out, param(args, w2_), g, dw_bands_, d2_, moments2_);
    KB_CUDA_TRY(cudaGetLastError());
    const int mid = static_cast<int>(g.mid);
    bn_coefficients_kernel<<<blocks_for(mid), kSmallThreads, 0, stream>>>(
        moments2_, nullptr, mid, mid, bn(args, kBn2), bn(args, kBn2), count, ss2_);
    KB_CUDA_TRY(cudaGetLastError());
    gram_kernel<<<dim3(gram_blocks_, static_cast<unsigned>(g.groups)), kSmallThreads, gram_smem_,
                  stream>>>(d2_, ss2_, g, tiles_per_image_, g.plane % 4 == 0, gram_);
    KB_CUDA_TRY(cudaGetLastError());
    bn3_coefficients_kernel<<<blocks_for(g.c_out * kWarpSize), kSmallThreads, 0, stream>>>(
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
    for (auto kernel : {tf32x3_conv1x1_moments_kernel<true>, tf32x3_conv1x1_moments_kernel<false>})
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       kSmemBytes));
    // conv1 on its own kernel when a group's outputs fill its warps and the tiles fit; else as
    // dense rows of the GEMM.
    conv1_smem_ = conv1_smem_bytes(g_.c_in / g_.groups);
    conv1_fast_ = conv1_fits_warps(g_.cg) && conv1_smem_ <= static_cast<size_t>(optin);
    gemm_m_ = conv1_fast_ ? static_cast<int>(g_.c_out) : m_;
    tiles_m_ = (gemm_m_ + kBM - 1) / kBM;
    const int64_t gemm_x = tiles_m_ * ((g_.plane + kBN - 1) / kBN);
    prep_blocks_ = static_cast<int>(std::clamp<int64_t>((m_ * g_.c_in + 255) / 256, 1, sms * 8));
    dw_bands_ = static_cast<int>((g_.h + kDwRows - 1) / kDwRows);
    const int64_t dw_blocks = g_.batch * g_.mid * dw_bands_;
    gram_smem_ = gram_smem_bytes(g_.cg);
    if (gemm_x > INT_MAX || dw_blocks > INT_MAX || g_.groups > 65535 ||
        gram_smem_ > static_cast<size_t>(optin))
      return Status::failed_precondition("L3_025 custom: problem too large for the grids");
    gemm_blocks_ = static_cast<unsigned>(gemm_x);
    dw_blocks_ = static_cast<unsigned>(dw_blocks);
    tiles_per_image_ = (g_.plane + kFinalTile - 1) / kFinalTile;  // the Gram's and conv1's too
    KB_ASSIGN_OR_RETURN(
        gram_blocks_,
        group_column_blocks(reinterpret_cast<const void*>(gram_kernel), kSmallThreads, gram_smem_));
    if (conv1_fast_) {
      KB_ASSIGN_OR_RETURN(conv1_blocks_,
                          group_column_blocks(reinterpret_cast<const void*>(conv1_moments_kernel),
                                              kSmallThreads, conv1_smem_));
    }
    final_smem_ =
        static_cast<size_t>(g_.cg) *
        ((round_up8(g_.opg) + 2 * kFinalTile) * sizeof(float) + sizeof(int64_t) + sizeof(float2));
    final_fast_ = final_smem_ <= static_cast<size_t>(optin);
    if (final_fast_) {
      KB_ASSIGN_OR_RETURN(final_blocks_,
                          group_column_blocks(reinterpret_cast<const void*>(final_kernel),
                                              kFinalThreads, final_smem_));
    }
    generic_blocks_ = static_cast<unsigned>(sms * 8);
    return Status::ok();
  }

  // Blocks per group of a persistent kernel whose grid is (blocks, G) over the batch's pixel tiles
  // (tiles_per_image_ set): as many as are resident at once, at most one per tile. Raises the
  // kernel's shared-memory limit to `smem`.
  Result<unsigned> group_column_blocks(const void* kernel, int threads, size_t smem) const {
    KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(smem)));
    KB_ASSIGN_OR_RETURN(const int64_t resident, cuda::resident_blocks(kernel, threads, smem));
    return static_cast<unsigned>(
        std::clamp<int64_t>(resident / g_.groups, 1, g_.batch * tiles_per_image_));
  }

  Status launch_gemm(const float* x, float* out, cudaStream_t stream) {
    const GemmArgs a{wcat_,
                     x,
                     out,
                     c1_,
                     shift_,
                     moments_,
                     gemm_m_,
                     static_cast<int>(g_.plane),
                     static_cast<int>(g_.c_in),
                     static_cast<int>(g_.c_out),
                     tiles_m_};
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
  int gemm_m_ = 0;                             // the GEMM's rows: C_out, or m_ when conv1 is in it
  bool conv1_fast_ = false;                    // conv1_moments_kernel runs conv1
  size_t conv1_smem_ = 0;
  unsigned conv1_blocks_ = 1;
  size_t x_ = 0, w1_ = 0, w2_ = 0, w3_ = 0, w_sc_ = 0;
  size_t gamma_[kNorms] = {}, beta_[kNorms] = {};
  float eps_[kNorms] = {};
  int dw_bands_ = 1;
  int64_t tiles_per_image_ = 1, acc_doubles_ = 0;
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
