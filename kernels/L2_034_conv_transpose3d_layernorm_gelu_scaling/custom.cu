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
// Design (row_ln below; its tiles use kernels/cores/tf32x3/mma.cuh and mainloop.cuh): per output
// parity (pd, ph, pw) the conv is a dense implicit GEMM, K = 8 C_in (2 taps per axis); 3xTF32 on
// mma.sync m16n8k8. A CTA owns 128 / kW output rows x both W parities x 64 channels (M = 256,
// N = 64), kW = W rounded up to 16, 32 or 64 (every W from 13 the layer allows up to 64: C_out =
// 2W, so C_out <= 128, in channel blocks of 64), so each LayerNorm row (n, co, od, oh) is reduced
// on the accumulators (shuffles + one shared exchange between the two W-parity warps, two passes),
// then gamma/beta, gelu and scale, one store. A is read straight from an x slab in shared memory
// (no im2col duplication): 16-byte copies of whole x rows when W % 4 == 0 and x is 16-byte
// aligned, else 4-byte copies; B (weights re-packed per call) streams through the cp.async
// pipeline. Full preset: 16,384 CTAs of 12,288 MMAs, 2 per SM. Rows of W <= 12, and layers of
// <= 32 M multiply-adds (more where row_ln's tile is mostly padding), run a strict-fp32 FMA kernel
// instead: rows of W <= 16 narrow.cuh's (a thread per output row and 2 channels), longer ones fma
// below (a CTA per output row and channel block); see the class for the measured limits.
// Rows longer than 128 (W > 64, C_out = 2W > 128) take neither: the generic gather writes the
// conv and a warp per row normalizes it in place (wide below; correct, not tuned).
// (Until 2026-12-03 the kernel took W = 32 only, and every other shape ran a strict-fp32 FMA
// kernel, 2.2x slower at the full preset: 6.03 against 2.79 ms.)
//
// Predicted on the H200 (W = 32): 201M MMAs per call, the same CTA shape and MMA count per CTA
// as the L2_091 / L2_093 parity core (49 TFLOP/s effective on L2_093 incl. its erff epilogue):
// ~2.6-2.9 ms. Measured: 2.79 ms (2026-11-30, docs/kernels.md; 47.6 TFLOP/s),
// 2.786 ms in docs/bench-h200-2026-12-02b.json (1.41x the floor): under the 3.17 ms goal.
// Rows shorter than kW waste GEMM rows (W = 9 computes 16 columns), and C_out < 64 wastes
// channels: those shapes run at a fraction of the tile's rate, still on the tensor cores.
// Session 10 (every W; `kb bench L2_034 --time-cap 3 --seed 7`, seeds 7 and 8): full preset
// 2.857 / 2.855 ms against 2.766 in session 9 (+3.3%; an A/B with session 9's pack and ncu: the
// same mainloop, +332 instructions per warp in the epilogue's 64-bit store addresses, see
// docs/kernels.md). With 32-bit offsets within a channel block (session 11, `kb bench L2_034
// --time-cap 2 --seed 7` / `--seed 8`): 2.622 / 2.601 ms. Small layers: ncu of the part8 preset (W
// 5, 144 CTAs of 8 k-tiles) shows 13.2 K instructions per warp at 5.4 cycles each with 8-16 warps
// per SM: one CTA's serial k-loop sets the time (70 us against the reference's 38), hence the
// FMA kernel below 32 M multiply-adds. Sweeps (`--sweep 8`): seed 2026 worst 2.42x the
// reference; seed 99 worst 0.89x (N 1, C_in 26, C_out 18, D 5, H 31, W 9: 48 against 43 us).
// Session 22: narrow.cuh takes rows of W <= 12 at every size and W <= 16 under the FMA limits
// (row_ln's kW 8 tiles dropped); sweeps seeds 5 and 77 worst 2.52x / 2.29x.
//
// Accuracy: 3xTF32 ~ fp32 products, K = 256 summed in the MMA accumulator. LayerNorm divides the
// conv's error by the row's sigma (amplification ~12; host emulation of the index maps: <= 1.2%
// of the tolerance). The row statistics are two-pass in fp32 (mean first, then the centred sum
// of squares over 64 values): no E[y^2] - mean^2 cancellation, so a shifted input costs no
// digits. rsqrtf (~2 ulp) for 1/sigma; gelu by A&S's erf (kernels/cores/gelu.cuh, <= 1e-6 from
// gelu in double; session 15: 2.622 -> 2.568 ms, max |err| 1.48e-5 -> 1.50e-5), the
// multiplications as the reference. Measured max |err| 1.5e-5 at the full preset (bench
// 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed.
// Robustness trials (small preset, seed 7, vs the golden model; measured on the FMA kernel this
// kernel replaced at W = 5; the robust preset's trials run W = 32):
// shift (x + 100) 0.011x the tolerance (reference 0.007x), scale (x 1000) 0.006x (0.004x),
// centered 0.004x (0.003x), random_affine (gamma, beta) 0.008x (0.006x).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/L2_034_conv_transpose3d_layernorm_gelu_scaling/narrow.cuh"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/gelu.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_034 {

// ==== row_ln: ConvTranspose3d(k 4, s 2, p 1) + bias + LayerNorm over the 2W output columns of
// each row + gelu_erf + scale, as one implicit GEMM per output parity in error-compensated TF32
// (3xTF32, mma.sync m16n8k8) with the row LayerNorm fused.
//
// Owns: the CTA geometry per row length (Geometry<kW>), the weight pack kernel and the fused
// kernel; the class below checks the layer and launches them.
//
// Math: output o = 2m + p (parity p) gets 2 taps per axis, s in {0, 1}: input i = m + p - s,
// kernel t = 2s + 1 - p. For parity (pd, ph, pw), with k = (ci, sd, sh, sw) (K = 8 C_in):
//   y[n, co, 2md + pd, 2mh + ph, 2mw + pw] = b[co] + sum_k A[(n, md, mh, mw), k] B_p[k, co]
//   A = x[n, ci, md + pd - sd, mh + ph - sh, mw + pw - sw] (0 outside x),
//   B_p = w[ci, co, 2sd + 1 - pd, 2sh + 1 - ph, 2sw + 1 - pw] (packed per call, zero padded).
//
// CTA: (n, pd, ph, md, kRows = 128 / kW rows mh0.., channel block cb) x 64 channels x both W
// parities: M = 2 pw x kRows x kW = 256, N = 64, so every output row (n, co, od, oh) lies in one
// CTA and the LayerNorm runs on the accumulators. 8 warps: warp_m (0..3) = (pw, half of the
// parity's 128 GEMM rows), warp_n (0..1) = 32 channels; warp tile 64 x 32 (4 m-tiles x 4 n-tiles
// of 8 channels); GEMM row m of a parity is output row m / kW, column m % kW (columns >= W are
// computed on zeros and dropped). Stages of 4 input channels (k = 32, 4 k8 steps: one channel
// each, k8 column t + 4 sw with t = 2 sd + sh), 3-4 stage cp.async pipeline:
//   A: the x slab of the CTA: [ci 4][ih kRows + 1][id 2][kSlabStride] with x column iw at
//      iw + kHalo (zero fill outside x; the halo columns iw = -1 and iw >= W zeroed once).
//      Fragments are scalar loads straight from the slab (no im2col: x is read once per CTA);
//      row strides of 8 or 24 mod 32 make them conflict-free (maps_ok checks every kW).
//   B: [pw 2][k 32][n 64], 16-byte copies, chunks XOR-swizzled by k / 2 (L1_003's layout).
// Epilogue: + b, per row the thread's values -> shuffles over the 8 mw lanes -> the two W-parity
// warps through shared memory; mean first, then the centered sum of squares (two passes), then
// (v - mean) rstd gamma[w] + beta[w], gelu_erf, scale, stored from registers (stride-2 runs; the
// other parity's warp fills the other half of each sector).
//
// Thread safety: stateless.

namespace row_ln {

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
      const float4 v = *reinterpret_cast<const float4*>(stage + b_base + (8 * s + sw) * kN);
      const float comp[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const SplitTf32 x = split_tf32(comp[nt]);
        b_big[nt][sw] = x.big, b_small[nt][sw] = x.small;
      }
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

}  // namespace row_ln

// ==== fma: the strict-fp32 kernel for small layers ====
// A CTA per (n, od, oh, 64-channel block): the x slab x[n][:, 2 d taps, 2 h taps, :] in shared
// memory with a zero halo; thread (co, w group) computes 16 consecutive outputs of its channel's
// row (8 input columns x both W parities): per (ci, sd, sh) one float4 of weights (4 kw) and 4
// broadcast float4 of x feed 32 FMAs; the row's LayerNorm (two-pass mean / variance over the w
// groups through shared memory), gamma/beta, gelu and scale in registers, one store. Short
// serial work per CTA: below kFmaMaxMacs it beats row_ln's 256 x 64 tiles (see the class). Rows
// of W <= 16 run narrow.cuh's kernel instead (here 6 of 32 lanes work at C_out 6).

namespace fma {

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

// Block: 64 * w_groups threads (32 * w_groups when C_out <= 32: half 0 only); grid: (2H * 2D, N,
// co tiles). Thread (lane, half, w group g): channel co0 + 32 half + lane, outputs w = 16 g ..
// 16 g + 15 of row (n, co, od, oh).
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
      out[w0 + j] = gelu_erf_fast(z) * p.scale;
    }
}

}  // namespace fma

// ==== wide: rows of more than 128 values (W > 64), which neither kernel above takes ====
// The conv by the generic gather (kernels/cores/conv_transpose_gather/gather.cuh) straight into
// the output, then a warp per row adds the bias and normalizes in place: mean, then the centred
// sum of squares (two passes, the row re-read from L1/L2), gamma/beta, gelu and scale. Not fast:
// a fallback so that every C_out = 2W the model allows runs. H200 (session 11, `kb bench L2_034
// --preset wide`): max |err| 2.3e-6, 0.094 ms against the reference's 0.081 (0.86x); the GPU tests'
// `wide` preset checks it against the golden model.
namespace wide {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

struct Args {
  float* y;  // (rows, len): the conv's output, normalized in place
  const float* bias;
  const float* gamma;
  const float* beta;
  int64_t rows, rows_per_channel;  // rows = N C_out 2D 2H; channel co = row / rpc % C_out
  int len, c_out;                  // len = 2W
  float eps, scale;
};

__global__ void __launch_bounds__(kThreads) row_norm_kernel(const Args a) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t row = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32; row < a.rows;
       row += int64_t{gridDim.x} * kWarps) {
    float* y = a.y + row * a.len;
    const float bias = __ldg(a.bias + row / a.rows_per_channel % a.c_out);
    float sum = 0.0f;
    for (int i = lane; i < a.len; i += 32) sum += y[i] + bias;
    const float mean = cores::warp_sum(sum) / static_cast<float>(a.len);
    float sq = 0.0f;
    for (int i = lane; i < a.len; i += 32) {
      const float d = y[i] + bias - mean;
      sq = fmaf(d, d, sq);
    }
    const float rstd = rsqrtf(cores::warp_sum(sq) / static_cast<float>(a.len) + a.eps);
    for (int i = lane; i < a.len; i += 32)
      y[i] = gelu_erf_fast((y[i] + bias - mean) * rstd * __ldg(a.gamma + i) + __ldg(a.beta + i)) *
             a.scale;
  }
}

}  // namespace wide

// ==== host side ====

class ConvTLayerNormGelu final : public Implementation {
 public:
  ~ConvTLayerNormGelu() override {
    KB_CUDA_WARN(cudaFree(b_pk_));
    KB_CUDA_WARN(cudaFree(w_r_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    namespace rl = row_ln;
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    gamma_ = param_index(p, "layer_norm.weight");
    beta_ = param_index(p, "layer_norm.bias");
    KB_TRY(read_geometry(p));
    params_.eps = static_cast<float>(p.number("layer_norm", "eps"));
    params_.scale = static_cast<float>(p.number("scale", "value"));
    if (params_.w > row_ln::kMaxW) {
      KB_ASSIGN_OR_RETURN(wide_, gather::read_conv_transpose(p, "conv_transpose"));
      return Status::ok();
    }
    use_fma_ = setup_fma(!row_ln_fits());
    if (use_fma_ && use_narrow_) {  // w_r_: an aligned copy of a misaligned weight
      KB_CUDA_TRY(cudaMalloc(&w_r_, size_t(64) * params_.c_in * params_.c_out * sizeof(float)));
      return Status::ok();
    }
    if (use_fma_) {
      KB_CUDA_TRY(cudaMalloc(&w_r_, size_t(16) * fma_.c_in * fma_.co_pad * 4 * sizeof(float)));
      KB_CUDA_TRY(cudaFuncSetAttribute(fma::convt_ln_gelu_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, fma_smem_));
      return Status::ok();
    }
    if (!row_ln_fits())
      return Status::failed_precondition(
          "L2_034 custom: neither kernel takes this layer (a sample's channel block >= 2^31 "
          "outputs, N > 65535)");
    w_pad_ = rl::padded_width(params_.w);
    params_.k_tiles = (params_.c_in + rl::kCiPerStage - 1) / rl::kCiPerStage;
    params_.h_tiles = (params_.h + rl::rows_per_cta(w_pad_) - 1) / rl::rows_per_cta(w_pad_);
    params_.co_blocks = (params_.c_out + rl::kN - 1) / rl::kN;
    if (params_.blocks() >= 0x7fffffff)
      return Status::failed_precondition("L2_034 custom: more than 2^31 CTAs");
    KB_CUDA_TRY(cudaMalloc(
        &b_pk_, size_t(8) * params_.co_blocks * params_.k_pad() * rl::kN * sizeof(float)));
    return rl::allow(w_pad_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    namespace rl = row_ln;
    if (wide_.rank != 0) return run_wide(args, stream);
    if (use_fma_) return run_fma(args, stream);
    rl::Params p = with_tensors(params_, args);
    p.b_pk = b_pk_;
    const int64_t packed = int64_t{8} * p.co_blocks * p.k_pad() * rl::kN;
    rl::pack_weights_kernel<<<static_cast<unsigned>(std::min<int64_t>((packed + 255) / 256, 65535)),
                              256, 0, stream>>>(args.params[weight_].data, b_pk_, p);
    KB_CUDA_TRY(cudaGetLastError());
    const bool full = p.w == w_pad_ && reinterpret_cast<uintptr_t>(p.x) % 16 == 0;
    return rl::launch(p, w_pad_, full, stream);
  }

 private:
  // `sizes` (either kernel's parameters) with this call's tensors.
  template <class KernelParams>
  KernelParams with_tensors(KernelParams sizes, const ImplArgs& args) const {
    sizes.x = args.inputs[x_].data;
    sizes.bias = args.params[bias_].data;
    sizes.gamma = args.params[gamma_].data;
    sizes.beta = args.params[beta_].data;
    sizes.out = args.output.data;
    return sizes;
  }

  // Layers of at most this many multiply-adds run the FMA kernel: row_ln's CTAs (M 256 x N 64,
  // a 3-4 stage pipeline, two barriers in the epilogue) take ~30 us at the sweep's tiny shapes
  // (N 3, C_in 1, C_out 6: 31 us against the FMA kernel's 10.5; N 13, C_in 14, C_out 6, 7 x 9 x
  // 3: 41 us, the FMA kernel 37, the reference 38). Above it the GPU tests' row-kernel presets
  // (robust, full16 .. part64: 33-48 M, within the golden model's budget) keep every kW tested.
  static constexpr double kFmaMaxMacs = 32e6;
  // ... and, where row_ln's tile would mostly compute padding (rows of W in kW columns, C_out in
  // 64-channel blocks: the tile's multiply-adds over the layer's, `waste`, of 8 or more), up to
  // kFmaMaxMacs x kFmaWasteCap: N 64, C_in 32, C_out 6, 15 x 5 x 3 (177 M, waste 28) took 781
  // us on row_ln, 308 on fma, the reference 161 (session 22; narrow.cuh now 39).
  static constexpr double kFmaWasteCap = 8;
  // Rows of W <= kNarrowW (C_out <= 24: row_ln's rows pad to 16 columns and its 64-channel block
  // is mostly padding) run narrow.cuh's kernel at every size: N 32, C_in 32, C_out 16, 16 x 32 x 8
  // (4.3 G multiply-adds) 452 us against row_ln's 755, N 16, C_in 32, C_out 24, 16 x 16 x 12
  // 215 against 430, N 32, C_in 24, C_out 18, 8 x 16 x 9 162 against 353 (session 22). At W 16
  // row_ln was 2x faster (N 8 and 32, C_in 32, 16 x 32 x 16: 357 / 740 us, 1,368 / 2,778), so
  // rows of 13..16 take narrow.cuh only under the FMA kernels' limits above.
  static constexpr int kNarrowW = 12;

  // The FMA kernels' sizes (narrow's at W <= 16, else fma's); false when the layer is above
  // kFmaMaxMacs (unless `required`: row_ln cannot take it) or outside fma's limits (grid y = N <=
  // 65535, the x slab in shared memory; narrow has none).
  // row_ln addresses a channel block's outputs with 32-bit offsets.
  bool row_ln_fits() const {
    return int64_t{row_ln::kN} * 8 * params_.d * params_.h * params_.w < 0x7fffffff;
  }

  bool setup_fma(bool required) {
    const double macs =
        64.0 * params_.n * params_.c_in * params_.c_out * params_.d * params_.h * params_.w;
    const double waste =
        double(row_ln::padded_width(params_.w)) / params_.w *
        (double((params_.c_out + row_ln::kN - 1) / row_ln::kN) * row_ln::kN / params_.c_out);
    const double limit = waste >= kFmaWasteCap ? kFmaMaxMacs * kFmaWasteCap : kFmaMaxMacs;
    use_narrow_ = false;
    if (macs > limit && params_.w > kNarrowW && !required) return false;
    use_narrow_ = params_.w <= narrow::kMaxW;
    if (use_narrow_) {
      narrow_ = {};
      narrow_.rows = int64_t{params_.n} * 4 * params_.d * params_.h;
      narrow_.c_in = params_.c_in, narrow_.c_out = params_.c_out;
      narrow_.co_pairs = (params_.c_out + narrow::kCo - 1) / narrow::kCo;
      narrow_.d = params_.d, narrow_.h = params_.h;
      narrow_.eps = params_.eps, narrow_.scale = params_.scale;
      return true;
    }
    if (params_.n > 65535) return false;
    fma_ = {};
    fma_.c_in = params_.c_in, fma_.c_out = params_.c_out;
    fma_.co_pad = (fma_.c_out + fma::kCoPerCta - 1) / fma::kCoPerCta * fma::kCoPerCta;
    fma_.d = params_.d, fma_.h = params_.h, fma_.w = params_.w;
    fma_.w_groups = (fma_.w + fma::kMPerThread - 1) / fma::kMPerThread;
    fma_.w_pad = fma::kMPerThread * fma_.w_groups + 2 * fma::kHalo;  // columns mb - 4 .. mb + 11
    fma_.eps = params_.eps, fma_.scale = params_.scale;
    fma_smem_ = (fma_.c_in * 4 * fma_.w_pad + fma_.w_groups * fma::kCoPerCta) * int(sizeof(float));
    return fma_smem_ <= 227 * 1024;
  }

  Status run_fma(const ImplArgs& args, cudaStream_t stream) {
    if (use_narrow_) return run_narrow(args, stream);
    fma::Args a = with_tensors(fma_, args);
    a.w_r = w_r_;
    const int w_floats = 16 * a.c_in * a.co_pad * 4;
    fma::reorder_weight_kernel<<<(w_floats + 255) / 256, 256, 0, stream>>>(
        args.params[weight_].data, w_r_, a.c_in, a.c_out, a.co_pad);
    KB_CUDA_TRY(cudaGetLastError());
    const dim3 grid(static_cast<unsigned>(4 * a.d * a.h), static_cast<unsigned>(params_.n),
                    static_cast<unsigned>(a.co_pad / fma::kCoPerCta));
    const int channel_lanes = a.c_out <= 32 ? 32 : fma::kCoPerCta;  // no idle warp at C_out <= 32
    fma::convt_ln_gelu_kernel<<<grid, channel_lanes * a.w_groups, fma_smem_, stream>>>(a);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Status run_narrow(const ImplArgs& args, cudaStream_t stream) {
    narrow::Args a = with_tensors(narrow_, args);
    const float* w = args.params[weight_].data;
    if (reinterpret_cast<uintptr_t>(w) % 16 != 0) {  // the kernel reads it as float4s
      KB_CUDA_TRY(cudaMemcpyAsync(w_r_, w, size_t(64) * a.c_in * a.c_out * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream));
      w = w_r_;
    }
    a.w4 = reinterpret_cast<const float4*>(w);
    return narrow::launch(a, params_.w, stream);
  }

  Status run_wide(const ImplArgs& args, cudaStream_t stream) {
    KB_TRY(gather::launch_generic(args.inputs[x_].data, args.params[weight_].data, args.output.data,
                                  wide_, stream));
    wide::Args a{args.output.data,
                 args.params[bias_].data,
                 args.params[gamma_].data,
                 args.params[beta_].data,
                 int64_t{params_.n} * params_.c_out * 4 * params_.d * params_.h,
                 int64_t{4} * params_.d * params_.h,
                 2 * params_.w,
                 params_.c_out,
                 params_.eps,
                 params_.scale};
    const int64_t blocks = std::min<int64_t>((a.rows + wide::kWarps - 1) / wide::kWarps, 1 << 20);
    wide::row_norm_kernel<<<static_cast<unsigned>(blocks), wide::kThreads, 0, stream>>>(a);
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
    if (!ok || xs[0] * xs[1] * xs[2] * xs[3] * xs[4] > 0x7fffffff ||
        xs[0] * ws[1] * ys[2] * ys[3] > 0x7fffffff)
      return Status::failed_precondition(
          "L2_034 custom: needs ConvTranspose3d(k 4, s 2, p 1), LayerNorm over 2W, fewer than "
          "2^31 input elements and output rows");
    params_ = {};
    params_.n = static_cast<int>(xs[0]);
    params_.c_in = static_cast<int>(xs[1]), params_.c_out = static_cast<int>(ws[1]);
    params_.d = static_cast<int>(xs[2]), params_.h = static_cast<int>(xs[3]);
    params_.w = static_cast<int>(xs[4]);
    return Status::ok();
  }

  size_t x_ = 0, weight_ = 0, bias_ = 0, gamma_ = 0, beta_ = 0;
  row_ln::Params params_{};  // sizes; pointers are filled per call
  int w_pad_ = 0;            // the kernel's row length: W rounded up to 16, 32 or 64
  float* b_pk_ = nullptr;    // packed weight, rewritten every call
  bool use_fma_ = false;     // a small layer: the FMA kernel runs
  fma::Args fma_{};          // its sizes; pointers are filled per call
  int fma_smem_ = 0;
  bool use_narrow_ = false;               // ... and rows of W <= narrow::kMaxW: narrow.cuh's kernel
  narrow::Args narrow_{};                 // its sizes; pointers are filled per call
  float* w_r_ = nullptr;                  // its reordered weight, rewritten every call
  gather::ConvTransposeGeometry wide_{};  // rank != 0: W > kMaxW, the wide path runs
};

}  // namespace kb::custom::L2_034

KB_REGISTER_IMPLEMENTATION(L2_034, custom, kb::custom::L2_034::ConvTLayerNormGelu)
