// ConvTranspose3d(C -> C, k 3, stride 2, padding 1, dilation 1, groups 1, output_padding 0) with
// C = kC = 32 in error-compensated TF32 (3xTF32) on Hopper's warpgroup MMA (wgmma, sm_90a; A
// from registers, tf32x3/wgmma.cuh). L1_073's fast path where the sm_90a code is loaded; the
// mma.sync kernel of all_classes3d.cuh elsewhere.
//
// Math, per axis (L inputs, 2L - 1 outputs; all_classes3d.cuh): output 2q (even) takes tap 1 from
// input q; output 2q - 1 (odd) takes tap 0 from input q and tap 2 from input q - 1.
//
// GEMM view. A tile is one (n, m, p) and 64 input columns q0 .. q0 + 63: the 4 output rows
// (od, oh) in {2m - 1, 2m} x {2p - 1, 2p}, output columns [2 q0 - 1, 2 q0 + 127). Per output row
// and (d, h) tap, the w axis is one wgmma product of
//   M = 64 rows (rw, co): rw 0 the odd column 2q - 1, rw 1 the even column 2q, of channel co
//                        (row 16 b + 8 rw + c for co = 8 b + c: a thread holds both of a channel),
//   N = 64 columns q,    B = the input row of the tap shifted by e in {0, 1} (x[q - e]),
//   K = 8 input channels per k8 step (4 per tap),
// with A(e = 0) = (w[kw 0] for rw 0, w[kw 1] for rw 1) and A(e = 1) = (w[kw 2], 0): 3 of the 4
// (rw, e) blocks carry taps, so the tensor core computes 4/3 of the layer's multiply-adds.
// Operands: the input patch (4 input rows: planes m - 1, m x rows p - 1, p; 65 columns q0 - 1 ..
// q0 + 63) in shared memory, split into big / small TF32 planes of K-major core matrices (8 columns
// x 4 channels, 128 contiguous bytes: any column may start one, so a shift e is a start address);
// the weights raw in shared memory for the whole kernel (110.6 KB, [tap][k8 step][co][c][2] as
// prep_weights_kernel writes them), each thread loading its A fragment (2 LDS.64) and splitting it
// in registers. 3xTF32: a_small b_big, a_big b_small, a_big b_big.
//
// CTA: persistent, one per SM, 4 warpgroups (512 threads, 128 registers, 76 bytes spilled);
// warpgroup g computes output row g of the tile (row 0 (2m - 1, 2p - 1): 4 taps, 1 (2m - 1, 2p):
// 2, 2 (2m, 2p - 1): 2, 3 (2m, 2p): 1) as one m64n64 sum, and warpgroup 3 also row 0's taps 2-3:
// 12, 12, 12 and 6 + 12 wgmmas per stage (8 input channels; 4 stages per tile). Promotion: a
// sum of at most 12 wgmmas (rows 1 and 2: 24, two stages) starts afresh in part[], then is
// added by FADD to the row's totals in shared memory (the tensor core truncates toward zero
// against the running sum, mma.cuh: all_classes3d.cuh measured 2.7-4x the tolerance under the
// robustness trials' scaled inputs with 96 MMAs per sum, 0.48-0.79x with 12). The next stage's
// patch is loaded at the stage's start and split into the other buffer while the wgmmas run
// (double-buffered, one CTA barrier per stage). The tile's rows are stored from the totals as
// 128-byte rows of consecutive output columns.
//
// Cost model (full preset, 4 x 32 x 32 x 64 x 128 -> 63 x 127 x 255; 16,384 tiles, 124.1 per SM):
// per tile 9 (d, h) taps x 2 e x 4 k8 x 3 = 216 m64n64k8 wgmmas (64 K multiply-adds each, 32
// cycles at 1,024 TF32 multiply-adds per cycle per SM: measured 32.1-32.3 with 2-4 warpgroups,
// A from registers, session 23): 6.9 K cycles; 125 tiles -> 0.86 M cycles = 0.44-0.47 ms at
// 1.83-1.98 GHz. Stores 1.04 GB (~0.27 ms of HBM) overlap. Predicted 0.6-0.8 ms.
// Measured (H200, `kb bench L1_073 --time-cap 2 --seed 7`, each against the previous build in one
// call; ncu `--section SourceCounters` chose each step): 2 warpgroups of 2 rows 1.707 ms (the
// mma.sync kernel 1.967); 4 warpgroups, one row each 1.567; patch offsets formed once per thread
// and 3-instruction operand splits 1.541; row 0's taps 2-3 on warpgroup 3 1.490; tile coordinates
// once per tile (not per stage under a predicate) 1.452; the stores' pointers walked (not rebuilt
// per store) 1.348; rows 1-2 promoted every two stages **1.318** (all rows every two stages:
// 1.31, but scale 1.14x the tolerance at seed 10, `marginal`; this: 0.61-0.91x over seeds 5,
// 7-12, the reference 0.30-0.58x). ncu at 1.35 ms: the tensor pipe ~32% busy; the warps in
// lockstep per stage (barrier 15%, shared-memory queue 15%, LDS results 14%): the totals'
// read-modify-writes and the wgmmas' B reads are ~270 of ~330 KB of shared-memory traffic per
// stage. Next: fewer CTA-wide barriers (mbarrier-paced stages so warpgroups drift), registers
// for a second part (the 128-register cap at 512 threads makes every added live value spill).
//
// Shared memory: weights 110.6 KB + 2 patch stages x 18 KB + 4 rows' totals x 18 KB = 216 KB.
//
// Thread safety: stateless kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/cores/tf32x3/wgmma.cuh"

namespace kb::custom::ct3d_wgmma {

namespace wgmma = ::kb::tf32x3::wgmma;
using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::SplitTf32;

constexpr int kC = 32;                  // C_in = C_out
constexpr int kTaps = 27;               // 3 x 3 x 3
constexpr int kK8 = kC / 8;             // k8 steps = stages per tile
constexpr int kThreads = 512;           // 4 warpgroups, one output row of the tile each
constexpr int kTileQ = 64;              // input columns per tile: N of the wgmma
constexpr int kPatchRows = 4;           // (plane m - 1 + dd, row p - 1 + hh) at dd * 2 + hh
constexpr int kPatchCols = kTileQ + 1;  // q0 - 1 .. q0 + 63
constexpr int kPatchPitch = 72;         // columns per (part, row, quad) plane
constexpr int kPatchItems = kPatchRows * 2 * kPatchCols;              // (row, quad, column): 520
constexpr int kPatchSlots = (kPatchItems + kThreads - 1) / kThreads;  // 2
constexpr int kPatchFloats = 2 * kPatchRows * 2 * kPatchPitch * 4;    // both parts: 4,608
constexpr int kWeightFloats = kTaps * kK8 * kC * 8;                   // 27,648
constexpr int kOutCols = 2 * kTileQ;                                  // 128
constexpr int kOutPitch = kOutCols + 16;  // 144: a quarter warp's 16-byte stores hit 8 bank groups
constexpr int kOutFloats = kC * kOutPitch;  // one row's totals: 4,608
constexpr int kSmemBytes = 4 * (kWeightFloats + 2 * kPatchFloats + 4 * kOutFloats);
static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM");

// Float index of (part, patch row, channel ci < 8, column) in a patch stage.
__host__ __device__ constexpr int patch_index(int part, int row, int ci, int col) {
  return (((part * kPatchRows + row) * 2 + ci / 4) * kPatchPitch + col) * 4 + ci % 4;
}
// Float index of w[ci][co][tap] in the prepared weights: [tap][k8][co][c][2] with ci = 8 k8 + c +
// 4 h at the last index h (a thread's A fragment pair (k c, k c + 4) is one float2).
__host__ __device__ constexpr int weight_index(int tap, int ci, int co) {
  return (((tap * kK8 + ci / 8) * kC + co) * 4 + ci % 4) * 2 + ci % 8 / 4;
}

// wf from w (C_in, C_out, 3, 3, 3); one thread per element.
static __global__ void prep_weights_kernel(const float* __restrict__ w, float* __restrict__ wf) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= kWeightFloats) return;
  const int tap = i % kTaps, co = i / kTaps % kC, ci = i / (kTaps * kC);
  wf[weight_index(tap, ci, co)] = w[i];
}

struct Params {
  const float* x;   // (N, 32, D, H, W)
  const float* wf;  // prep_weights_kernel's layout
  float* y;         // (N, 32, 2D - 1, 2H - 1, 2W - 1)
  int batch, in[3], out[3];
  int q_tiles, tiles_total;  // tiles: ((n * D + m) * H + p) * q_tiles + qt
};

struct Tile {
  int n, m, p, q0;
};
__device__ __forceinline__ Tile tile_of(const Params& p, int t) {
  Tile tl;
  tl.q0 = t % p.q_tiles * kTileQ;
  t /= p.q_tiles;
  tl.p = t % p.in[1];
  t /= p.in[1];
  tl.m = t % p.in[0];
  tl.n = t / p.in[0];
  return tl;
}

// One axis of an output row: even (2m) takes (patch offset 1, tap 1); odd (2m - 1) takes (1, tap
// 0) and (0, tap 2), where the patch offset dd / hh selects plane m - 1 + dd / row p - 1 + hh.
__host__ __device__ constexpr int axis_taps(bool odd) {
  return odd ? 2 : 1;
}
__host__ __device__ constexpr int axis_offset(bool odd, int i) {
  return odd && i == 1 ? 0 : 1;
}
__host__ __device__ constexpr int axis_k(bool odd, int i) {
  return odd ? (i == 0 ? 0 : 2) : 1;
}

// The row of warpgroup g: whether its od / oh is odd (g 0 (2m - 1, 2p - 1): 4 taps, g 1 (2m - 1,
// 2p): 2, g 2 (2m, 2p - 1): 2, g 3 (2m, 2p): 1).
__host__ __device__ constexpr bool row_odd_d(int g) {
  return g < 2;
}
__host__ __device__ constexpr bool row_odd_h(int g) {
  return g % 2 == 0;
}
__host__ __device__ constexpr int row_taps(int g) {
  return axis_taps(row_odd_d(g)) * axis_taps(row_odd_h(g));
}
// Taps per promotion round (at most 12 wgmmas per sum; 4, one round for every row, made ptxas
// serialize the wgmmas for want of registers: C7512, 84 bytes of spills).
constexpr int kRoundTaps = 2;

// x = big + small for a tensor-core operand: big = tf32(x) rounded to nearest, small = x - big
// (exact) left unrounded: the tensor core ignores its 13 low bits (truncation, 2^-21 |x| at most,
// against 2^-22 rounded): 3 instructions instead of split_tf32's 5, on the kernel's hot path
// (ncu, session 23: the operand splits were ~20% of its instructions).
__device__ __forceinline__ SplitTf32 split_fast(float x) {
  const uint32_t big = ::kb::tf32x3::tf32_rna_bits(__float_as_uint(x));
  return {big, __float_as_uint(x - __uint_as_float(big))};
}

// The patch pixels (row, quad, column) this thread loads for every stage are items tid + s *
// kThreads (slot 0 for every thread, slot 1 for threads 0-7): fixed per thread, so their offsets
// are formed once (ncu, session 23: forming them per stage, with the divisions by 65 and 64-bit
// products, was ~45% of the kernel's instructions).
struct PatchItem {
  int row, quad, col;
};
__device__ __forceinline__ PatchItem patch_item(int s) {
  const int item = static_cast<int>(threadIdx.x) + s * kThreads, rq = item / kPatchCols;
  return {rq / 2, rq % 2, item % kPatchCols};
}
__device__ __forceinline__ bool has_item(int s) {
  return static_cast<int>(threadIdx.x) + s * kThreads < kPatchItems;
}
static_assert(kPatchSlots == 2 && kThreads <= kPatchItems, "slot 0 exists for every thread");

struct PatchLanes {
  int x_off[kPatchSlots];  // from the tile's origin x[n, 0, m - 1, p - 1, q0 - 1]
  int s_off[kPatchSlots];  // patch_index(0, row, 4 quad, column)
};
__device__ __forceinline__ PatchLanes patch_lanes(const Params& p) {
  PatchLanes l;
  const int hw = p.in[1] * p.in[2];
#pragma unroll
  for (int s = 0; s < kPatchSlots; ++s) {
    const PatchItem it = patch_item(s);
    l.x_off[s] = (4 * it.quad * p.in[0] + it.row / 2) * hw + it.row % 2 * p.in[2] + it.col;
    l.s_off[s] = patch_index(0, it.row, 4 * it.quad, it.col);
  }
  return l;
}

// A tile's loads: origin and which slots exist (zero-filled otherwise).
struct PatchTile {
  const float* origin;  // x[n, 0, m - 1, p - 1, q0 - 1] (may lie outside x: never read there)
  unsigned ok;          // bit s: slot s exists and lies inside x
};
__device__ __forceinline__ PatchTile patch_tile(const Params& p, const Tile& t) {
  PatchTile pt;
  pt.origin =
      p.x + ((int64_t{t.n} * kC * p.in[0] + t.m - 1) * p.in[1] + t.p - 1) * p.in[2] + t.q0 - 1;
  pt.ok = 0;
#pragma unroll
  for (int s = 0; s < kPatchSlots; ++s) {
    const PatchItem it = patch_item(s);
    const int q = t.q0 - 1 + it.col;
    const bool ok = has_item(s) && (it.row / 2 == 1 || t.m >= 1) && (it.row % 2 == 1 || t.p >= 1) &&
                    q >= 0 && q < p.in[2];
    pt.ok |= ok ? 1u << s : 0u;
  }
  return pt;
}

using PatchRegs = float[kPatchSlots][4];

// Stage k8's 8 input channels of the tile's patch into registers.
__device__ __forceinline__ void load_patch(const PatchLanes& l, const PatchTile& pt, int plane,
                                           int k8, PatchRegs& raw) {
  const float* src = pt.origin + int64_t{8 * k8} * plane;
#pragma unroll
  for (int s = 0; s < kPatchSlots; ++s)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      raw[s][c] = (pt.ok >> s & 1) != 0 ? __ldg(src + (l.x_off[s] + c * plane)) : 0.0f;
}
__device__ __forceinline__ void store_patch(const PatchLanes& l, float* patch,
                                            const PatchRegs& raw) {
#pragma unroll
  for (int s = 0; s < kPatchSlots; ++s) {
    if (!has_item(s)) continue;
    float b[4], sm[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const SplitTf32 x = split_fast(raw[s][c]);
      b[c] = __uint_as_float(x.big), sm[c] = __uint_as_float(x.small);
    }
    *reinterpret_cast<float4*>(patch + l.s_off[s]) = make_float4(b[0], b[1], b[2], b[3]);
    *reinterpret_cast<float4*>(patch + l.s_off[s] + patch_index(1, 0, 0, 0)) =
        make_float4(sm[0], sm[1], sm[2], sm[3]);
  }
}

// This thread's A fragment of tap (kd, kh) and shift e at k8 step k8, split: rows rw 0 (a[0],
// a[2]) take kw 0 (e 0) or 2 (e 1), rows rw 1 (a[1], a[3]) kw 1 (e 0) or nothing (e 1).
struct AFrag {
  uint32_t big[4], small[4];
};
__device__ __forceinline__ AFrag load_a(const float* w_s, int kd, int kh, int e, int k8, int co,
                                        int c) {
  const int tap0 = (kd * 3 + kh) * 3 + (e == 0 ? 0 : 2);
  const float2 v0 = *reinterpret_cast<const float2*>(w_s + weight_index(tap0, 8 * k8 + c, co));
  float2 v1 = make_float2(0.0f, 0.0f);
  if (e == 0) v1 = *reinterpret_cast<const float2*>(w_s + weight_index(tap0 + 1, 8 * k8 + c, co));
  const float v[4] = {v0.x, v1.x, v0.y, v1.y};
  AFrag a;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const SplitTf32 sp = split_fast(v[i]);
    a.big[i] = sp.big, a.small[i] = sp.small;
  }
  return a;
}

// One promotion round at k8 step k8: taps [kFirst, kFirst + kCount) of the tile's row kRow (see
// row_odd_d), summed into part from zero. Rows that do not exist (od or oh -1 at m or p 0) are
// computed too (from the zero-filled patch rows) and not stored: a wgmma under a branch the
// compiler cannot prove warpgroup-uniform is serialized (ptxas C7520).
template <int kRow, int kFirst, int kCount>
__device__ __forceinline__ void issue_round(const float* w_s, const float* patch, int k8, int co,
                                            int c, float (&part)[32], bool fresh = true) {
  constexpr uint32_t kQuadBytes = kPatchPitch * 16;  // next 4 channels (K)
  constexpr uint32_t kCoreBytes = 8 * 16;            // next 8 columns (N)
  constexpr int kSmall = patch_index(1, 0, 0, 0);
  constexpr bool kOddD = row_odd_d(kRow), kOddH = row_odd_h(kRow);
  static_assert(kCount > 0 && kCount <= kRoundTaps && kFirst + kCount <= row_taps(kRow),
                "a round has 1 or 2 of the row's taps");
  AFrag a[kCount][2];
#pragma unroll
  for (int i = 0; i < kCount; ++i) {
    const int tp = kFirst + i, td = tp / axis_taps(kOddH), th = tp % axis_taps(kOddH);
#pragma unroll
    for (int e = 0; e < 2; ++e)
      a[i][e] = load_a(w_s, axis_k(kOddD, td), axis_k(kOddH, th), e, k8, co, c);
  }
  wgmma::fence();
#pragma unroll
  for (int i = 0; i < kCount; ++i) {
    const int tp = kFirst + i, td = tp / axis_taps(kOddH), th = tp % axis_taps(kOddH);
    const int row = axis_offset(kOddD, td) * 2 + axis_offset(kOddH, th);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float* b = patch + patch_index(0, row, 0, 1 - e);
      const uint64_t bb = wgmma::plain_descriptor(b, kQuadBytes, kCoreBytes);
      const uint64_t bs = wgmma::plain_descriptor(b + kSmall, kQuadBytes, kCoreBytes);
      wgmma::mma_m64n64k8_rs(part, a[i][e].small, bb, !(fresh && i == 0 && e == 0));
      wgmma::mma_m64n64k8_rs(part, a[i][e].big, bs);
      wgmma::mma_m64n64k8_rs(part, a[i][e].big, bb);
    }
  }
  wgmma::commit_group();
}

// The row totals live in shared memory, per warpgroup [co][kOutPitch] with output column 2 q0 - 1
// + j at j (registers would not fit beside the parts and A fragments). The thread of channel co =
// 8 w + lane / 4 and c = lane % 4 holds in part columns q0 + 8 i + 2 c + {0, 1} at part[4 i + {0,
// 1}] (rw 0: output 2q - 1) and {2, 3} (rw 1: 2q): the output columns j = 16 i + 4 c .. + 3, one
// float4. Adds (or, first, writes) part into the totals.
__device__ __forceinline__ void promote(bool first, const float (&part)[32], float* totals, int co,
                                        int c) {
  float* row = totals + co * kOutPitch + 4 * c;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float* d = part + 4 * i;
    float4 v = make_float4(d[0], d[2], d[1], d[3]);
    auto* at = reinterpret_cast<float4*>(row + 16 * i);
    if (!first) {
      const float4 t = *at;
      v = make_float4(t.x + v.x, t.y + v.y, t.z + v.z, t.w + v.w);
    }
    *at = v;
  }
}

// The named barrier by which warpgroup 0's promotion of row 0 precedes warpgroup 3's (256
// threads: 0 arrives, 3 waits; ids 1-4 are the warpgroups' own).
constexpr int kRow0Barrier = 5;

// Warpgroup kG's stage k8 of the tile. The rows have 4 (row 0), 2, 2 and 1 (row 3) taps; a
// warpgroup per row waited at every stage's barrier for warpgroup 0's two rounds (24 wgmmas
// against 6-12: ncu, session 23, 21% of the warps' cycles stalled on the barrier), so warpgroup 3
// runs row 0's taps 2 and 3 after its own: 12, 12, 12 and 6 + 12 wgmmas (its own row first:
// the other order measured 1.34 against 1.31 ms). Each round is followed by its wait and
// promotion; rows 1 and 2 promote every second stage. `store_next` (the next stage's patch,
// loaded at the stage's start) runs while the last round computes. Row 0's two promotions run
// in a fixed order (0, then 3): the sums are the same from run to run.
template <int kG, class StoreNext>
__device__ __forceinline__ void run_stage(const float* w_s, const float* patch, int k8, int co,
                                          int c, float (&part)[32], float* totals,
                                          const StoreNext& store_next) {
  if constexpr (kG < 3) {
    // Rows 1 and 2 (one writer each) sum two stages (24 wgmmas) before each promotion.
    constexpr bool kPairs = kG > 0;
    static_assert(kK8 % 2 == 0, "promotion periods of two stages");
    const bool promote_now = !kPairs || k8 % 2 == 1;
    issue_round<kG, 0, 2>(w_s, patch, k8, co, c, part, !kPairs || k8 % 2 == 0);
    store_next();
    wgmma::wait_group<0>(part);
    if (promote_now) promote(k8 == (kPairs ? 1 : 0), part, totals + kG * kOutFloats, co, c);
    if constexpr (kG == 0) asm volatile("bar.arrive %0, 256;" ::"n"(kRow0Barrier) : "memory");
  } else {
    static_assert(row_taps(0) == 4 && row_taps(3) == 1, "rows of 4, 2, 2, 1 taps");
    issue_round<3, 0, 1>(w_s, patch, k8, co, c, part);
    wgmma::wait_group<0>(part);
    promote(k8 == 0, part, totals + 3 * kOutFloats, co, c);
    issue_round<0, 2, 2>(w_s, patch, k8, co, c, part);
    store_next();
    wgmma::wait_group<0>(part);
    asm volatile("bar.sync %0, 256;" ::"n"(kRow0Barrier) : "memory");
    promote(false, part, totals, co, c);
  }
}

// Stores row (od, oh) of tile t from its totals `row` ([co][kOutPitch]): 32 channels x 128 output
// columns, a warp per 32 consecutive columns of one channel (128-byte rows). The channel's
// pointer advances by a plane per channel (ncu, session 23: indexed as dst + k * plane, each
// store's 64-bit address was rebuilt from the sizes, ~150 instructions per stage).
__device__ __forceinline__ void store_row(const Params& p, const Tile& t, int od, int oh,
                                          const float* row) {
  const int wg_tid = static_cast<int>(threadIdx.x) % 128;
  const int ow = 2 * t.q0 - 1 + wg_tid;
  if (ow < 0 || ow >= p.out[2]) return;
  const int64_t plane = int64_t{p.out[0]} * p.out[1] * p.out[2];
  float* dst = p.y + (int64_t{t.n} * kC * p.out[0] + od) * p.out[1] * int64_t{p.out[2]} +
               int64_t{oh} * p.out[2] + ow;
  const float* src = row + wg_tid;
#pragma unroll 8
  for (int k = 0; k < kC; ++k) {
    __stcs(dst, src[k * kOutPitch]);
    dst += plane;
  }
}

template <int kG>
__device__ __forceinline__ void run_tiles(const Params& p, float* smem) {
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const float* w_s = smem;
  float* patches = smem + kWeightFloats;
  float* totals = smem + kWeightFloats + 2 * kPatchFloats;  // [row][co][kOutPitch]
  const int wg_tid = static_cast<int>(threadIdx.x) % 128;
  const int co = 8 * (wg_tid / 32) + wg_tid % 32 / 4, c = wg_tid % 4;
  const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);

  const PatchLanes lanes = patch_lanes(p);
  const int plane = p.in[0] * p.in[1] * p.in[2];
  Tile cur = tile_of(p, first);
  PatchTile pt = patch_tile(p, cur);  // the current tile's loads
  PatchRegs raw;
  for (int q = static_cast<int>(threadIdx.x); q < kWeightFloats / 4; q += kThreads)
    cp_async_16(smem_base + 16u * q, p.wf + 4 * q);
  cp_async_commit();
  load_patch(lanes, pt, plane, 0, raw);
  store_patch(lanes, patches, raw);
  cp_async_wait<0>();
  wgmma::fence_operand_stores();
  __syncthreads();

  float part[32];
  int stage = 0;
  // Tiles first, first + step, ...; the next tile's coordinates are formed once per tile, here
  // (ncu, session 23: formed per stage under a predicate, they were ~29% of the instructions).
#pragma unroll 1
  for (int t = first; t < p.tiles_total; t += step) {
    const bool has_next_tile = t + step < p.tiles_total;
    const PatchTile next_pt = has_next_tile ? patch_tile(p, tile_of(p, t + step)) : pt;
#pragma unroll 1
    for (int k8 = 0; k8 < kK8; ++k8, stage ^= 1) {
      const bool last = k8 + 1 == kK8, has_next = !last || has_next_tile;
      if (has_next) {  // fields selected one by one: a selected struct went to local memory
        const PatchTile src{last ? next_pt.origin : pt.origin, last ? next_pt.ok : pt.ok};
        load_patch(lanes, src, plane, last ? 0 : k8 + 1, raw);
      }
      const auto store_next = [&] {
        if (has_next) store_patch(lanes, patches + (stage ^ 1) * kPatchFloats, raw);
      };
      run_stage<kG>(w_s, patches + stage * kPatchFloats, k8, co, c, part, totals, store_next);
      wgmma::fence_operand_stores();
      __syncthreads();  // the next patch stage is complete, and at a tile's end its totals
    }
    // Row kG: od 2m or 2m - 1 (m >= 1), oh 2p or 2p - 1 (p >= 1). Read before any promotion of
    // the next tile: this warpgroup's own come later in program order, warpgroup 3's into row 0
    // after warpgroup 0's (kRow0Barrier).
    const int od = 2 * cur.m - (row_odd_d(kG) ? 1 : 0);
    const int oh = 2 * cur.p - (row_odd_h(kG) ? 1 : 0);
    if (od >= 0 && oh >= 0) store_row(p, cur, od, oh, totals + kG * kOutFloats);
    if (has_next_tile) cur = tile_of(p, t + step);
    pt = next_pt;
  }
}

// Grid: persistent, gridDim.x <= tiles_total; block kThreads; dynamic shared memory kSmemBytes.
__global__ void __launch_bounds__(kThreads, 1) wgmma_classes3d_kernel(const Params p) {
#if KB_WGMMA_ENABLED
  extern __shared__ __align__(16) float smem[];
  // The warpgroup as a warp-uniform value (a shuffle), so that ptxas sees each branch's wgmmas
  // run by whole warps (else it serializes them, C7520).
  switch (__shfl_sync(0xffffffffu, threadIdx.x / 128, 0)) {
    case 0:
      run_tiles<0>(p, smem);
      break;
    case 1:
      run_tiles<1>(p, smem);
      break;
    case 2:
      run_tiles<2>(p, smem);
      break;
    default:
      run_tiles<3>(p, smem);
      break;
  }
#else
  (void)p;
  __trap();
#endif
}

}  // namespace kb::custom::ct3d_wgmma
