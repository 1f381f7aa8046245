// L2_034 custom: out = gelu_erf(LayerNorm_W(conv_transpose3d(x) + bias)) * scale.
//   x: (N, C_in, D, H, W); weight: (C_in, C_out, 4, 4, 4); bias: (C_out); gamma, beta: (2W);
//   out: (N, C_out, 2D, 2H, 2W) fp32 NCDHW (full preset: x (32, 32, 16, 32, 32) -> out (32, 64,
//   32, 64, 64)). ConvTranspose3d(k 4, stride 2, padding 1). LayerNorm normalizes each
//   (n, co, od, oh) row of 2W values (W_out == C_out is what lets PyTorch run it):
//   out = gelu(((y - mean_row) / sqrt(var_row + eps)) gamma[w] + beta[w]) * scale, biased var.
//
// Cost (docs/problems.md#l2_034, full preset): 132.8 GFLOP; min DRAM 1,141 MB -> 0.27 ms;
// floor 1.98 ms strict fp32 FMA; 3xTF32 ~0.81 ms. Reference 25.2-25.6 ms, best strict-fp32 peer
// 22.24 ms (torch.compile, docs/baselines.md), goal <= 3.17 ms (1.6 x the floor).
//
// Design, fast path (W = 32, C_out <= 64, x 16-byte aligned; the full preset), the fast-path
// section below (its tiles use kernels/cores/tf32x3/mma.cuh): per output parity (pd, ph, pw) the
// conv is a dense implicit GEMM, K = 8 C_in = 256 (2 taps per axis); 3xTF32 on mma.sync
// m16n8k8. A CTA owns 4 output rows x both W parities x all 64 channels (M = 256, N = 64), so
// each LayerNorm row (n, co, od, oh: 64 columns) is reduced on the accumulators (shuffles + one
// shared exchange between the two W-parity warps, two passes), then gamma/beta, gelu and scale,
// one store. A is read straight from an x slab in shared memory (16-byte copies of whole x rows,
// no im2col duplication); B (weights re-packed per call, 512 KB) streams through a 4-stage
// cp.async pipeline (kernels/cores/tf32x3/mainloop.cuh). 16,384 CTAs of 12,288 MMAs, 2 per SM.
//
// Generic path (any other shape the layer allows: the small / odd presets, W <= 64), strict
// fp32 FMA, one fused kernel + a per-call weight reorder: kernel stride 2, pad 1,
// k 4: output o = 2m + p gets exactly 2 taps per dim, s in {0, 1}: i = m + p - s, t = 2s + 1 - p.
// One CTA per (n, od, oh, 64-channel block): the x slab x[n][:, 2 d taps, 2 h taps, :] goes to
// shared memory with a zero halo; thread (co, w group) computes 16 consecutive outputs of its
// channel's row (8 input columns x both W parities): per (ci, sd, sh) one float4 of weights (4 kw)
// and 4 broadcast float4 of x feed 32 FMAs. The row's LayerNorm (two-pass mean / variance over
// the w groups through shared memory), gamma/beta, gelu and scale run in registers; one store.
//
// Predicted on the H200, fast path: 201M MMAs per call, the same CTA shape and MMA count per CTA
// as the L2_091 / L2_093 parity core (49 TFLOP/s effective on L2_093 incl. its erff epilogue):
// ~2.6-2.9 ms. Its A fragments are 16 scalar shared loads per k8 step and warp (the 2D core:
// 4 LDS.128 + 16 four-byte gathers per stage), its gathers 5 sixteen-byte copies per thread
// and stage: about a wash. Measured: 2.79 ms (2026-11-30, docs/kernels.md; 47.6 TFLOP/s),
// 2.786 ms in docs/bench-h200-2026-12-02b.json (1.41x the floor): under the 3.17 ms goal. The FMA
// path (v1, now the generic path) measured 6.03 ms (22 TFLOP/s) at the full preset.
//
// Accuracy: 3xTF32 ~ fp32 products, K = 256 summed in the MMA accumulator. LayerNorm divides the
// conv's error by the row's sigma (amplification ~12; host emulation of the index maps: <= 1.2%
// of the tolerance). The row statistics are two-pass in fp32 (mean first, then the centred sum
// of squares over 64 values): no E[y^2] - mean^2 cancellation, so a shifted input costs no
// digits. rsqrtf (~2 ulp) for 1/sigma; erff and the multiplications as the reference. Measured
// max |err| 1.5e-5 at the full preset (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed.
// Robustness trials (small preset, seed 7, vs the golden model; W = 5 runs the generic path, so
// the fast path under shift/scale is not measured separately):
// shift (x + 100) 0.011x the tolerance (reference 0.007x), scale (x 1000) 0.006x (0.004x),
// centered 0.004x (0.003x), random_affine (gamma, beta) 0.008x (0.006x).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_034 {

// ==== The fast path: ConvTranspose3d(k 4, s 2, p 1) + bias + LayerNorm over the 64 output
// columns of each row (W = 32 -> 2W = 64) + gelu_erf + scale, as one implicit GEMM per output
// parity in error-compensated TF32 (3xTF32, mma.sync m16n8k8) with the row LayerNorm fused.
//
// Owns: the geometry check (row_ln_takes), the weight pack kernel and the fused kernel. The FMA
// kernel below is the generic fallback.
//
// Math: output o = 2m + p (parity p) gets 2 taps per axis, s in {0, 1}: input i = m + p - s,
// kernel t = 2s + 1 - p. For parity (pd, ph, pw), with k = (ci, sd, sh, sw) (K = 8 C_in):
//   y[n, co, 2md + pd, 2mh + ph, 2mw + pw] = b[co] + sum_k A[(n, md, mh, mw), k] B_p[k, co]
//   A = x[n, ci, md + pd - sd, mh + ph - sh, mw + pw - sw] (0 outside x),
//   B_p = w[ci, co, 2sd + 1 - pd, 2sh + 1 - ph, 2sw + 1 - pw] (packed per call, zero padded).
//
// CTA: (n, pd, ph, md, 4 rows mh0..mh0 + 3) x all 64 channels x both W parities: M = 2 pw x 4
// rows x 32 mw = 256, N = 64, so every output row (n, co, od, oh) of 64 columns lies in one CTA
// and the LayerNorm runs on the accumulators. 8 warps: warp_m (0..3) = (pw, row pair), warp_n
// (0..1) = 32 channels; warp tile 64 x 32 (4 m-tiles of 16 mw x 4 n-tiles of 8 channels).
// Stages of 4 input channels (k = 32, 4 k8 steps: one channel each, k8 column t + 4 sw with
// t = 2 sd + sh), 4-stage cp.async pipeline:
//   A: the x slab of the CTA: [ci 4][ih 5][id 2][kSlabStride] with x column iw at iw + kHalo,
//      16-byte copies of whole 32-float rows (zero fill outside x), zero halo columns iw = -1
//      and 32 written once. Fragments are scalar loads straight from the slab (no im2col: x is
//      read once per CTA); row stride 40 = 8 mod 32 makes them conflict-free.
//   B: [pw 2][k 32][n 64], 16-byte copies, chunks XOR-swizzled by k / 2 (L1_003's layout).
// Epilogue: + b, row sums over 4 values per thread -> shuffles over the 8 mw lanes -> the two
// W-parity warps through shared memory; mean first, then the centered sum of squares (two
// passes, as the FMA path), then (v - mean) rstd gamma[w] + beta[w], gelu_erf, scale, stored from
// registers (stride-2 runs; the other parity's warp fills the other half of each sector).
//
// Thread safety: stateless.

// gelu, erf form (F.gelu's default), shared by both paths.
__device__ __forceinline__ float gelu_erf(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

namespace row_ln {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::mma3_k8;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::split_tf32_frag;
using ::kb::tf32x3::SplitTf32;

constexpr int kW = 32;              // input W the fast path takes (output rows of 2W = 64)
constexpr int kRowOut = 2 * kW;     // LayerNorm length
constexpr int kN = 64;              // channels per CTA (C_out <= 64, zero padded)
constexpr int kRows = 4;            // mh rows per CTA
constexpr int kM = 2 * kRows * kW;  // 256 GEMM rows per CTA
constexpr int kThreads = 256;
constexpr int kWarpsN = 2;
constexpr int kWarpTileN = kN / kWarpsN;  // 32
constexpr int kTaps = 8;                  // (sd, sh, sw)
constexpr int kCiPerStage = 4;
constexpr int kBK = kCiPerStage * kTaps;  // 32
constexpr int kStages = 4;
constexpr int kHalo = 4;         // slab column of iw = 0 (16-byte aligned); iw = -1 at 3
constexpr int kSlabStride = 40;  // >= kHalo + kW + 1, = 8 mod 32 banks
constexpr int kSlabRowsPerCi = (kRows + 1) * 2;  // ih: kRows + 1, id: 2
constexpr int kSlabCiStride = kSlabRowsPerCi * kSlabStride;
constexpr int kAStageFloats = kCiPerStage * kSlabCiStride;  // 1600
constexpr int kBStageFloats = 2 * kBK * kN;                 // 4096 (both W parities)
constexpr int kStageFloats = kAStageFloats + kBStageFloats;
constexpr int kRedFloats = 2 * kRows * kN;                                 // [pw][row][co]
constexpr int kSmemBytes = (kStages * kStageFloats + 2 * kRedFloats) * 4;  // 95,232
constexpr int kAChunks = kCiPerStage * kSlabRowsPerCi * kW / 4;            // 320 copies of 16 B
constexpr int kBCopies = kBStageFloats / 4 / kThreads;                     // 4 per thread
static_assert(kSlabStride % 32 == 8, "A fragment rows (sd, sh) land on distinct bank octets");
static_assert(kSlabStride >= kHalo + kW + 1 && kHalo >= 1 && kHalo % 4 == 0, "halo columns");
static_assert(kAStageFloats % 4 == 0 && kStageFloats % 4 == 0, "16-byte aligned stages");
static_assert(kAChunks <= 2 * kThreads && kBCopies * 4 * kThreads == kBStageFloats, "copy split");
static_assert(kSmemBytes * 2 <= 227 * 1024, "two CTAs per SM");
static_assert(kM == 4 * 64 && kN == kWarpsN * kWarpTileN, "8 warps of 64 x 32");

struct Params {
  const float* x;      // (N, C_in, D, H, 32)
  const float* b_pk;   // (4 (pd, ph), 2 pw, k_pad, 64) packed weights
  const float* bias;   // (C_out)
  const float* gamma;  // (64)
  const float* beta;   // (64)
  float* out;          // (N, C_out, 2D, 2H, 64)
  int n, c_in, c_out, d, h, k_tiles, h_tiles;
  float eps, scale;
  __host__ __device__ int k_pad() const { return k_tiles * kBK; }
  __host__ __device__ int64_t blocks() const { return int64_t{n} * d * 4 * h_tiles; }
};

// ---- packed B: b_pk[pp][pw][k][n], k = 8 ci + 2 t + sw, t = 2 sd + sh ----

__host__ __device__ inline int64_t packed_weight_source(const Params& p, int pp, int pw, int k,
                                                        int n) {
  const int ci = k / kTaps, t = k % kTaps / 2, sw = k % 2;
  const int sd = t / 2, sh = t % 2, pd = pp / 2, ph = pp % 2;
  if (ci >= p.c_in || n >= p.c_out) return -1;
  const int kd = 2 * sd + 1 - pd, kh = 2 * sh + 1 - ph, kw = 2 * sw + 1 - pw;
  return ((int64_t{ci} * p.c_out + n) * 4 + kd) * 16 + kh * 4 + kw;
}

__global__ void __launch_bounds__(256)
    pack_weights_kernel(const float* __restrict__ w, float* __restrict__ b_pk, const Params p) {
  const int64_t total = int64_t{8} * p.k_pad() * kN;
  for (int64_t e = int64_t{blockIdx.x} * 256 + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * 256) {
    const int n = static_cast<int>(e % kN);
    const int k = static_cast<int>(e / kN % p.k_pad());
    const int pw = static_cast<int>(e / kN / p.k_pad() % 2),
              pp = static_cast<int>(e / kN / p.k_pad() / 2);
    const int64_t src = packed_weight_source(p, pp, pw, k, n);
    b_pk[e] = src < 0 ? 0.0f : w[src];
  }
}

// ---- shared layouts ----

// B(k, n) of one W parity: chunk (n / 4) ^ 2 ((k / 2) % 4), so that the 8 lanes of a quarter warp
// (g pair x t) read 8 distinct 16-byte bank groups.
__host__ __device__ constexpr int b_smem_index(int k, int n) {
  return k * kN + (((n >> 2) ^ (((k >> 1) & 3) << 1)) << 2) + (n & 3);
}
// Slab row of (ci, ih - ih0, id - id0).
__host__ __device__ constexpr int slab_row(int ci, int ihl, int idl) {
  return (ci * (kRows + 1) + ihl) * 2 + idl;
}

// What one CTA computes. Block order: parity fastest (4 CTAs on the same x rows run together).
struct Tile {
  int n, pd, ph, md, mh0;
};
__host__ __device__ inline Tile tile_of(const Params& p, int block) {
  Tile t;
  const int pp = block % 4;
  int rest = block / 4;
  t.pd = pp / 2, t.ph = pp % 2;
  t.mh0 = rest % p.h_tiles * kRows;
  rest /= p.h_tiles;
  t.md = rest % p.d;
  t.n = rest / p.d;
  return t;
}

// ---- the loader: A slab rows (1 or 2 copies per thread) and B chunks (4 per thread) ----

struct Loader {
  const float* a[2];  // x row of copy j at the current stage's first channel, or nullptr: zero
  int a_ci[2];        // channel offset of copy j in the stage
  int a_smem[2];      // float offset of copy j in the A stage, -1: no copy
  int c_next;         // first channel of the next stage to load
  const float* b;     // packed B of copy 0 at the next stage
};

__device__ __forceinline__ Loader make_loader(const Params& p, const Tile& t) {
  Loader l;
  for (int j = 0; j < 2; ++j) {
    const int c = threadIdx.x + kThreads * j;  // chunk: (row, 4-float column)
    const int col4 = c % (kW / 4), row = c / (kW / 4);
    const int ci = row / kSlabRowsPerCi, ihl = row % kSlabRowsPerCi / 2, idl = row % 2;
    const int id = t.md + t.pd - 1 + idl, ih = t.mh0 + t.ph - 1 + ihl;
    const bool inside = c < kAChunks && id >= 0 && id < p.d && ih >= 0 && ih < p.h;
    l.a[j] = inside ? p.x + (((int64_t{t.n} * p.c_in + ci) * p.d + id) * p.h + ih) * kW + 4 * col4
                    : nullptr;
    l.a_ci[j] = ci;
    l.a_smem[j] = c < kAChunks ? slab_row(ci, ihl, idl) * kSlabStride + kHalo + 4 * col4 : -1;
  }
  l.c_next = 0;
  const int pp = t.pd * 2 + t.ph;
  l.b = p.b_pk + int64_t{pp} * 2 * p.k_pad() * kN;
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

__device__ __forceinline__ void load_stage(const Params& p, Loader& l, uint32_t stage) {
  const int64_t ci_stride = int64_t{p.d} * p.h * kW;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    if (l.a_smem[j] < 0) continue;
    const bool ok = l.a[j] != nullptr && l.c_next + l.a_ci[j] < p.c_in;
    cp_async_16(stage + l.a_smem[j] * 4, ok ? l.a[j] + l.c_next * ci_stride : p.x, ok);
  }
#pragma unroll
  for (int j = 0; j < kBCopies; ++j) {
    const int tid = threadIdx.x, pw = b_copy_pw(tid, j), k = b_copy_k(tid, j);
    const int n = b_copy_n(tid, j);
    cp_async_16(stage + (kAStageFloats + pw * kBK * kN + b_smem_index(k, n)) * 4,
                l.b + (int64_t{pw} * p.k_pad() + k) * kN + n);
  }
  l.c_next += kCiPerStage;
  l.b += kBK * kN;
}

// Zero halo columns (iw = -1 and iw = 32, and the unused padding) of every slab row of every
// stage; the copies never write them.
__device__ __forceinline__ void zero_halos(float* smem) {
  constexpr int kRowsAll = kStages * kCiPerStage * kSlabRowsPerCi;
  for (int r = threadIdx.x; r < 2 * kRowsAll; r += kThreads) {
    const int row = r / 2, stage = row / (kCiPerStage * kSlabRowsPerCi);
    float* base = smem + stage * kStageFloats + row % (kCiPerStage * kSlabRowsPerCi) * kSlabStride;
    float4* at = reinterpret_cast<float4*>(base + (r % 2 == 0 ? 0 : kHalo + kW));
    *at = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

// ---- fragments ----
// Lane (g, t): k8 column t is (sw 0, sd = t / 2, sh = t % 2), t + 4 is sw 1. m-tile i of warp
// (pw, row pair rp): row r = 2 rp + i / 2, mw = 16 (i % 2) + g (+ 8 for a1, a3).
// a0 = slab(ci, r + 1 - sh, 1 - sd)[mw + pw + kHalo], a2 one column left (sw = 1).
__host__ __device__ constexpr int a_frag_base(int pw, int rp, int lane) {
  return slab_row(0, 2 * rp + 1 - ((lane & 3) & 1), 1 - ((lane & 3) >> 1)) * kSlabStride +
         (lane >> 2) + pw + kHalo;
}
__host__ __device__ constexpr int a_frag_offset(int s, int i) {
  return s * kSlabCiStride + (i / 2) * 2 * kSlabStride + 16 * (i % 2);
}
// B: the float4 at physical row k = 8 s + 2 t + sw, columns 32 warp_n + 4 g + nt.
__host__ __device__ constexpr int b_frag_index(int pw, int warp_n, int lane, int s, int sw) {
  return kAStageFloats + pw * kBK * kN +
         b_smem_index(8 * s + 2 * (lane & 3) + sw, warp_n * kWarpTileN + 4 * (lane >> 2));
}
// Channel of accumulator column 2 t + e of n-tile nt: physical column 4 (2 t + e) + nt.
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
constexpr bool maps_ok() {
  for (int pw = 0; pw < 2; ++pw)
    for (int rp = 0; rp < 2; ++rp)
      for (int s = 0; s < kCiPerStage; ++s)
        for (int i = 0; i < 4; ++i)
          for (int d : {0, 8, -1, 7}) {  // a0, a1, a2, a3
            const auto a = [&](int lane) {
              return a_frag_base(pw, rp, lane) + a_frag_offset(s, i) + d;
            };
            if (!conflict_free_32(a)) return false;
            for (int lane = 0; lane < 32; ++lane) {
              const int col = a(lane) % kSlabStride;
              if (col < kHalo - 1 || col > kHalo + kW) return false;
            }
          }
  for (int pw = 0; pw < 2; ++pw)
    for (int wn = 0; wn < kWarpsN; ++wn)
      for (int s = 0; s < kCiPerStage; ++s)
        for (int sw = 0; sw < 2; ++sw) {
          const auto b = [&](int lane) { return b_frag_index(pw, wn, lane, s, sw); };
          if (!conflict_free_128(b)) return false;
          for (int lane = 0; lane < 32; ++lane)
            if (b(lane) - b_frag_index(pw, wn, lane, 0, 0) != (8 * s + sw) * kN) return false;
        }
  return true;
}
static_assert(maps_ok(), "fragment loads conflict-free, inside the slab, base + constant forms");

// ---- main loop ----

// acc += the 3xTF32 product of one stage (4 k8 steps, one input channel each).
__device__ __forceinline__ void mma_stage(const float* stage, int a_base, int b_base,
                                          float (&acc)[4][4][4]) {
#pragma unroll 1
  for (int s = 0; s < kCiPerStage; ++s) {
    uint32_t b_big[4][2], b_small[4][2];
#pragma unroll
    for (int sw = 0; sw < 2; ++sw) {
      const float4 v = *reinterpret_cast<const float4*>(stage + b_base + (8 * s + sw) * kN);
      const float comp[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const SplitTf32 x = split_tf32(comp[nt]);
        b_big[nt][sw] = x.big, b_small[nt][sw] = x.small;
      }
    }
    const float* a = stage + a_base + s * kSlabCiStride;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float* ai = a + (i / 2) * 2 * kSlabStride + 16 * (i % 2);
      // a0 (row g, col t), a1 (g + 8, t), a2 (g, t + 4: one column left), a3 (g + 8, t + 4)
      const float src[4] = {ai[0], ai[8], ai[-1], ai[7]};
      uint32_t a_big[4], a_small[4];
      split_tf32_frag(src, a_big, a_small);
      mma3_k8(acc[i], a_big, a_small, b_big, b_small);  // small terms first
    }
  }
}

// ---- epilogue ----

// Per (row half rl, n-tile nt, column e): the thread's 4 values (m-tiles 2 rl, 2 rl + 1; rows g,
// g + 8), squared when kSquares, summed, then over the warp's 8 mw lanes g: the sum over the
// row's 32 values of parity pw.
template <bool kSquares>
__device__ __forceinline__ void row_sums(const float (&v)[4][4][4], float (&sum)[2][4][2]) {
  const auto f = [](float a) { return kSquares ? a * a : a; };
#pragma unroll
  for (int rl = 0; rl < 2; ++rl)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float s = (f(v[2 * rl][nt][e]) + f(v[2 * rl][nt][2 + e])) +
                  (f(v[2 * rl + 1][nt][e]) + f(v[2 * rl + 1][nt][2 + e]));
#pragma unroll
        for (int off = 4; off < 32; off *= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
        sum[rl][nt][e] = s;
      }
}

// Both W parities' partial sums through red ([pw][row][co]); returns the full row sums.
__device__ __forceinline__ void exchange(float* red, int pw, int rp, int warp_n, int lane,
                                         float (&sum)[2][4][2]) {
  if (lane < 4)
#pragma unroll
    for (int rl = 0; rl < 2; ++rl)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          red[(pw * kRows + 2 * rp + rl) * kN + acc_channel(warp_n, lane, nt, e)] = sum[rl][nt][e];
  __syncthreads();
#pragma unroll
  for (int rl = 0; rl < 2; ++rl)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int at = (2 * rp + rl) * kN + acc_channel(warp_n, lane, nt, e);
        sum[rl][nt][e] = red[at] + red[kRows * kN + at];
      }
}

__device__ __forceinline__ void epilogue(const Params& p, const Tile& t, float* red,
                                         float (&acc)[4][4][4]) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_n = warp % kWarpsN, warp_m = warp / kWarpsN;
  const int pw = warp_m / 2, rp = warp_m % 2, g = lane >> 2;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int co = acc_channel(warp_n, lane, nt, e);
      const float b = co < p.c_out ? __ldg(p.bias + co) : 0.0f;
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[i][nt][e] += b, acc[i][nt][2 + e] += b;
    }
  constexpr float kInvLen = 1.0f / kRowOut;  // a power of two: sum * kInvLen is exact
  float stat[2][4][2];  // row sums, then sums of squares, then rstd, per (rl, nt, e)
  row_sums<false>(acc, stat);
  exchange(red, pw, rp, warp_n, lane, stat);
#pragma unroll
  for (int i = 0; i < 4; ++i)  // two-pass variance: center first
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][nt][c] -= stat[i / 2][nt][c % 2] * kInvLen;
  row_sums<true>(acc, stat);
  exchange(red + kRedFloats, pw, rp, warp_n, lane, stat);
#pragma unroll
  for (int rl = 0; rl < 2; ++rl)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) stat[rl][nt][e] = rsqrtf(stat[rl][nt][e] * kInvLen + p.eps);

  // out[n, co, od, oh, w]: w = 2 mw + pw, mw = 16 (i % 2) + g + 8 h (h: accumulator row half).
  const int od = 2 * t.md + t.pd;
  float gam[4], bet[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {  // q = 2 (i % 2) + h
    const int w = 2 * (16 * (q / 2) + g + 8 * (q % 2)) + pw;
    gam[q] = __ldg(p.gamma + w), bet[q] = __ldg(p.beta + w);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int mh = t.mh0 + 2 * rp + i / 2;
    if (mh >= p.h) continue;
    const int64_t row = (int64_t{t.n} * p.c_out * 2 * p.d + od) * 2 * p.h + 2 * mh + t.ph;
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int co = acc_channel(warp_n, lane, nt, c % 2), q = 2 * (i % 2) + c / 2;
        if (co >= p.c_out) continue;
        const float z = acc[i][nt][c] * stat[i / 2][nt][c % 2] * gam[q] + bet[q];
        const int w = 2 * (16 * (i % 2) + g + 8 * (c / 2)) + pw;
        p.out[(row + int64_t{co} * 4 * p.d * p.h) * kRowOut + w] = gelu_erf(z) * p.scale;
      }
  }
}

__global__ void __launch_bounds__(kThreads, 2) row_ln_kernel(const Params p) {
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_n = warp % kWarpsN, warp_m = warp / kWarpsN;
  const int pw = warp_m / 2, rp = warp_m % 2;
  const Tile tile = tile_of(p, blockIdx.x);
  Loader loader = make_loader(p, tile);
  zero_halos(smem);
  const int a_base = a_frag_base(pw, rp, lane), b_base = b_frag_index(pw, warp_n, lane, 0, 0);
  float acc[4][4][4];
  tf32x3::mainloop<kStages, kStageFloats>(
      smem, p.k_tiles, acc, [&](uint32_t stage, int) { load_stage(p, loader, stage); },
      [&](const float* stage, float(&c)[4][4][4]) { mma_stage(stage, a_base, b_base, c); });
  epilogue(p, tile, smem + kStages * kStageFloats, acc);
}

}  // namespace row_ln

// ==== The launcher and the generic FMA path ====

constexpr int kCoPerCta = 64;     // two warps' worth of channels per w group
constexpr int kMPerThread = 8;    // input columns per thread -> 16 outputs
constexpr int kHalo = 4;          // zero columns left of x in the slab (aligned float4 loads)
constexpr int kMaxWGroups = 8;    // 64 x 8 = 512 threads; W <= 64
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
    slab[i] = ok ? __ldg(p.x + ((((int64_t{n} * p.c_in + ci) * p.d + id) * p.h + ih) * p.w + iw))
                 : 0.0f;
  }
}

// Block: 64 * w_groups threads; grid: (2H * 2D, N, co tiles). Thread (lane, half, w group g):
// channel co0 + 32 half + lane, outputs w = 16 g .. 16 g + 15 of row (n, co, od, oh).
__global__ void __launch_bounds__(kCoPerCta * kMaxWGroups)
    convt_ln_gelu_kernel(const Args p) {
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
  const float4* wq = reinterpret_cast<const float4*>(p.w_r) +
                     int64_t{(pd * 2 + ph) * p.c_in} * 4 * p.co_pad + co;
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
      out[w0 + j] = gelu_erf(z) * p.scale;
    }
}

// ---- host side ----

class ConvTLayerNormGelu final : public Implementation {
 public:
  ~ConvTLayerNormGelu() override {
    KB_CUDA_WARN(cudaFree(w_r_));
    KB_CUDA_WARN(cudaFree(b_pk_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    gamma_ = param_index(p, "layer_norm.weight");
    beta_ = param_index(p, "layer_norm.bias");
    KB_TRY(read_geometry(p));
    a_.eps = static_cast<float>(p.number("layer_norm", "eps"));
    a_.scale = static_cast<float>(p.number("scale", "value"));
    KB_CUDA_TRY(cudaMalloc(&w_r_, size_t(16) * a_.c_in * a_.co_pad * 4 * sizeof(float)));
    KB_CUDA_TRY(cudaFuncSetAttribute(convt_ln_gelu_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_));
    return setup_fast_path();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;
    if (fast_ && reinterpret_cast<uintptr_t>(x) % 16 == 0) return run_fast(args, stream);
    Args a = a_;
    a.x = x;
    a.w_r = w_r_;
    a.bias = args.params[bias_].data;
    a.gamma = args.params[gamma_].data;
    a.beta = args.params[beta_].data;
    a.out = args.output.data;
    const int w_floats = 16 * a.c_in * a.co_pad * 4;
    reorder_weight_kernel<<<(w_floats + 255) / 256, 256, 0, stream>>>(
        args.params[weight_].data, w_r_, a.c_in, a.c_out, a.co_pad);
    KB_CUDA_TRY(cudaGetLastError());
    const dim3 grid(static_cast<unsigned>(4 * a.d * a.h), static_cast<unsigned>(n_),
                    static_cast<unsigned>(a.co_pad / kCoPerCta));
    convt_ln_gelu_kernel<<<grid, kCoPerCta * a.w_groups, smem_bytes_, stream>>>(a);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  // The 3xTF32 path (the fast-path section below) takes W = 32 and C_out <= 64; x must also be
  // 16-byte aligned, checked per call.
  Status setup_fast_path() {
    namespace rl = row_ln;
    fast_ = a_.w == rl::kW && a_.c_out <= rl::kN && a_.c_in >= 1;
    if (!fast_) return Status::ok();
    fp_ = {};
    fp_.n = n_, fp_.c_in = a_.c_in, fp_.c_out = a_.c_out, fp_.d = a_.d, fp_.h = a_.h;
    fp_.k_tiles = (a_.c_in + rl::kCiPerStage - 1) / rl::kCiPerStage;
    fp_.h_tiles = (a_.h + rl::kRows - 1) / rl::kRows;
    fp_.eps = a_.eps, fp_.scale = a_.scale;
    if (fp_.blocks() >= 0x7fffffff) {
      fast_ = false;
      return Status::ok();
    }
    KB_CUDA_TRY(cudaMalloc(&b_pk_, size_t(8) * fp_.k_pad() * rl::kN * sizeof(float)));
    KB_CUDA_TRY(cudaFuncSetAttribute(rl::row_ln_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, rl::kSmemBytes));
    KB_CUDA_TRY(cudaFuncSetAttribute(rl::row_ln_kernel,
                                     cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
    return Status::ok();
  }

  Status run_fast(const ImplArgs& args, cudaStream_t stream) {
    namespace rl = row_ln;
    rl::Params p = fp_;
    p.x = args.inputs[x_].data;
    p.b_pk = b_pk_;
    p.bias = args.params[bias_].data;
    p.gamma = args.params[gamma_].data;
    p.beta = args.params[beta_].data;
    p.out = args.output.data;
    const int pack_blocks = (8 * p.k_pad() * rl::kN + 255) / 256;
    rl::pack_weights_kernel<<<pack_blocks, 256, 0, stream>>>(args.params[weight_].data, b_pk_, p);
    KB_CUDA_TRY(cudaGetLastError());
    rl::row_ln_kernel<<<static_cast<unsigned>(p.blocks()), rl::kThreads, rl::kSmemBytes, stream>>>(
        p);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  static std::vector<int64_t> ints_or(const ProblemInstance& p, const char* attr, int64_t fill) {
    return p.has_attr("conv_transpose", attr) ? p.ints("conv_transpose", attr)
                                              : std::vector<int64_t>(3, fill);
  }

  // ConvTranspose3d k 4, stride 2, padding 1 (every size doubles), LayerNorm over 2W.
  Status read_geometry(const ProblemInstance& p) {
    const Shape& xs = p.shape_of("x");                      // (N, C_in, D, H, W)
    const Shape& ws = p.shape_of("conv_transpose.weight");  // (C_in, C_out, 4, 4, 4)
    const Shape& ys = p.shape_of("y");                      // (N, C_out, 2D, 2H, 2W)
    const std::vector<int64_t> st = ints_or(p, "stride", 1), pad = ints_or(p, "padding", 0),
                               opad = ints_or(p, "output_padding", 0),
                               dil = ints_or(p, "dilation", 1);
    const int64_t groups =
        p.has_attr("conv_transpose", "groups") ? p.int_attr("conv_transpose", "groups") : 1;
    bool ok = xs.size() == 5 && ws.size() == 5 && ys.size() == 5 && groups == 1 &&
              ws[0] == xs[1] && ys[1] == ws[1] && st.size() == 3 && pad.size() == 3 &&
              opad.size() == 3 && dil.size() == 3 &&
              element_count(p.shape_of("layer_norm.weight")) == 2 * xs[4];
    for (int i = 0; ok && i < 3; ++i)
      ok = ws[2 + i] == 4 && st[i] == 2 && pad[i] == 1 && opad[i] == 0 && dil[i] == 1 &&
           ys[2 + i] == 2 * xs[2 + i];
    if (!ok || xs[4] > kMPerThread * kMaxWGroups || 4 * xs[2] * xs[3] > 0x7fffffff ||
        xs[0] > 65535 || xs[1] * ws[1] > (1 << 24))
      return Status::failed_precondition(
          "L2_034 custom: needs ConvTranspose3d(k 4, s 2, p 1), W <= 64, LayerNorm over 2W");
    n_ = static_cast<int>(xs[0]);
    a_.c_in = static_cast<int>(xs[1]), a_.c_out = static_cast<int>(ws[1]);
    a_.co_pad = (a_.c_out + kCoPerCta - 1) / kCoPerCta * kCoPerCta;
    a_.d = static_cast<int>(xs[2]), a_.h = static_cast<int>(xs[3]), a_.w = static_cast<int>(xs[4]);
    a_.w_groups = (a_.w + kMPerThread - 1) / kMPerThread;
    a_.w_pad = kMPerThread * a_.w_groups + 2 * kHalo;  // covers columns mb - 4 .. mb + 11
    smem_bytes_ = (a_.c_in * 4 * a_.w_pad + a_.w_groups * kCoPerCta) * int(sizeof(float));
    if (smem_bytes_ > 227 * 1024)
      return Status::failed_precondition("L2_034 custom: the x slab exceeds shared memory");
    return Status::ok();
  }

  size_t x_ = 0, weight_ = 0, bias_ = 0, gamma_ = 0, beta_ = 0;
  int n_ = 0, smem_bytes_ = 0;
  Args a_{};                // sizes; pointers are filled per call
  float* w_r_ = nullptr;    // reordered weight, rewritten every call
  bool fast_ = false;       // the 3xTF32 row-LayerNorm path applies
  row_ln::Params fp_{};     // its sizes; pointers are filled per call
  float* b_pk_ = nullptr;   // its packed weight, rewritten every call
};

}  // namespace kb::custom::L2_034

KB_REGISTER_IMPLEMENTATION(L2_034, custom, kb::custom::L2_034::ConvTLayerNormGelu)
