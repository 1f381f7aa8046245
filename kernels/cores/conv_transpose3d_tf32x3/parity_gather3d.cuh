// A transposed convolution of rank 1 to 3 (groups 1) as one implicit GEMM per output phase class,
// in error-compensated TF32 (3xTF32) on mma.sync m16n8k8, gathering its A operand per tap. Used by
// the custom variant of L1_073, where it measured faster (2.12 ms) than the patch kernel of
// parity_gemm3d.cuh (2.68 ms; that one took L1_070 from 14.2 to 9.8 ms): L1_073's classes have
// only 1-8 taps, too few to amortize a patch per chunk. Layers it cannot take run the generic
// gather of ../conv_transpose_gather.
//
// Math: the phases and classes of parity_axes.h (unit axes for rank < 3; 0 to 27 taps per
// class):
//   y[n, co, o] = sum_{tap in T_c, ci} x[n, ci, q - j(tap)] * w[ci, co, t(tap)]
// So, per class, A (M x K): m = (n, q_d, q_h, q_w) over every q that reaches the output in some
// phase, k = (tap, ci); B_c (K x C_out) packed per call (weights are call inputs), zero past C_in
// and C_out. Inputs outside x are zero-filled copies; (q, r) outside the output is not stored.
//
// Tiles (Tiles<kWM, kNT>): CTA 8 kWM (m) x kN (n = 8 kNT: 24 or 32 channels) x 16 (k = 16
// channels of one tap), 8 warps along m (warp tile kWM x kN), 3-stage cp.async pipeline
// (kernels/cores/tf32x3/mainloop.cuh with this file's loader and mma_stage). kWM 64 (512 rows):
// A by 4-byte gathers (thread tid owns pixels tid and tid + 256, 16 channels each), B from the
// per-call pack by 16-byte rows. kWM 16 (128 rows, tiny layers): thread tid owns pixel tid % 128,
// channels 8 (tid / 128) ..; B gathered by 4-byte copies from w itself (no pack launch); the
// tile's k-tiles may be split over CTAs (GemmParams::splits, partial sums added by
// ../split_sum.cuh). Shared rows are padded (stride = 8 mod 32 banks) so that the scalar fragment
// loads are conflict-free. Operands are split after the shared load: big = tf32_rna(v), small =
// tf32_rna(v - big), acc += a_s b_b + a_b b_s + a_b b_b (the L1_003 scheme, error ~fp32 level).
// Accumulators go straight to y (or to the split's partial slice). The Implementation that picks
// the tiles: parity_conv_transpose3d.cuh.
//
// Thread safety: stateless kernels.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/cuda/cuda_check.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose3d_tf32x3/parity_axes.h"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::ct3d_gather {

using ct3d_parity::kAxes;
using ct3d_parity::kMaxClasses;
using ct3d_parity::kMaxClassTaps;
using ct3d_parity::kMaxJ;
using ct3d_parity::kMaxStride;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBK = 16;  // channels (k) per stage, one tap
constexpr int kStages = 3;
static_assert(kBK % 8 == 0, "k8 MMA steps");

// B row stride [k][n]: a multiple of 4 (16-byte copies), 8 or 24 mod 32 (conflict-free).
constexpr int b_stride(int n) {
  return n % 32 == 8 || n % 32 == 24 ? n : n + 8;
}
// CTA tile kWarps * kWM (m) x 8 kNT (n) x kBK. kWM 64 (512 rows, 2 pixels x 16 channels per
// thread, B from the packed weights by 16-byte copies) is the main tile; kWM 16 (128 rows, one
// pixel x 8 channels per thread, B gathered from w itself, no pack launch) serves tiny layers,
// whose 512-row grid leaves most SMs idle behind a few CTAs that walk every tap.
template <int kWM, int kNT>
struct Tiles {
  static constexpr int kWarpM = kWM;           // m rows per warp
  static constexpr int kMT = kWM / 16;         // m16 tiles per warp
  static constexpr int kTileM = kWarps * kWM;  // 512 or 128
  static constexpr int kStrideA = kTileM + 8;  // shared A row [k][m], 8 mod 32 banks
  static constexpr int kPixelsPerThread = kTileM >= kThreads ? kTileM / kThreads : 1;
  static constexpr int kChanGroups = kTileM >= kThreads ? 1 : kThreads / kTileM;
  static constexpr int kChansPerThread = kBK / kChanGroups;
  static constexpr bool kDirectB = kWM < 64;  // B gathered from w (no pack kernel)
  static constexpr int kMinBlocks = kDirectB ? 4 : 2;
  static constexpr int kN = 8 * kNT;
  static constexpr int kStrideB = b_stride(kN);
  static constexpr int kStageFloats = kBK * kStrideA + kBK * kStrideB;
  static constexpr int kSmemBytes = kStages * kStageFloats * 4;
  static constexpr int kBVectors = kBK * kN / 4;                          // 16-byte B copies
  static constexpr int kBScalars = (kBK * kN + kThreads - 1) / kThreads;  // direct B, per thread
  static_assert(kWM % 16 == 0, "m16 tiles per warp");
  static_assert(kPixelsPerThread * kThreads == kTileM * kChanGroups, "pixels tile the threads");
  static_assert(kBK % kChanGroups == 0, "whole channel groups");
  static_assert(kStrideA % 32 == 8, "A fragment loads t*stride + g hit 32 distinct banks");
  static_assert(kStrideB % 4 == 0 && (kStrideB % 32 == 8 || kStrideB % 32 == 24), "B banks");
  static_assert(kBVectors <= kThreads, "one B copy per thread at most");
  static_assert(kMinBlocks * kSmemBytes <= 227 * 1024, "kMinBlocks CTAs per SM");
};
constexpr int kMainWM = 64, kSmallWM = 16;

// ---- the plan (host-built, passed by value) ----

using Axis = ct3d_parity::ParityAxis;

struct Plan : ct3d_parity::ParityClasses<Axis> {
  int batch = 0, c_in = 0, c_out = 0, k[kAxes] = {1, 1, 1};
  int classes = 1, chunks = 1, n_tiles = 1, n_pad = 8;
  int64_t m_total = 0, m_tiles = 0;
  int64_t b_offset[kMaxClasses] = {};  // packed B of class c: [tap][chunks * kBK][n_pad]
  int64_t b_floats = 0;
  __host__ __device__ int k_pad() const { return chunks * kBK; }
};

inline Status not_taken(const std::string& why) {
  return Status::failed_precondition("ct3d parity GEMM: " + why);
}

inline Result<Axis> plan_axis(const gather::ConvTransposeGeometry& g, int a) {
  Axis ax;
  const Status parity = ct3d_parity::fill_parity_axis_of(g, a, ax);
  if (!parity.is_ok()) return not_taken(parity.message());
  return ax;
}

// n_width, tile_m: the CTA tile's channels and rows (Tiles::kN, Tiles::kTileM).
inline Result<Plan> plan_parity_gemm(const gather::ConvTransposeGeometry& g, int n_width,
                                     int tile_m) {
  if (g.groups != 1) return not_taken("groups != 1");
  Plan p;
  KB_TRY(ct3d_parity::plan_parity_axes(g, plan_axis, p));
  constexpr int64_t kIntMax = 0x7fffffff;
  if (g.in_channels >= (1 << 20) || g.out_channels >= (1 << 20) || g.batch >= kIntMax)
    return not_taken("too many channels");
  p.batch = static_cast<int>(g.batch);
  p.c_in = static_cast<int>(g.in_channels), p.c_out = static_cast<int>(g.out_channels);
  p.chunks = (p.c_in + kBK - 1) / kBK;
  p.n_tiles = (p.c_out + n_width - 1) / n_width;
  p.n_pad = p.n_tiles * n_width;
  p.m_total = g.batch * p.ax[0].q_count * p.ax[1].q_count * p.ax[2].q_count;
  p.m_tiles = (p.m_total + tile_m - 1) / tile_m;
  if (p.m_total >= kIntMax - tile_m || p.m_tiles * p.n_tiles * p.classes >= kIntMax)
    return not_taken("too many tiles");
  for (int c = 0; c < p.classes; ++c) {
    p.b_offset[c] = p.b_floats;
    p.b_floats += int64_t{p.class_taps(c)} * p.k_pad() * p.n_pad;
  }
  return p;
}

// ---- device primitives (as L1_003's tf32x3_gemm.cuh) ----

// 3xTF32 and cp.async primitives: kernels/cores/tf32x3/mma.cuh.
using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::mma3_k8;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::split_tf32_frag;
using ::kb::tf32x3::SplitTf32;
using ::kb::tf32x3::tf32_rna_bits;

// ---- weight pack: b[cls][tap][ci < k_pad][n < n_pad] = w[ci, n, t_d, t_h, t_w] or 0 ----

template <int kBlock>
__global__ void __launch_bounds__(kBlock)
    pack_weights_kernel(const float* __restrict__ w, float* __restrict__ b, const Plan p) {
  const int64_t per_tap = int64_t{p.k_pad()} * p.n_pad;
  const int64_t total = int64_t{p.classes} * kMaxClassTaps * per_tap;
  for (int64_t e = int64_t{blockIdx.x} * kBlock + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kBlock) {
    const int n = static_cast<int>(e % p.n_pad), ci = static_cast<int>(e / p.n_pad % p.k_pad());
    const int ti = static_cast<int>(e / per_tap % kMaxClassTaps);
    const int cls = static_cast<int>(e / (per_tap * kMaxClassTaps));
    if (ti >= p.class_taps(cls)) continue;
    int i[kAxes];
    p.tap_of(cls, ti, i);
    int64_t src = ci < p.c_in && n < p.c_out ? int64_t{ci} * p.c_out + n : -1;
    for (int a = 0; a < kAxes && src >= 0; ++a)
      src = src * p.k[a] + p.ax[a].t[p.phase(cls, a)][i[a]];
    b[p.b_offset[cls] + ti * per_tap + int64_t{ci} * p.n_pad + n] = src < 0 ? 0.0f : w[src];
  }
}

// ---- the GEMM kernel ----

struct GemmParams {
  Plan plan;
  const float* x;  // (N, C_in, D, H, W)
  const float* b;  // packed weights (Tiles::kDirectB: w itself, (C_in, C_out, K_d, K_h, K_w))
  float* y;        // (N, C_out, D_out, H_out, W_out)
  // Split over k-tiles (taps x channel chunks): `splits` units per tile, unit s summing its
  // class's k-tiles [s span, s span + span); with splits > 1 unit s stores its partial sums to
  // partial + s * |y| (y's layout; a unit past its class's k-tiles stores zeros) and
  // split_sum_kernel adds them into y in order.
  int splits = 1, span = 1 << 30;
  float* partial = nullptr;
};

struct TileIds {
  int cls, n0, m0, split;
};
// Block = ((m tile * n_tiles + n tile) * classes + class) * splits + split.
__device__ __forceinline__ TileIds tile_ids(const GemmParams& g, int kN, int tile_m) {
  const Plan& p = g.plan;
  const int64_t unit = blockIdx.x / g.splits;
  const int64_t rest = unit / p.classes;
  return {static_cast<int>(unit % p.classes), static_cast<int>(rest % p.n_tiles) * kN,
          static_cast<int>(rest / p.n_tiles) * tile_m, static_cast<int>(blockIdx.x % g.splits)};
}

// Pixel m of the class grid: (n, q_d, q_h, q_w) in absolute q units.
struct Pixel {
  int n, q[kAxes];
};
__host__ __device__ inline Pixel pixel_of(const Plan& p, int m) {  // m < 2^31 - tile_m
  Pixel px;
  for (int a = kAxes - 1; a >= 0; --a) {
    px.q[a] = p.ax[a].q_lo + static_cast<int>(m % p.ax[a].q_count);
    m /= p.ax[a].q_count;
  }
  px.n = static_cast<int>(m);
  return px;
}

// A copy state of one of the thread's pixels.
struct ASource {
  const float* image;  // x at (n, 0, 0, 0, 0)
  int q[kAxes];
  bool ok;  // the pixel is in M
};

// B of one stage straight from w: b[row][n] = w[c0 + row, n0 + n, tap] or 0 past C_in / C_out.
template <class T>
__device__ __forceinline__ void load_b_direct(const GemmParams& g, const TileIds& t, int tap_lin,
                                              int c0, uint32_t stage) {
  const Plan& p = g.plan;
  const int kvol = p.k[0] * p.k[1] * p.k[2];
#pragma unroll
  for (int v = 0; v < T::kBScalars; ++v) {
    const int e = static_cast<int>(threadIdx.x) + v * kThreads;
    const int row = e / T::kN, col = e % T::kN, ci = c0 + row, co = t.n0 + col;
    const bool ok = e < kBK * T::kN && ci < p.c_in && co < p.c_out;
    const float* src = ok ? g.b + (int64_t{ci} * p.c_out + co) * kvol + tap_lin : g.b;
    if (e < kBK * T::kN)
      cp_async_4(stage + (kBK * T::kStrideA + row * T::kStrideB + col) * 4, src, ok);
  }
}

// One stage: k-tile kt = (tap kt / chunks, channels 16 (kt % chunks) ..). The thread copies
// channels [cg kChansPerThread, +kChansPerThread) of its pixels (cg = its channel group).
template <class T>
__device__ __forceinline__ void load_stage(const GemmParams& g, const TileIds& t,
                                           const ASource (&src)[T::kPixelsPerThread], int kt,
                                           uint32_t stage) {
  const Plan& p = g.plan;
  const int ti = kt / p.chunks, c0 = kt % p.chunks * kBK;
  int i[kAxes];
  p.tap_of(t.cls, ti, i);
  int j[kAxes], tap_lin = 0;
  for (int a = 0; a < kAxes; ++a) {
    j[a] = p.ax[a].j[p.phase(t.cls, a)][i[a]];
    tap_lin = tap_lin * p.k[a] + p.ax[a].t[p.phase(t.cls, a)][i[a]];
  }
  const int64_t plane = p.in_plane();
  const int slot = static_cast<int>(threadIdx.x) % T::kTileM;
  const int ca = static_cast<int>(threadIdx.x) / T::kTileM * T::kChansPerThread;  // first channel
#pragma unroll
  for (int u = 0; u < T::kPixelsPerThread; ++u) {
    const int i0 = src[u].q[0] - j[0], i1 = src[u].q[1] - j[1], i2 = src[u].q[2] - j[2];
    const bool inside = src[u].ok && i0 >= 0 && i0 < p.ax[0].in && i1 >= 0 && i1 < p.ax[1].in &&
                        i2 >= 0 && i2 < p.ax[2].in;
    const float* base = inside ? src[u].image + (int64_t{i0} * p.ax[1].in + i1) * p.ax[2].in + i2 +
                                     (c0 + ca) * plane
                               : g.x;
    const uint32_t dst = stage + (slot + u * kThreads + ca * T::kStrideA) * 4;
#pragma unroll
    for (int c = 0; c < T::kChansPerThread; ++c) {
      const bool ok = inside && c0 + ca + c < p.c_in;
      cp_async_4(dst + c * T::kStrideA * 4, ok ? base + c * plane : g.x, ok);
    }
  }
  if constexpr (T::kDirectB) {
    load_b_direct<T>(g, t, tap_lin, c0, stage);
  } else if (threadIdx.x < T::kBVectors) {
    const int row = threadIdx.x / (T::kN / 4), col = threadIdx.x % (T::kN / 4) * 4;
    const float* bsrc =
        g.b + p.b_offset[t.cls] + (int64_t{ti} * p.k_pad() + c0 + row) * p.n_pad + t.n0 + col;
    cp_async_16(stage + (kBK * T::kStrideA + row * T::kStrideB + col) * 4, bsrc);
  }
}

template <class T>
using Acc = float[T::kMT][T::kN / 8][4];

// acc += the 3xTF32 product of one stage. Fragments (g = lane / 4, t = lane % 4): a0 (m g, k t),
// a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g), b1 (k t + 4, n g).
template <class T>
__device__ __forceinline__ void mma_stage(const float* stage, int warp, int lane, Acc<T>& acc) {
  constexpr int kNT = T::kN / 8, kStrideA = T::kStrideA;
  const int g = lane / 4, tq = lane % 4;
  const float* as = stage + tq * kStrideA + warp * T::kWarpM + g;
  const float* bs = stage + kBK * kStrideA + tq * T::kStrideB + g;
#pragma unroll
  for (int s = 0; s < kBK / 8; ++s) {
    uint32_t b_big[kNT][2], b_small[kNT][2];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const SplitTf32 v = split_tf32(bs[(8 * s + 4 * h) * T::kStrideB + 8 * nt]);
        b_big[nt][h] = v.big, b_small[nt][h] = v.small;
      }
#pragma unroll
    for (int mt = 0; mt < T::kMT; ++mt) {
      const float* a = as + 8 * s * kStrideA + 16 * mt;
      const float src[4] = {a[0], a[8], a[4 * kStrideA], a[4 * kStrideA + 8]};
      uint32_t a_big[4], a_small[4];
      split_tf32_frag(src, a_big, a_small);
      mma3_k8(acc[mt], a_big, a_small, b_big, b_small);  // small terms first
    }
  }
}

// y index of (n, 0, o) for pixel m of class cls, or -1 when outside M or the output.
__host__ __device__ inline int64_t output_pixel(const Plan& p, int cls, int m) {
  if (m >= p.m_total) return -1;
  const Pixel px = pixel_of(p, m);
  int64_t at = 0;
  for (int a = 0; a < kAxes; ++a) {
    const int o = px.q[a] * p.ax[a].stride + p.phase(cls, a) - p.ax[a].pad;
    if (o < 0 || o >= p.ax[a].out) return -1;
    at = at * p.ax[a].out + o;
  }
  return int64_t{px.n} * p.c_out * p.out_plane() + at;
}

// c0 (m g, n 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1). To y, or to the unit's
// partial slice when the tile is split.
template <class T>
__device__ __forceinline__ void store_acc(const GemmParams& g, const TileIds& t, int warp, int lane,
                                          const Acc<T>& acc) {
  const int64_t plane = g.plan.out_plane();
  float* out =
      g.splits == 1 ? g.y : g.partial + t.split * (int64_t{g.plan.batch} * g.plan.c_out * plane);
#pragma unroll
  for (int mt = 0; mt < T::kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = t.m0 + warp * T::kWarpM + 16 * mt + 8 * h + lane / 4;
      const int64_t at = output_pixel(g.plan, t.cls, m);
      if (at < 0) continue;
#pragma unroll
      for (int nt = 0; nt < T::kN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int co = t.n0 + 8 * nt + 2 * (lane % 4) + e;
          if (co < g.plan.c_out) out[at + co * plane] = acc[mt][nt][2 * h + e];
        }
    }
}

// Grid: m_tiles x n_tiles x classes x splits (tile_ids); block kThreads; dynamic shared
// T::kSmemBytes.
template <class T>
__global__ void __launch_bounds__(kThreads, T::kMinBlocks)
    parity_gemm3d_kernel(const GemmParams g) {
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const Plan& p = g.plan;
  const TileIds t = tile_ids(g, T::kN, T::kTileM);
  ASource src[T::kPixelsPerThread];
#pragma unroll
  for (int u = 0; u < T::kPixelsPerThread; ++u) {
    const int m = t.m0 + static_cast<int>(threadIdx.x) % T::kTileM + u * kThreads;
    const Pixel px = pixel_of(p, m);
    src[u] = {
        g.x + int64_t{px.n} * p.c_in * p.in_plane(), {px.q[0], px.q[1], px.q[2]}, m < p.m_total};
  }
  const int class_k_tiles = p.class_taps(t.cls) * p.chunks;
  const int k_first = min(t.split * g.span, class_k_tiles);
  const int k_tiles = min(class_k_tiles - k_first, g.span);
  Acc<T> acc;
  tf32x3::mainloop<kStages, T::kStageFloats>(
      smem, k_tiles, acc,
      [&](uint32_t stage, int kt) { load_stage<T>(g, t, src, k_first + kt, stage); },
      [&](const float* stage, Acc<T>& c) { mma_stage<T>(stage, warp, lane, c); });
  store_acc<T>(g, t, warp, lane, acc);
}

}  // namespace kb::custom::ct3d_gather
