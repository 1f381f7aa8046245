// L2_034's tensor-core kernel (row_ln): ConvTranspose3d(k 4, s 2, p 1) + bias + LayerNorm over
// the 2W output columns of each row + gelu_erf + scale, as one implicit GEMM per output parity in
// error-compensated TF32 (3xTF32, mma.sync m16n8k8; the tiles use kernels/cores/tf32x3/mma.cuh
// and mainloop.cuh) with the row LayerNorm fused.
//   x: (N, C_in, D, H, W); weight: (C_in, C_out, 4, 4, 4), packed per call into b_pk
//   (pack_weights_kernel); out: (N, C_out, 2D, 2H, 2W) fp32 NCDHW; rows of 2W <= 128 (W <=
//   kMaxW = 64, so C_out = 2W <= 128, in channel blocks of 64).
// Taken (custom.cu's class): rows of W 13..64 in layers above the FMA kernels' limits (or outside
// fma.cuh's), where a channel block's outputs take 32-bit offsets (row_ln_fits); the full
// preset's kernel.
//
// Owns: the CTA geometry per row length (Geometry<kW>), the weight pack kernel and the fused
// kernel, and the fused kernel's launch (allow, launch); custom.cu's class checks the layer,
// packs the weights and calls them.
//
// Math: output o = 2m + p (parity p) gets 2 taps per axis, s in {0, 1}: input i = m + p - s,
// kernel t = 2s + 1 - p. For parity (pd, ph, pw), with k = (ci, sd, sh, sw) (K = 8 C_in):
//   y[n, co, 2md + pd, 2mh + ph, 2mw + pw] = b[co] + sum_k A[(n, md, mh, mw), k] B_p[k, co]
//   A = x[n, ci, md + pd - sd, mh + ph - sh, mw + pw - sw] (0 outside x),
//   B_p = w[ci, co, 2sd + 1 - pd, 2sh + 1 - ph, 2sw + 1 - pw] (packed per call, zero padded).
//
// CTA: (n, pd, ph, md, kRows = 128 / kW rows mh0.., channel block cb) x 64 channels x both W
// parities: M = 2 pw x kRows x kW = 256, N = 64, kW = W rounded up to 16, 32 or 64, so every
// output row (n, co, od, oh) lies in one CTA and the LayerNorm runs on the accumulators. 8 warps:
// warp_m (0..3) = (pw, half of the parity's 128 GEMM rows), warp_n (0..1) = 32 channels; warp
// tile 64 x 32 (4 m-tiles x 4 n-tiles of 8 channels); GEMM row m of a parity is output row m /
// kW, column m % kW (columns >= W are computed on zeros and dropped). Stages of 4 input channels
// (k = 32, 4 k8 steps: one channel each, k8 column t + 4 sw with t = 2 sd + sh), 3-4 stage
// cp.async pipeline:
//   A: the x slab of the CTA: [ci 4][ih kRows + 1][id 2][kSlabStride] with x column iw at
//      iw + kHalo (zero fill outside x; the halo columns iw = -1 and iw >= W zeroed once).
//      Fragments are scalar loads straight from the slab (no im2col duplication: x is read once
//      per CTA); row strides of 8 or 24 mod 32 make them conflict-free (maps_ok checks every kW).
//      16-byte copies of whole x rows when W == kW and x is 16-byte aligned, else 4-byte copies.
//   B: [pw 2][k 32][n 64], 16-byte copies, chunks XOR-swizzled by k / 2 (L1_003's layout).
// Epilogue: + b, per row the thread's values -> shuffles over the 8 mw lanes -> the two W-parity
// warps through shared memory; mean first, then the centered sum of squares (two passes), then
// (v - mean) rstd gamma[w] + beta[w], gelu_erf, scale, stored from registers (stride-2 runs; the
// other parity's warp fills the other half of each sector).
//
// Predicted on the H200 (W = 32): 201M MMAs per call (full preset: 16,384 CTAs of 12,288 MMAs,
// 2 per SM), the same CTA shape and MMA count per CTA as the L2_091 / L2_093 parity core (49
// TFLOP/s effective on L2_093 incl. its erff epilogue): ~2.6-2.9 ms. Measured: 2.79 ms
// (2026-11-30, docs/kernels.md; 47.6 TFLOP/s), 2.786 ms in docs/bench-h200-2026-12-02b.json
// (1.41x the floor): under the 3.17 ms goal.
// Rows shorter than kW waste GEMM rows (W = 9 computes 16 columns), and C_out < 64 wastes
// channels: those shapes run at a fraction of the tile's rate, still on the tensor cores.
// Session 10 (every W; `kb bench L2_034 --time-cap 3 --seed 7`, seeds 7 and 8): full preset
// 2.857 / 2.855 ms against 2.766 in session 9 (+3.3%; an A/B with session 9's pack and ncu: the
// same mainloop, +332 instructions per warp in the epilogue's 64-bit store addresses, see
// docs/kernels.md). With 32-bit offsets within a channel block (session 11, `kb bench L2_034
// --time-cap 2 --seed 7` / `--seed 8`): 2.622 / 2.601 ms. Small layers: ncu of the part8 preset (W
// 5, 144 CTAs of 8 k-tiles) shows 13.2 K instructions per warp at 5.4 cycles each with 8-16 warps
// per SM: one CTA's serial k-loop sets the time (70 us against the reference's 38), hence the
// FMA kernels below 32 M multiply-adds (custom.cu's kFmaMaxMacs).
//
// Accuracy: 3xTF32 ~ fp32 products, K = 256 summed in the MMA accumulator. LayerNorm divides the
// conv's error by the row's sigma (amplification ~12; host emulation of the index maps: <= 1.2%
// of the tolerance). The row statistics are two-pass in fp32 (mean first, then the centred sum
// of squares over 64 values): no E[y^2] - mean^2 cancellation, so a shifted input costs no
// digits. rsqrtf (~2 ulp) for 1/sigma; gelu by A&S's erf (kernels/cores/gelu.cuh, <= 1e-6 from
// gelu in double; session 15: 2.622 -> 2.568 ms, max |err| 1.48e-5 -> 1.50e-5), the
// multiplications as the reference. Measured max |err| 1.5e-5 at the full preset (bench
// 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed.
//
// Thread safety: device code without state; allow() and launch() act on the caller's stream and
// the calling thread's device.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "common/cuda/cuda_check.h"
#include "common/status.h"
#include "kernels/cores/gelu.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::L2_034::row_ln {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::mma3_k8;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::split_tf32_frag;
using ::kb::tf32x3::SplitTf32;

constexpr int kMaxW = 64;  // input W the kernel takes (rows of 2W <= 128)
constexpr int kN = 64;     // channels per CTA (blocks of 64, zero padded)
constexpr int kThreads = 256;
constexpr int kWarpsN = 2;
constexpr int kWarpTileN = kN / kWarpsN;  // 32
constexpr int kTaps = 8;                  // (sd, sh, sw)
constexpr int kCiPerStage = 4;
constexpr int kBK = kCiPerStage * kTaps;  // 32
constexpr int kHalo = 4;                  // slab column of iw = 0 (16-byte aligned); iw = -1 at 3
constexpr int kMParity = 128;             // GEMM rows per W parity and CTA: kRows x kW
constexpr int kBStageFloats = 2 * kBK * kN;             // 4096 (both W parities)
constexpr int kBCopies = kBStageFloats / 4 / kThreads;  // 4 per thread
static_assert(kBCopies * 4 * kThreads == kBStageFloats, "copy split");

// The CTA geometry for rows of kW input columns (W rounded up to 16, 32 or 64): kRows =
// 128 / kW output rows per W parity, so M = 2 pw x kRows x kW = 256 whatever W is.
template <int kWPad>
struct Geometry {
  static constexpr int kW = kWPad;
  static constexpr int kRows = kMParity / kW;
  static constexpr int kRowsPerWarp = 64 / kW;  // rows in a warp's 64 GEMM rows
  // = 8 or 24 mod 32: the 4 (sd, sh) lane groups of a fragment load land on distinct bank octets
  static constexpr int kSlabStride = kW <= 16 ? 24 : kW == 32 ? 40 : 72;
  static constexpr int kStages = 4;
  static constexpr int kSlabRowsPerCi = (kRows + 1) * 2;  // ih: kRows + 1, id: 2
  static constexpr int kSlabCiStride = kSlabRowsPerCi * kSlabStride;
  static constexpr int kAStageFloats = kCiPerStage * kSlabCiStride;
  static constexpr int kStageFloats = kAStageFloats + kBStageFloats;
  static constexpr int kRedFloats = 2 * kRows * kN;  // [pw][row][co]
  static constexpr int kSmemBytes = (kStages * kStageFloats + 2 * kRedFloats) * 4;
  static constexpr int kAChunks = kCiPerStage * kSlabRowsPerCi * kW / 4;  // 16-byte copies
  static constexpr int kAScalars = kCiPerStage * kSlabRowsPerCi * kW;     // 4-byte copies
  static constexpr int kA1 = 8;  // a1 - a0 (GEMM row m + 8): 8 columns right

  static_assert(kW == 16 || kW == 32 || kW == 64, "row lengths of the kernel");
  static_assert(kSlabStride >= kHalo + kW + 1 && kSlabStride % 4 == 0, "halo columns, alignment");
  static_assert(kAStageFloats % 4 == 0 && kStageFloats % 4 == 0, "16-byte aligned stages");
  static_assert(kAChunks <= 2 * kThreads, "at most two 16-byte A copies per thread");
  static_assert(kSmemBytes + 1024 <= 227 * 1024 / 2, "two CTAs per SM");

  __host__ __device__ static constexpr int slab_row(int ci, int ihl, int idl) {
    return (ci * (kRows + 1) + ihl) * 2 + idl;
  }
};

struct Params {
  const float* x;      // (N, C_in, D, H, W)
  const float* b_pk;   // (co_blocks, 4 (pd, ph), 2 pw, k_pad, 64) packed weights
  const float* bias;   // (C_out)
  const float* gamma;  // (2W)
  const float* beta;   // (2W)
  float* out;          // (N, C_out, 2D, 2H, 2W)
  int n, c_in, c_out, d, h, w, k_tiles, h_tiles, co_blocks;
  float eps, scale;
  __host__ __device__ int k_pad() const { return k_tiles * kBK; }
  __host__ __device__ int64_t blocks() const { return int64_t{n} * d * 4 * h_tiles * co_blocks; }
};

// ---- packed B: b_pk[cb][pp][pw][k][n], k = 8 ci + 2 t + sw, t = 2 sd + sh, co = 64 cb + n ----

__host__ __device__ inline int64_t packed_weight_source(const Params& p, int cb, int pp, int pw,
                                                        int k, int n) {
  const int ci = k / kTaps, t = k % kTaps / 2, sw = k % 2, co = cb * kN + n;
  const int sd = t / 2, sh = t % 2, pd = pp / 2, ph = pp % 2;
  if (ci >= p.c_in || co >= p.c_out) return -1;
  const int kd = 2 * sd + 1 - pd, kh = 2 * sh + 1 - ph, kw = 2 * sw + 1 - pw;
  return ((int64_t{ci} * p.c_out + co) * 4 + kd) * 16 + kh * 4 + kw;
}

__global__ void __launch_bounds__(256)
    pack_weights_kernel(const float* __restrict__ w, float* __restrict__ b_pk, const Params p) {
  const int64_t total = int64_t{p.co_blocks} * 8 * p.k_pad() * kN;
  for (int64_t e = int64_t{blockIdx.x} * 256 + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * 256) {
    const int n = static_cast<int>(e % kN);
    int64_t rest = e / kN;
    const int k = static_cast<int>(rest % p.k_pad());
    rest /= p.k_pad();
    const int pw = static_cast<int>(rest % 2), pp = static_cast<int>(rest / 2 % 4),
              cb = static_cast<int>(rest / 8);
    const int64_t src = packed_weight_source(p, cb, pp, pw, k, n);
    b_pk[e] = src < 0 ? 0.0f : w[src];
  }
}

// ---- shared layouts ----

// B(k, n) of one W parity: chunk (n / 4) ^ 2 ((k / 2) % 4), so that the 8 lanes of a quarter warp
// (g pair x t) read 8 distinct 16-byte bank groups.
__host__ __device__ constexpr int b_smem_index(int k, int n) {
  return k * kN + (((n >> 2) ^ (((k >> 1) & 3) << 1)) << 2) + (n & 3);
}

// What one CTA computes. Block order: parity, then channel block fastest (the CTAs on the same
// x rows run together).
struct Tile {
  int n, pd, ph, cb, md, mh0;
};
template <class G>
__host__ __device__ inline Tile tile_of(const Params& p, int block) {
  Tile t;
  const int pp = block % 4;
  int rest = block / 4;
  t.pd = pp / 2, t.ph = pp % 2;
  t.cb = rest % p.co_blocks;
  rest /= p.co_blocks;
  t.mh0 = rest % p.h_tiles * G::kRows;
  rest /= p.h_tiles;
  t.md = rest % p.d;
  t.n = rest / p.d;
  return t;
}

// ---- the loader: A slab rows, B chunks (4 per thread) ----
// A: the x slab of the CTA: [ci 4][ih kRows + 1][id 2][kSlabStride], x column iw at iw + kHalo.
// kFull (W == kW, x 16-byte aligned): 16-byte copies of whole rows and no column masks, 1-2 per
// thread at slots fixed for the CTA; else 4-byte copies. Rows outside x are zero-filled by the
// copies; the columns no copy writes (halo, w >= W) are zeroed once (zero_margins).

struct Loader {
  const float* a[2];  // kFull: x row of copy j at the current stage's first channel, or nullptr
  int a_ci[2];        // kFull: channel offset of copy j in the stage
  int a_smem[2];      // kFull: float offset of copy j in the A stage, -1: no copy
  const float* x_n;   // x[n]
  int id0, ih0;       // x plane / row of slab row (ci, 0, 0)
  int c_next;         // first channel of the next stage to load
  const float* b;     // packed B of copy 0 at the next stage
};

template <class G>
__device__ __forceinline__ Loader make_loader(const Params& p, const Tile& t) {
  Loader l;
  l.x_n = p.x + int64_t{t.n} * p.c_in * p.d * p.h * p.w;
  l.id0 = t.md + t.pd - 1, l.ih0 = t.mh0 + t.ph - 1;
  for (int j = 0; j < 2; ++j) {
    const int c = threadIdx.x + kThreads * j;  // chunk: (row, 4-float column)
    const int col4 = c % (G::kW / 4), row = c / (G::kW / 4);
    const int ci = row / G::kSlabRowsPerCi, ihl = row % G::kSlabRowsPerCi / 2, idl = row % 2;
    const int id = l.id0 + idl, ih = l.ih0 + ihl;
    const bool copy = c < G::kAChunks && 4 * col4 < p.w;
    const bool inside = copy && id >= 0 && id < p.d && ih >= 0 && ih < p.h;
    l.a[j] = inside ? l.x_n + ((int64_t{ci} * p.d + id) * p.h + ih) * p.w + 4 * col4 : nullptr;
    l.a_ci[j] = ci;
    l.a_smem[j] = copy ? G::slab_row(ci, ihl, idl) * G::kSlabStride + kHalo + 4 * col4 : -1;
  }
  l.c_next = 0;
  l.b = p.b_pk + (int64_t{t.cb} * 4 + t.pd * 2 + t.ph) * 2 * p.k_pad() * kN;
  return l;
}

// B copy j of thread tid: pw, k row, 4-float column of the stage.
__host__ __device__ constexpr int b_copy_pw(int tid, int j) {
  return (tid + kThreads * j) / (kBK * kN / 4);
}
__host__ __device__ constexpr int b_copy_k(int tid, int j) {
  return (tid + kThreads * j) % (kBK * kN / 4) / (kN / 4);
}
__host__ __device__ constexpr int b_copy_n(int tid, int j) {
  return (tid + kThreads * j) % (kN / 4) * 4;
}

template <class G, bool kFull>
__device__ __forceinline__ void load_stage(const Params& p, Loader& l, uint32_t stage) {
  const int64_t ci_stride = int64_t{p.d} * p.h * p.w;
  if constexpr (kFull) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (l.a_smem[j] < 0) continue;
      const bool ok = l.a[j] != nullptr && l.c_next + l.a_ci[j] < p.c_in;
      cp_async_16(stage + l.a_smem[j] * 4, ok ? l.a[j] + l.c_next * ci_stride : p.x, ok);
    }
  } else {
    for (int c = threadIdx.x; c < G::kAScalars; c += kThreads) {
      const int col = c % G::kW, row = c / G::kW;
      if (col >= p.w) continue;
      const int ci = row / G::kSlabRowsPerCi, ihl = row % G::kSlabRowsPerCi / 2, idl = row % 2;
      const int id = l.id0 + idl, ih = l.ih0 + ihl, cg = l.c_next + ci;
      const bool ok = id >= 0 && id < p.d && ih >= 0 && ih < p.h && cg < p.c_in;
      const float* src = l.x_n + ((cg * ci_stride + int64_t{id} * p.h * p.w) + ih * p.w + col);
      cp_async_4(stage + (G::slab_row(ci, ihl, idl) * G::kSlabStride + kHalo + col) * 4,
                 ok ? src : p.x, ok);
    }
  }
#pragma unroll
  for (int j = 0; j < kBCopies; ++j) {
    const int tid = threadIdx.x, pw = b_copy_pw(tid, j), k = b_copy_k(tid, j);
    const int n = b_copy_n(tid, j);
    cp_async_16(stage + (G::kAStageFloats + pw * kBK * kN + b_smem_index(k, n)) * 4,
                l.b + (int64_t{pw} * p.k_pad() + k) * kN + n);
  }
  l.c_next += kCiPerStage;
  l.b += kBK * kN;
}

// Zeroes the slab columns no copy writes (iw < 0 and iw >= W) in every row of every stage: with
// kFull (W == kW) the margins are whole float4s, else one float at a time.
template <class G, bool kFull>
__device__ __forceinline__ void zero_margins(float* smem, int w) {
  constexpr int kRowsPerStage = kCiPerStage * G::kSlabRowsPerCi;
  constexpr int kRowsAll = G::kStages * kRowsPerStage;
  const int per_row = kFull ? (G::kSlabStride - G::kW) / 4 : G::kSlabStride - w;  // pieces
  for (int i = threadIdx.x; i < kRowsAll * per_row; i += kThreads) {
    const int row = i / per_row, piece = i % per_row;
    float* base =
        smem + row / kRowsPerStage * G::kStageFloats + row % kRowsPerStage * G::kSlabStride;
    if constexpr (kFull) {
      const int col = piece == 0 ? 0 : kHalo + w + 4 * (piece - 1);
      *reinterpret_cast<float4*>(base + col) = make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      base[piece < kHalo ? piece : piece + w] = 0.f;
    }
  }
}

// ---- fragments ----
// Lane (g, t): k8 column t is (sw 0, sd = t / 2, sh = t % 2), t + 4 is sw 1. Warp (pw, rp) owns
// GEMM rows m = 64 rp .. 64 rp + 63 of parity pw, row m = output row m / kW, column mw = m % kW;
// m-tile i: m = 64 rp + 16 i + g (+ 8 for a1, a3).
// a0 = slab(ci, row + 1 - sh, 1 - sd)[mw + pw + kHalo], a2 one column left (sw = 1).
template <class G>
__host__ __device__ constexpr int a_frag_base(int pw, int rp, int lane) {
  return G::slab_row(0, 64 * rp / G::kW + 1 - ((lane & 3) & 1), 1 - ((lane & 3) >> 1)) *
             G::kSlabStride +
         (lane >> 2) + pw + kHalo;
}
template <class G>
__host__ __device__ constexpr int a_frag_offset(int s, int i) {
  return s * G::kSlabCiStride + 16 * i / G::kW * 2 * G::kSlabStride + 16 * i % G::kW;
}
// B: the float4 at physical row k = 8 s + 2 t + sw, columns 32 warp_n + 4 g + nt.
template <class G>
__host__ __device__ constexpr int b_frag_index(int pw, int warp_n, int lane, int s, int sw) {
  return G::kAStageFloats + pw * kBK * kN +
         b_smem_index(8 * s + 2 * (lane & 3) + sw, warp_n * kWarpTileN + 4 * (lane >> 2));
}
// Channel (in the CTA's block) of accumulator column 2 t + e of n-tile nt: 4 (2 t + e) + nt.
__host__ __device__ constexpr int acc_channel(int warp_n, int lane, int nt, int e) {
  return warp_n * kWarpTileN + 8 * (lane & 3) + 4 * e + nt;
}

template <class Index>
constexpr bool conflict_free_32(Index index) {  // scalar: 32 lanes, 32 distinct banks
  unsigned seen = 0;
  for (int l = 0; l < 32; ++l) seen |= 1u << (index(l) % 32);
  return seen == 0xffffffffu;
}
template <class Index>
constexpr bool conflict_free_128(Index index) {  // float4: each quarter warp, 8 distinct octets
  for (int q = 0; q < 4; ++q) {
    unsigned seen = 0;
    for (int l = 8 * q; l < 8 * q + 8; ++l) seen |= 1u << ((index(l) / 4) % 8);
    if (seen != 0xffu) return false;
  }
  return true;
}
template <class G>
constexpr bool maps_ok() {
  for (int pw = 0; pw < 2; ++pw)
    for (int rp = 0; rp < 2; ++rp)
      for (int s = 0; s < kCiPerStage; ++s)
        for (int i = 0; i < 4; ++i)
          for (int d : {0, G::kA1, -1, G::kA1 - 1}) {  // a0, a1, a2, a3
            const auto a = [&](int lane) {
              return a_frag_base<G>(pw, rp, lane) + a_frag_offset<G>(s, i) + d;
            };
            if (!conflict_free_32(a)) return false;
            for (int lane = 0; lane < 32; ++lane) {
              const int col = a(lane) % G::kSlabStride, row = a(lane) / G::kSlabStride;
              if (col < kHalo - 1 || col > kHalo + G::kW) return false;
              if (row < 0 || row >= kCiPerStage * G::kSlabRowsPerCi) return false;
            }
          }
  for (int pw = 0; pw < 2; ++pw)
    for (int wn = 0; wn < kWarpsN; ++wn)
      for (int s = 0; s < kCiPerStage; ++s)
        for (int sw = 0; sw < 2; ++sw) {
          const auto b = [&](int lane) { return b_frag_index<G>(pw, wn, lane, s, sw); };
          if (!conflict_free_128(b)) return false;
          for (int lane = 0; lane < 32; ++lane)
            if (b(lane) - b_frag_index<G>(pw, wn, lane, 0, 0) != (8 * s + sw) * kN) return false;
        }
  return true;
}
static_assert(maps_ok<Geometry<16>>() && maps_ok<Geometry<32>>() && maps_ok<Geometry<64>>(),
              "fragment loads conflict-free, inside the slab, base + constant forms");

// ---- main loop ----

// acc += the 3xTF32 product of one stage (4 k8 steps, one input channel each).
template <class G>
__device__ __forceinline__ void mma_stage(const float* stage, int a_base, int b_base,
                                          float (&acc)[4][4][4]) {
#pragma unroll 1
  for (int s = 0; s < kCiPerStage; ++s) {
    uint32_t b_big[4][2], b_small[4][2];
#pragma unroll
    for (int sw = 0; sw < 2; ++sw) {
      tf32x3::split_tf32_b_quad(
          *reinterpret_cast<const float4*>(stage + b_base + (8 * s + sw) * kN), sw, b_big, b_small);
    }
    const float* a = stage + a_base + s * G::kSlabCiStride;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float* ai = a + a_frag_offset<G>(0, i);
      // a0 (row g, col t), a1 (g + 8, t), a2 (g, t + 4: one column left), a3 (g + 8, t + 4)
      const float src[4] = {ai[0], ai[G::kA1], ai[-1], ai[G::kA1 - 1]};
      uint32_t a_big[4], a_small[4];
      split_tf32_frag(src, a_big, a_small);
      mma3_k8(acc[i], a_big, a_small, b_big, b_small);  // small terms first
    }
  }
}

// ---- epilogue ----
// Accumulator (i, nt, c): GEMM row m = 64 rp + 16 i + 8 h + g (h = c / 2), channel
// acc_channel(nt, e = c % 2). Its row in the warp is (16 i + 8 h) / kW, its column
// (16 i + 8 h) % kW + g.

template <class G>
__host__ __device__ constexpr int warp_row(int i, int h) {
  return (16 * i + 8 * h) / G::kW;
}
template <class G>
__host__ __device__ constexpr int first_column(int i, int h) {
  return (16 * i + 8 * h) % G::kW;
}

// red[pw][row][co] = this W parity's sum over the row's columns mw < W of v (squared when
// kSquares): per (row, nt, e) the thread's values of that row, then the 8 lanes g by shuffles.
template <class G, bool kFull, bool kSquares>
__device__ __forceinline__ void row_partials(const float (&v)[4][4][4], int w, float* red, int pw,
                                             int row0, int warp_n, int lane) {
  const int g = lane >> 2;
#pragma unroll
  for (int rw = 0; rw < G::kRowsPerWarp; ++rw)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (warp_row<G>(i, h) != rw || (!kFull && first_column<G>(i, h) + g >= w)) continue;
            const float a = v[i][nt][2 * h + e];
            s += kSquares ? a * a : a;
          }
#pragma unroll
        for (int off = 4; off < 32; off *= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
        if (lane < 4) red[(pw * G::kRows + row0 + rw) * kN + acc_channel(warp_n, lane, nt, e)] = s;
      }
}

// Both W parities' partial sums of (row0 + rw, channel (nt, e)).
template <class G>
__device__ __forceinline__ float row_total(const float* red, int row, int channel) {
  return red[row * kN + channel] + red[(G::kRows + row) * kN + channel];
}

template <class G, bool kFull>
__device__ __forceinline__ void epilogue(const Params& p, const Tile& t, float* red,
                                         float (&acc)[4][4][4]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_n = warp % kWarpsN, warp_m = warp / kWarpsN;
  const int pw = warp_m / 2, row0 = 64 * (warp_m % 2) / G::kW, g = lane >> 2;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int co = t.cb * kN + acc_channel(warp_n, lane, nt, e);
      const float b = co < p.c_out ? __ldg(p.bias + co) : 0.0f;
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i][nt][e] += b, acc[i][nt][2 + e] += b;
    }
  const float inv_len = 1.0f / static_cast<float>(2 * p.w);
  row_partials<G, kFull, false>(acc, p.w, red, pw, row0, warp_n, lane);
  __syncthreads();
#pragma unroll
  for (int rw = 0; rw < G::kRowsPerWarp; ++rw)  // two-pass variance: center first
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float mean = row_total<G>(red, row0 + rw, acc_channel(warp_n, lane, nt, e)) * inv_len;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (warp_row<G>(i, h) == rw) acc[i][nt][2 * h + e] -= mean;
      }
  float* red_sq = red + G::kRedFloats;
  row_partials<G, kFull, true>(acc, p.w, red_sq, pw, row0, warp_n, lane);
  __syncthreads();

  // out[n, co, od, oh, w]: w = 2 mw + pw. Columns outermost: gamma and beta are read once per
  // column (the stores may alias them for the compiler, which would reload them per store).
  const int od = 2 * t.md + t.pd, row_len = 2 * p.w;
  const int co_stride = 4 * p.d * p.h * row_len;  // kN * co_stride < 2^31 (row_ln_fits)
#pragma unroll
  for (int rw = 0; rw < G::kRowsPerWarp; ++rw) {
    float rstd[4][2];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        rstd[nt][e] = rsqrtf(
            row_total<G>(red_sq, row0 + rw, acc_channel(warp_n, lane, nt, e)) * inv_len + p.eps);
    const int mh = t.mh0 + row0 + rw;
    if (mh >= p.h) continue;
    const int64_t row = (int64_t{t.n} * p.c_out * 2 * p.d + od) * 2 * p.h + 2 * mh + t.ph;
    // channel (nt, e) of the thread at out_row[(4 e + nt) * co_stride]: 32-bit offsets
    float* out_row = p.out + (row + int64_t{t.cb} * kN * 4 * p.d * p.h) * row_len +
                     acc_channel(warp_n, lane, 0, 0) * co_stride;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int mw = first_column<G>(i, h) + g;
        if (warp_row<G>(i, h) != rw || (!kFull && mw >= p.w)) continue;
        const int w = 2 * mw + pw;
        const float gam = __ldg(p.gamma + w), bet = __ldg(p.beta + w);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int cl = acc_channel(warp_n, lane, nt, e);
            if (t.cb * kN + cl >= p.c_out) continue;
            const float z = acc[i][nt][2 * h + e] * rstd[nt][e] * gam + bet;
            out_row[(4 * e + nt) * co_stride + w] = gelu_erf_fast(z) * p.scale;
          }
      }
  }
}

template <int kW, bool kFull>
__global__ void __launch_bounds__(kThreads, 2) row_ln_kernel(const Params p) {
  using G = Geometry<kW>;
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_n = warp % kWarpsN, warp_m = warp / kWarpsN;
  const int pw = warp_m / 2, rp = warp_m % 2;
  const Tile tile = tile_of<G>(p, blockIdx.x);
  Loader loader = make_loader<G>(p, tile);
  zero_margins<G, kFull>(smem, p.w);
  const int a_base = a_frag_base<G>(pw, rp, lane), b_base = b_frag_index<G>(pw, warp_n, lane, 0, 0);
  float acc[4][4][4];
  tf32x3::mainloop<G::kStages, G::kStageFloats>(
      smem, p.k_tiles, acc, [&](uint32_t stage, int) { load_stage<G, kFull>(p, loader, stage); },
      [&](const float* stage, float(&c)[4][4][4]) { mma_stage<G>(stage, a_base, b_base, c); });
  epilogue<G, kFull>(p, tile, smem + G::kStages * G::kStageFloats, acc);
}

// The padded row length of input width w (<= kMaxW).
inline int padded_width(int w) {
  return w <= 16 ? 16 : w <= 32 ? 32 : 64;
}

// f(std::integral_constant<int, kW>) for the kernel's row length w_pad (16, 32 or 64).
template <class F>
Status with_row_length(int w_pad, F&& f) {
  switch (w_pad) {
    case 16:
      return f(std::integral_constant<int, 16>{});
    case 32:
      return f(std::integral_constant<int, 32>{});
    default:
      return f(std::integral_constant<int, 64>{});
  }
}

// Lets both variants of the kernel for rows of w_pad take their shared memory.
inline Status allow(int w_pad) {
  return with_row_length(w_pad, [](auto kw) -> Status {
    for (auto kernel : {row_ln_kernel<kw(), true>, row_ln_kernel<kw(), false>}) {
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       Geometry<kw()>::kSmemBytes));
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    }
    return Status::ok();
  });
}

inline Status launch(const Params& p, int w_pad, bool full, cudaStream_t stream) {
  return with_row_length(w_pad, [&](auto kw) -> Status {
    const auto kernel = full ? row_ln_kernel<kw(), true> : row_ln_kernel<kw(), false>;
    kernel<<<static_cast<unsigned>(p.blocks()), kThreads, Geometry<kw()>::kSmemBytes, stream>>>(p);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  });
}

// CTA rows for input width w.
inline int rows_per_cta(int w_pad) {
  return kMParity / w_pad;
}

}  // namespace kb::custom::L2_034::row_ln
