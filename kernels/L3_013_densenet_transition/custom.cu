// L3_013 custom: DenseNet121 transition = BatchNorm2d (training mode) -> ReLU -> 1x1 conv (no
// bias) -> AvgPool2d(2, 2), floor mode.
//   x: (N, C_in, H, W), W1: (C_out, C_in, 1, 1), out: (N, C_out, H / 2, W / 2), all fp32 NCHW.
//   out[n,o,i,j] = sum_c (W1[o,c] / 4) * sum_{a,b in {0,1}} relu(x[n,c,2i+a,2j+b] * s_c + t_c),
//   s_c = gamma_c / sqrt(var_c + eps), t_c = beta_c - mean_c * s_c (batch mean, biased var).
//
// Cost (full preset 128 x 32 x 256 x 256 -> 128 x 64 x 128 x 128, docs/problems.md#l3_013): pooling
// before the 1x1 conv is exact (both linear): 4.3 GFMA instead of 17.2. Bytes: 2 reads of x + 1
// write = 2.68 GB -> realistic floor 0.62 ms (ideal 1.61 GB, 0.375 ms, is out of reach: the batch
// statistics need a full pass first); fp32 floor as written 0.553 ms. Reference 6.69 ms (9.16 ms in
// bench 2026-12-02b), best strict-fp32 peer 5.58 ms (torch.compile, docs/baselines.md), goal <=
// 0.88 ms (1.6 x the floor).
//
// Design (three launches, no atomics, deterministic for a given device):
//  1. plane_moments_kernel: block = (plane (n, c), chunk of kStatsChunk elements), 16-byte loads;
//     sums of d = x - K_c and d^2, K_c = x[0, c, 0, 0] (shifted data: no cancellation when the
//     mean is large next to the spread); fp32 over 16 elements, then double, fixed-order tree.
//  2. bn_coefficients_kernel: one block per channel sums its partials in double -> (s_c, t_c).
//  3. transition_tiles_kernel (C_in <= 32, C_out <= 64, aligned pointers): persistent grid over
//     tiles of 64 pooled columns of one pooled row (n, i). Each thread issues 8 float4 loads (2
//     rows x 4 channels; 4 guarded scalar loads each when W % 4 != 0) at once, BN + ReLU + 2x2
//     sum into shared act[c][j]; then a 32 x 64 x 64 register-tiled product with W1 / 4 (staged
//     once per block; 4 x 4 outputs per thread, 2 LDS.128 per 16 FMA) and 16-byte streaming
//     stores (8-byte or scalar when the pooled width is not a multiple of 4). Tiles run last
//     first, so the part of x that pass 1 left in L2 is read first. Other shapes:
//     transition_generic_kernel. (Odd widths took the generic kernel until the shape sweep
//     measured it at 1.06x the reference, N 96, C 30 -> 51, 197 x 157.)
//
// Predicted on the H200: pass 1 ~0.27 ms (1.07 GB), pass 2 ~0.41 ms (1.61 GB, ~190 us of issue
// hidden under it), ~5 us for the coefficients and launch gaps: ~0.69 ms. Measured: 0.686 ms
// (v1, docs/kernels.md; 2.35 TB/s on the 2.68 GB, 1.1x the realistic floor), 0.690 ms in
// docs/bench-h200-2026-12-02b.json: under the 0.88 ms goal. Shape sweep (docs/kernels.md): odd
// widths now take the tile kernel, 7.2x the reference at worst.
//
// Accuracy: the batch statistics are shifted sums (d = x - K_c, K_c a sample of the channel), so
// E[d^2] - E[d]^2 keeps its digits however large |mean| / std is; fp32 covers 16 elements,
// everything above is double in a fixed order; s_c, t_c are formed in double (IEEE sqrt) and
// rounded to fp32 once. BN + ReLU, the 2x2 sum and the 1x1 product (W1 / 4, exact) are fp32 FMA (no
// TF32: it fails 3x, no fast intrinsics); pooling before the conv reorders the sums (exact in real
// arithmetic). x s_c + t_c in fp32 cancels when |mean| >> sigma: its rounding, ~2^-24 |x| s_c,
// grows with |mean| / sigma, as in the fp32 reference (the shift trial below). Measured max |err|
// 7.2e-7 (2026-11-30) and 1.4e-6 (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials
// (small preset, seed 7, vs the golden model): shift (x + 100) 0.16x the tolerance (the reference
// 0.23x), scale (x 1000) 0.002x (0.002x), centered 0.002x (0.001x), random_affine (gamma, beta)
// 0.002x (0.002x).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L3_013 {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kWarps = kThreads / kWarp;
static_assert(kThreads % kWarp == 0, "whole warps");

// ---- Pass 1: per-channel moments of d = x - K_c ----

constexpr int64_t kStatsChunk = 16384;  // elements of one (n, c) plane per stats block
constexpr int kStatsUnroll = 4;         // float4 loads in flight per thread
static_assert(kStatsChunk % 4 == 0, "chunks start on a float4 boundary");

__device__ __forceinline__ void add_moments(float v, float k, float& s1, float& s2) {
  const float d = v - k;
  s1 += d;
  s2 = fmaf(d, d, s2);
}

__device__ __forceinline__ void add_moments4(const float4& v, float k, float& s1, float& s2) {
  add_moments(v.x, k, s1, s2);
  add_moments(v.y, k, s1, s2);
  add_moments(v.z, k, s1, s2);
  add_moments(v.w, k, s1, s2);
}

// Moments of this thread's float4s in [lo4, hi4) of x4.
__device__ double2 vector_moments(const float4* x4, int64_t lo4, int64_t hi4, float k) {
  double2 m = make_double2(0.0, 0.0);
  int64_t i = lo4 + threadIdx.x;
  for (; i + (kStatsUnroll - 1) * kThreads < hi4; i += kStatsUnroll * kThreads) {
    float4 v[kStatsUnroll];
#pragma unroll
    for (int u = 0; u < kStatsUnroll; ++u) v[u] = x4[i + u * kThreads];
    float s1 = 0.0f, s2 = 0.0f;  // 16 elements in fp32, then into the doubles
#pragma unroll
    for (int u = 0; u < kStatsUnroll; ++u) add_moments4(v[u], k, s1, s2);
    m.x += s1;
    m.y += s2;
  }
  for (; i < hi4; i += kThreads) {
    float s1 = 0.0f, s2 = 0.0f;
    add_moments4(x4[i], k, s1, s2);
    m.x += s1;
    m.y += s2;
  }
  return m;
}

// partials[b] = (sum d, sum d^2) over chunk b % chunks of plane b / chunks (plane = n * C + c),
// d = x - x[0, c, 0, 0]. vec: plane size % 4 == 0 and x 16-byte aligned.
__global__ void __launch_bounds__(kThreads)
    plane_moments_kernel(const float* __restrict__ x, int channels, int64_t plane_size,
                         int64_t chunks, bool vec, double2* __restrict__ partials) {
  const int64_t b = blockIdx.x, plane = b / chunks;
  const int64_t lo = (b % chunks) * kStatsChunk, hi = min(plane_size, lo + kStatsChunk);
  const float k = x[(plane % channels) * plane_size];
  const float* xp = x + plane * plane_size;
  double2 m = make_double2(0.0, 0.0);
  if (vec) {
    m = vector_moments(reinterpret_cast<const float4*>(xp), lo / 4, hi / 4, k);
  } else {
    for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads) {
      const double d = xp[i] - k;
      m = make_double2(m.x + d, fma(d, d, m.y));
    }
  }
  m = cores::block_sum<kThreads>(m);  // in thread 0, fixed order
  if (threadIdx.x == 0) partials[b] = m;
}

// scale_shift[c] = (s_c, t_c) from the batch statistics of channel c = blockIdx.x.
__global__ void __launch_bounds__(kThreads)
    bn_coefficients_kernel(const double2* __restrict__ partials, const float* __restrict__ x,
                           int64_t batch, int channels, int64_t plane_size, int64_t chunks,
                           const float* __restrict__ gamma, const float* __restrict__ beta,
                           float eps, float2* __restrict__ scale_shift) {
  const int c = blockIdx.x;
  double2 m = make_double2(0.0, 0.0);
  for (int64_t r = threadIdx.x; r < batch * chunks; r += kThreads) {
    const double2 p = partials[((r / chunks) * channels + c) * chunks + r % chunks];
    m.x += p.x;
    m.y += p.y;
  }
  m = cores::block_sum<kThreads>(m);  // in thread 0, fixed order
  if (threadIdx.x != 0) return;
  const double count = static_cast<double>(batch) * static_cast<double>(plane_size);
  const double mean_d = m.x / count;
  const double var = fmax(m.y / count - mean_d * mean_d, 0.0);  // biased, like training BN
  const double mean = static_cast<double>(x[c * plane_size]) + mean_d;
  const double s = static_cast<double>(gamma[c]) / sqrt(var + static_cast<double>(eps));
  scale_shift[c] = make_float2(static_cast<float>(s), static_cast<float>(beta[c] - mean * s));
}

// ---- Pass 2: BN + ReLU + 2x2 average pool + 1x1 conv ----

struct Geometry {
  int64_t batch, c_in, c_out, h, w, ho, wo;
  int64_t plane, out_plane;  // h * w, ho * wo
  int tiles_per_row, tiles;  // fast path only (tiles < 2^31: 32-bit tile decoding)
};

__device__ __forceinline__ float bn_relu(float v, float2 ss) {
  return fmaxf(fmaf(v, ss.x, ss.y), 0.0f);
}

constexpr int kTileCin = 32;            // input channels a tile holds (C_in <= 32)
constexpr int kTileCout = 64;           // output channels a tile computes (C_out <= 64)
constexpr int kTileJ = 64;              // pooled columns of a tile, in one pooled row
constexpr int kTileQuads = kTileJ / 2;  // input float4 columns of a tile: one per lane
constexpr int kChansPerWarp = kTileCin / kWarps;
constexpr int kOutO = 4, kOutJ = 4;  // outputs per thread: 4 channels x 4 columns
constexpr int kTileBlocksPerSm = 4;  // occupancy target (64 registers per thread)
static_assert(kTileQuads == kWarp, "one lane per input float4 column");
static_assert(kTileCin % kWarps == 0, "whole channels per warp");
static_assert((kTileCout / kOutO) * (kTileJ / kOutJ) == kThreads, "one 4x4 block per thread");
static_assert(kTileJ / kOutJ == 16 && kTileCout / kOutO == 16, "multiply_and_store's 16x16 map");

struct TileSmem {
  float4 w[kTileCin][kTileCout / 4];  // W1[o][c] / 4 at [c][o / 4]
  float4 act[kTileCin][kTileJ / 4];   // pooled relu(bn(x)) at [c][j / 4]
  float2 bn[kTileCin];                // (s_c, t_c); zero for c >= C_in
};

// Stages W1 / 4 (exact: a power of two) and the BN coefficients, zero-padded to the tile.
// Shared memory is written with the types it is read with (no float / float4 punning).
__device__ void stage_parameters(const float* weight, const float2* scale_shift, const Geometry& g,
                                 TileSmem& s) {
  constexpr int kQuadsO = kTileCout / 4;
  for (int e = threadIdx.x; e < kTileCin * kQuadsO; e += kThreads) {
    const int c = e / kQuadsO, o = 4 * (e % kQuadsO);
    float v[4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
      v[r] = c < g.c_in && o + r < g.c_out ? 0.25f * weight[(o + r) * g.c_in + c] : 0.0f;
    s.w[c][e % kQuadsO] = make_float4(v[0], v[1], v[2], v[3]);
  }
  for (int c = threadIdx.x; c < kTileCin; c += kThreads)
    s.bn[c] = c < g.c_in ? scale_shift[c] : make_float2(0.0f, 0.0f);
}

// A tile of the fast path: pooled row i of image n, pooled columns [j_base, j_base + kTileJ).
struct Tile {
  int n, i, j_base;
};

// Tiles run last first: pass 1 left the end of x in L2.
__device__ __forceinline__ Tile tile_at(int t, const Geometry& g) {
  const int tile = g.tiles - 1 - t, row = tile / g.tiles_per_row;  // row = n * ho + i
  const int ho = static_cast<int>(g.ho);
  return Tile{row / ho, row % ho, (tile % g.tiles_per_row) * kTileJ};
}

// act[c][2q .. 2q+1] for lane q and this warp's channels: rows 2i, 2i+1, input columns
// j_base * 2 + 4q .. +3. All 8 loads are issued before the first use; even lanes store their
// pair and their odd neighbour's as one float4.
__device__ void load_activations(const float* x, const Geometry& g, const Tile& tile, TileSmem& s) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int quad = tile.j_base / 2 + lane;
  // The first pooled column 2 quad exists; the second may not when wo is odd (its inputs past W
  // read as zeros, its value is never stored).
  const bool col_ok = 2 * quad < g.wo;
  const bool vec = g.w % 4 == 0;
  // x[n, warp, 2i, 4 quad]; channel warp + k * kWarps is k * kWarps planes further.
  const float* src = x + (tile.n * g.c_in + warp) * g.plane + 2 * tile.i * g.w + 4 * quad;
  float4 top[kChansPerWarp], bottom[kChansPerWarp];
#pragma unroll
  for (int k = 0; k < kChansPerWarp; ++k) {
    top[k] = bottom[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (col_ok && warp + k * kWarps < g.c_in) {
      const float* p = src + k * kWarps * g.plane;
      if (vec) {
        top[k] = __ldcs(reinterpret_cast<const float4*>(p));
        bottom[k] = __ldcs(reinterpret_cast<const float4*>(p + g.w));
      } else {
        const int64_t left = g.w - 4 * int64_t{quad};  // >= 2: column 4 quad + 1 < 2 wo <= W
        top[k] = make_float4(__ldcs(p), __ldcs(p + 1), left > 2 ? __ldcs(p + 2) : 0.0f,
                             left > 3 ? __ldcs(p + 3) : 0.0f);
        const float* q = p + g.w;
        bottom[k] = make_float4(__ldcs(q), __ldcs(q + 1), left > 2 ? __ldcs(q + 2) : 0.0f,
                                left > 3 ? __ldcs(q + 3) : 0.0f);
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kChansPerWarp; ++k) {
    const int c = warp + k * kWarps;
    const float2 ss = s.bn[c];
    const float4 t = top[k], b = bottom[k];
    float2 pooled;
    pooled.x = (bn_relu(t.x, ss) + bn_relu(t.y, ss)) + (bn_relu(b.x, ss) + bn_relu(b.y, ss));
    pooled.y = (bn_relu(t.z, ss) + bn_relu(t.w, ss)) + (bn_relu(b.z, ss) + bn_relu(b.w, ss));
    if (!col_ok) pooled = make_float2(0.0f, 0.0f);
    const float next_x = __shfl_down_sync(0xffffffffu, pooled.x, 1);
    const float next_y = __shfl_down_sync(0xffffffffu, pooled.y, 1);
    if (lane % 2 == 0) s.act[c][lane / 2] = make_float4(pooled.x, pooled.y, next_x, next_y);
  }
}

__device__ __forceinline__ void store_row(float* dst, int j0, int64_t wo, const float4& v) {
  if (wo % 4 == 0) {
    if (j0 < wo) __stcs(reinterpret_cast<float4*>(dst), v);
    return;
  }
  if (wo % 2 == 0) {
    // wo % 4 == 2: rows are 8-byte aligned only; j0 is even, so j0 < wo covers j0 + 1.
    if (j0 < wo) __stcs(reinterpret_cast<float2*>(dst), make_float2(v.x, v.y));
    if (j0 + 2 < wo) __stcs(reinterpret_cast<float2*>(dst + 2), make_float2(v.z, v.w));
    return;
  }
  const float e[4] = {v.x, v.y, v.z, v.w};  // odd wo: rows 4-byte aligned
#pragma unroll
  for (int u = 0; u < 4; ++u)
    if (j0 + u < wo) __stcs(dst + u, e[u]);
}

// out[n, 4 og + r, i, j_base + 4 jg + u] = sum_c w[c][4 og + r] * act[c][4 jg + u]. A warp
// covers 8 column groups x 4 channel groups: one shared-memory wavefront per operand per step.
__device__ void multiply_and_store(const TileSmem& s, const Geometry& g, const Tile& tile,
                                   float* out) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int jg = (warp % 2) * 8 + lane % 8, og = (warp / 2) * 4 + lane / 8;
  float acc[kOutO][kOutJ] = {};
#pragma unroll
  for (int c = 0; c < kTileCin; ++c) {
    const float4 a = s.act[c][jg], w = s.w[c][og];
    const float wv[kOutO] = {w.x, w.y, w.z, w.w}, av[kOutJ] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int r = 0; r < kOutO; ++r) {
#pragma unroll
      for (int u = 0; u < kOutJ; ++u) acc[r][u] = fmaf(wv[r], av[u], acc[r][u]);
    }
  }
  const int j0 = tile.j_base + kOutJ * jg;
  // out[n, 4 og, i, j0]; channel 4 og + r is r planes further.
  float* dst = out + (tile.n * g.c_out + kOutO * og) * g.out_plane + tile.i * g.wo + j0;
#pragma unroll
  for (int r = 0; r < kOutO; ++r) {
    if (kOutO * og + r >= g.c_out) break;
    store_row(dst + r * g.out_plane, j0, g.wo,
              make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
  }
}

// Persistent grid over the tiles (n, i, tile_col); x and out 16-byte aligned.
__global__ void __launch_bounds__(kThreads, kTileBlocksPerSm)
    transition_tiles_kernel(const float* __restrict__ x, const float2* __restrict__ scale_shift,
                            const float* __restrict__ weight, Geometry g, float* __restrict__ out) {
  __shared__ TileSmem s;
  stage_parameters(weight, scale_shift, g, s);
  __syncthreads();
  for (int t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    const Tile tile = tile_at(t, g);
    load_activations(x, g, tile, s);
    __syncthreads();
    multiply_and_store(s, g, tile, out);
    __syncthreads();  // the next tile rewrites s.act
  }
}

// Any shape: one thread per output element (grid-stride).
__global__ void __launch_bounds__(kThreads)
    transition_generic_kernel(const float* __restrict__ x, const float2* __restrict__ scale_shift,
                              const float* __restrict__ weight, Geometry g,
                              float* __restrict__ out) {
  const int64_t total = g.batch * g.c_out * g.ho * g.wo;
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    const int64_t j = e % g.wo, i = (e / g.wo) % g.ho, o = (e / (g.wo * g.ho)) % g.c_out;
    const int64_t n = e / (g.wo * g.ho * g.c_out);
    float acc = 0.0f;
    for (int64_t c = 0; c < g.c_in; ++c) {
      const float2 ss = scale_shift[c];
      const float* p = x + ((n * g.c_in + c) * g.h + 2 * i) * g.w + 2 * j;
      const float a =
          (bn_relu(p[0], ss) + bn_relu(p[1], ss)) + (bn_relu(p[g.w], ss) + bn_relu(p[g.w + 1], ss));
      acc = fmaf(weight[o * g.c_in + c], a, acc);
    }
    out[e] = 0.25f * acc;
  }
}

// ---- Host side ----

bool is_aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

class DenseNetTransition final : public Implementation {
 public:
  ~DenseNetTransition() override {
    KB_CUDA_WARN(cudaFree(partials_));
    KB_CUDA_WARN(cudaFree(scale_shift_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    KB_TRY(check_layers(p));
    x_ = input_index(p, "x");
    gamma_ = param_index(p, "transition.0.weight");
    beta_ = param_index(p, "transition.0.bias");
    weight_ = param_index(p, "transition.2.weight");
    eps_ = static_cast<float>(p.number("transition.0", "eps"));
    const Shape& xs = p.shape_of("x");   // (N, C_in, H, W)
    const Shape& os = p.output_shape();  // (N, C_out, H / 2, W / 2)
    g_ = Geometry{xs[0], xs[1], os[1], xs[2], xs[3], os[2], os[3], 0, 0, 0, 0};
    g_.plane = g_.h * g_.w;
    g_.out_plane = g_.ho * g_.wo;
    chunks_ = (g_.plane + kStatsChunk - 1) / kStatsChunk;
    stats_blocks_ = g_.batch * g_.c_in * chunks_;
    if (stats_blocks_ > INT_MAX || g_.c_in > INT_MAX)
      return Status::failed_precondition("L3_013 custom: x too large for the statistics grid");
    KB_TRY(plan_grids());
    KB_CUDA_TRY(cudaMalloc(&partials_, stats_blocks_ * sizeof(double2)));
    KB_CUDA_TRY(cudaMalloc(&scale_shift_, g_.c_in * sizeof(float2)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;  // (N, C_in, H, W)
    float* out = args.output.data;          // (N, C_out, H / 2, W / 2)
    const bool vec = g_.plane % 4 == 0 && is_aligned16(x);
    plane_moments_kernel<<<static_cast<unsigned>(stats_blocks_), kThreads, 0, stream>>>(
        x, static_cast<int>(g_.c_in), g_.plane, chunks_, vec, partials_);
    KB_CUDA_TRY(cudaGetLastError());
    bn_coefficients_kernel<<<static_cast<unsigned>(g_.c_in), kThreads, 0, stream>>>(
        partials_, x, g_.batch, static_cast<int>(g_.c_in), g_.plane, chunks_,
        args.params[gamma_].data, args.params[beta_].data, eps_, scale_shift_);
    KB_CUDA_TRY(cudaGetLastError());
    const float* weight = args.params[weight_].data;  // (C_out, C_in, 1, 1)
    if (fast_shape_ && is_aligned16(x) && is_aligned16(out)) {
      transition_tiles_kernel<<<tile_blocks_, kThreads, 0, stream>>>(x, scale_shift_, weight, g_,
                                                                     out);
    } else {
      transition_generic_kernel<<<generic_blocks_, kThreads, 0, stream>>>(x, scale_shift_, weight,
                                                                          g_, out);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  // The spec fixes these; the kernels assume them.
  static Status check_layers(const ProblemInstance& p) {
    const std::vector<int64_t> two{2, 2}, one{1, 1}, zero{0, 0};
    const bool ok =
        p.ints("transition.3", "kernel_size") == two && p.ints("transition.3", "stride") == two &&
        p.ints("transition.3", "padding") == zero && p.ints("transition.2", "stride") == one &&
        p.ints("transition.2", "padding") == zero && p.ints("transition.2", "dilation") == one &&
        p.int_attr("transition.2", "groups") == 1;
    return ok ? Status::ok()
              : Status::failed_precondition("L3_013 custom: needs a 1x1 conv and a 2x2/2 pool");
  }

  Status plan_grids() {
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    KB_ASSIGN_OR_RETURN(
        const int64_t resident,
        cuda::resident_blocks(reinterpret_cast<const void*>(transition_tiles_kernel), kThreads, 0));
    const int64_t tiles_per_row = (g_.wo + kTileJ - 1) / kTileJ;
    const int64_t tiles = g_.batch * g_.ho * tiles_per_row;
    fast_shape_ = g_.c_in <= kTileCin && g_.c_out <= kTileCout && tiles <= INT_MAX;
    g_.tiles_per_row = fast_shape_ ? static_cast<int>(tiles_per_row) : 0;
    g_.tiles = fast_shape_ ? static_cast<int>(tiles) : 0;
    tile_blocks_ = static_cast<int>(std::clamp<int64_t>(tiles, 1, resident));
    const int64_t outputs = g_.batch * g_.c_out * g_.ho * g_.wo;
    generic_blocks_ = static_cast<int>(
        std::clamp<int64_t>((outputs + kThreads - 1) / kThreads, 1, int64_t{sms} * 8));
    return Status::ok();
  }

  size_t x_ = 0, gamma_ = 0, beta_ = 0, weight_ = 0;
  float eps_ = 0.0f;
  Geometry g_{};
  int64_t chunks_ = 1, stats_blocks_ = 1;
  bool fast_shape_ = false;
  int tile_blocks_ = 1, generic_blocks_ = 1;
  double2* partials_ = nullptr;    // [N * C_in * chunks_] (sum d, sum d^2); owned
  float2* scale_shift_ = nullptr;  // [C_in] (s_c, t_c); owned
};

}  // namespace kb::custom::L3_013

KB_REGISTER_IMPLEMENTATION(L3_013, custom, kb::custom::L3_013::DenseNetTransition)
