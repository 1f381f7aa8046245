// L1_003's narrow path (namespace narrow): 3xTF32 on the tensor cores in CTA tiles of 64 rows x
// 32 columns, taken by custom.cu's takes_narrow: products of at most 32 columns and more than 32
// rows, and unaligned products of any width at K >= 128 on small grids or where wgmma's tiles
// would be much emptier (session 48: the tile over column tiles of 32, in place of the FMA
// tile's 4-byte copies and of half-empty wgmma tiles).
//
// Why: at N <= 32 the work per A element is at most 32 multiply-adds, so the product is a stream
// of A (84 x 401 x 661 x 27, the mixed sweep's miss: A 89 MB, 27 us at 3.3 TB/s; 1.2 GFLOP). The
// FMA tile's tall form computes it at ~13 TFLOP/s (H100, session 43: 0.094 ms against the
// reference's 0.073), issue-bound on FFMAs; the 128-column tensor tiles leave 3/4 of their MMAs
// on padding. Here the CTA tile is every column (32, zero-filled past N) of 64 rows, and the
// tensor cores do 3 MMAs a product: 2.2 M m16n8k8 MMAs at that shape, ~10 us of tensor time, so
// A's stream sets the time. Past 32 columns a CTA takes one column tile (blockIdx.x = row tile x
// tiles_n + column tile, so CTAs in launch order share A's rows in L2).
//
// Tile: 64 rows x 32 columns x 32 k per stage, kStages = 4 cp.async stages (13 KB each, 52 KB:
// four CTAs an SM). 4 warps: warp w takes rows 32 (w % 2) .. + 31 (two m16 tiles) over every
// column (four n8 tiles) for k8 steps 2 (w / 2) and 2 (w / 2) + 1 of each stage (the stage's k
// halves); at the end the second half's sums go through shared memory to the first, which adds
// them and stores C. Each A element is read from shared memory once.
//  - A stage: gemm128's layout ([64 rows][32 k], 16-byte chunks XOR-swizzled by row & 3), its
//    fragments one 8-byte load each, conflict-free (gemm128.cuh).
//  - B stage: [32 k][32 n], chunk ^= 2 ((k >> 1) & 3). The MMA's logical column j of n-tile nt
//    is physical column 4 j + nt (gemm128's permutation), so a thread's B values for the four
//    n-tiles are one 16-byte load; each 8-lane phase of it reads 8 distinct 16-byte bank groups.
//  - Copies: A in 16-byte copies always. Where K % 4 == 0 and A is 16-byte aligned (AlignedA),
//    into gemm128's layout; else (ShiftedA) each row's k-tile as the 9 aligned 16-byte chunks
//    that hold it, placed at the row's shift, the fragments two 4-byte loads (4-byte copies of
//    A, as the FMA tile's, held this path to ~1 TB/s: H100, session 47, 100 x 313 x 943 x 13 at
//    0.096 ms against 0.124 ms at 128 x 512 x 1024 x 31 with twice the bytes). B in 4-byte copies
//    (32 k x 32 n, small beside A). Out-of-range columns and k are zero-filled (src-size), so
//    their products are zero; stores are guarded.
// Accuracy: 3xTF32 with the accumulation promoted every k8 step (tf32x3::mma3_k8_promoted), the
// two k halves added once at the end: fp32-level error at any K (mma.cuh).
// Split-K (split_plan.h, kSplitRule) for grids under kCtasPerSm CTAs an SM: split s writes
// partials[s]; custom.cu sums them in order (split_sum.cuh).
//
// Thread safety: constexpr maps and device code without state; launch_narrow_bmm is stateless.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L1_003_batched_matmul/gemm_args.h"
#include "kernels/L1_003_batched_matmul/split_plan.h"
#include "kernels/cores/tf32x3/gemm128.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::L1_003::narrow {

constexpr int kRows = 64;      // CTA tile rows
constexpr int kCols = 32;      // CTA tile columns (a column tile; products of N <= kCols: one)
constexpr int kBK = 32;        // K per stage (gemm128's: its A layout)
constexpr int kStages = 4;     // cp.async stages
constexpr int kThreads = 128;  // 4 warps: 2 row halves x 2 k halves
constexpr int kCtasPerSm = 4;
constexpr int kWarpRows = 32;  // two m16 tiles a warp
constexpr int kMTiles = kWarpRows / 16;
constexpr int kNTiles = kCols / 8;  // 4: a thread's B values for them are one float4
// Unaligned A (K % 4 != 0 or A not 16-byte aligned): each row's k-tile is the 16-byte chunks that
// hold it, 9 of them (36 floats) from the chunk boundary at or before the tile's first k.
constexpr int kShiftedRowFloats = kBK + 4;
constexpr int kShiftedChunks = kShiftedRowFloats / 4;
constexpr int kStageFloatsA = kRows * kShiftedRowFloats;  // the aligned layout uses kRows * kBK
constexpr int kStageFloatsB = kBK * kCols;
constexpr int kStageFloats = kStageFloatsA + kStageFloatsB;
constexpr int kSmemBytes = kStages * kStageFloats * 4;   // 53,248
constexpr int kACopiesVec = kRows * kBK / 4 / kThreads;  // aligned A: 16-byte copies a thread
constexpr int kACopiesShifted =                          // unaligned A: 16-byte copies, some short
    (kRows * kShiftedChunks + kThreads - 1) / kThreads;
constexpr int kBCopies = kBK * kCols / kThreads;  // 4-byte copies of B

static_assert(kBK == gemm128::kBK, "A uses gemm128's [row][32 k] stage layout");
static_assert(kNTiles == 4 && kMTiles == 2 && 2 * 2 * 32 == kThreads, "the warp grid above");
static_assert(kCtasPerSm * kSmemBytes <= 227 * 1024, "kCtasPerSm CTAs an SM");
static_assert(kRows * kCols <= kStages * kStageFloats, "the k halves' exchange fits the stages");

// ---- index maps (element index within a stage; __host__ for tests/host_cuda) ----

__host__ __device__ constexpr int a_index(int row, int k) {
  return gemm128::a_smem_index(row, k);
}
// B(k, n), k < 32, n < 32: 8 chunks of 4 floats per k row, chunk ^= 2 * ((k >> 1) & 3).
__host__ __device__ constexpr int b_index(int k, int n) {
  return kStageFloatsA + k * kCols + ((((n >> 2) ^ (((k >> 1) & 3) << 1))) << 2) + (n & 3);
}

struct Slot {
  int row;  // A: row of the tile; B: k
  int col;  // A: k; B: column
};
// A, 16-byte copy j (< kACopiesVec) of thread tid: 8 lanes a 128-byte row segment.
__host__ __device__ constexpr Slot a_copy_vec(int tid, int j) {
  return {(tid >> 3) + (kThreads / 8) * j, (tid & 7) * 4};
}
// Unaligned A, copy j (< kACopiesShifted; linear index tid + kThreads j < kRows * kShiftedChunks):
// chunk `col` of the row, at shifted_index(row, 4 col).
__host__ __device__ constexpr Slot a_copy_shifted(int tid, int j) {
  return {(tid + kThreads * j) / kShiftedChunks, (tid + kThreads * j) % kShiftedChunks};
}
__host__ __device__ constexpr bool a_copy_shifted_exists(int tid, int j) {
  return tid + kThreads * j < kRows * kShiftedChunks;
}
// Unaligned A: the float at position pos (= k + the row's shift, 0 <= shift < 4) of the row.
__host__ __device__ constexpr int shifted_index(int row, int pos) {
  return row * kShiftedRowFloats + pos;
}
// The k (within the k-tile) of chunk `chunk`'s first float in a row of that shift, and how many
// of its floats a copy reads when k_left k remain (the rest zero-filled).
__host__ __device__ constexpr int chunk_first_k(int shift, int chunk) {
  return 4 * chunk - shift;
}
__host__ __device__ constexpr int chunk_floats(int k_left, int first_k) {
  return k_left - first_k < 0 ? 0 : (k_left - first_k > 4 ? 4 : k_left - first_k);
}
// The first float of A(row = warp_row + 16 mt + 8 half + g, k = 8 s + 2 t + {0, 1}) for lane
// (g, t), whose rows all have this shift; the second follows it.
__host__ __device__ constexpr int shifted_frag(int warp_row, int lane, int shift, int s, int mt,
                                               int half) {
  return shifted_index(warp_row + 16 * mt + 8 * half + (lane >> 2), shift + 8 * s + 2 * (lane & 3));
}
__host__ __device__ constexpr int shifted_frag_fast(int base, int s, int mt, int half) {
  return base + (16 * mt + 8 * half) * kShiftedRowFloats + 8 * s;
}
// B, 4-byte copy j (< kBCopies): a warp covers one k row's 32 columns.
__host__ __device__ constexpr Slot b_copy(int tid, int j) {
  return {(tid >> 5) + (kThreads / 32) * j, tid & 31};
}
// Lane (g = lane / 4, t = lane % 4) of the warp at rows warp_row: the float2 holding A(row =
// warp_row + 16 mt + 8 half + g, k = 8 s + 2 t + {0, 1}) ((a0, a2) for half 0, (a1, a3) for
// half 1), and the float4 holding B(k = 8 s + 2 t + i, n = 4 g + {0..3}) (b_i of n-tiles 0..3).
__host__ __device__ constexpr int a_frag(int warp_row, int lane, int s, int mt, int half) {
  return a_index(warp_row + 16 * mt + 8 * half + (lane >> 2), 8 * s + 2 * (lane & 3));
}
__host__ __device__ constexpr int b_frag(int lane, int s, int i) {
  return b_index(8 * s + 2 * (lane & 3) + i, 4 * (lane >> 2));
}
// C: the first of the four columns a thread holds in element e % 2 of its n-tiles 0..3.
__host__ __device__ constexpr int c_col(int lane, int e) {
  return 8 * (lane & 3) + 4 * (e & 1);
}

// The same maps as one per-thread base and compile-time offsets (what the kernel computes).
// The swizzles depend on row & 3 and (k >> 1) & 3, which the offsets keep, but B copy j's
// k = (tid >> 5) + 4 j moves (k >> 1) & 3 by 2 j: its two patterns are two bases.
__host__ __device__ constexpr int a_frag_fast(int base, int s, int mt, int half) {
  return gemm128::a_frag_fast(base, s, mt, half);
}
__host__ __device__ constexpr int b_frag_fast(int base, int s, int i) {
  return base + (8 * s + i) * kCols;
}
__host__ __device__ constexpr int a_copy_vec_fast(int base, int j) {
  return base + (kThreads / 8) * j * kBK;
}
__host__ __device__ constexpr int b_copy_fast(int base_even, int base_odd, int j) {
  return (j % 2 == 0 ? base_even : base_odd) + (kThreads / 32) * (j - j % 2) * kCols;
}

constexpr bool fast_maps_match() {
  for (int tid = 0; tid < kThreads; ++tid) {
    const int lane = tid & 31;
    for (int s = 0; s < kBK / 8; ++s)
      for (int i = 0; i < 2; ++i) {
        if (b_frag_fast(b_frag(lane, 0, 0), s, i) != b_frag(lane, s, i)) return false;
        for (int warp_row = 0; warp_row < kRows; warp_row += kWarpRows)
          for (int mt = 0; mt < kMTiles; ++mt)
            if (a_frag_fast(a_frag(warp_row, lane, 0, 0, 0), s, mt, i) !=
                a_frag(warp_row, lane, s, mt, i))
              return false;
      }
    for (int j = 0; j < kACopiesVec; ++j) {
      const Slot c = a_copy_vec(tid, j), c0 = a_copy_vec(tid, 0);
      if (a_copy_vec_fast(a_index(c0.row, c0.col), j) != a_index(c.row, c.col)) return false;
    }
    for (int j = 0; j < kBCopies; ++j) {
      const Slot c = b_copy(tid, j), c0 = b_copy(tid, 0), c1 = b_copy(tid, 1);
      if (b_copy_fast(b_index(c0.row, c0.col), b_index(c1.row, c1.col), j) != b_index(c.row, c.col))
        return false;
    }
  }
  return true;
}
constexpr bool shifted_fast_maps_match() {
  for (int lane = 0; lane < 32; ++lane)
    for (int shift = 0; shift < 4; ++shift)
      for (int s = 0; s < kBK / 8; ++s)
        for (int mt = 0; mt < kMTiles; ++mt)
          for (int half = 0; half < 2; ++half)
            for (int warp_row = 0; warp_row < kRows; warp_row += kWarpRows)
              if (shifted_frag_fast(shifted_frag(warp_row, lane, shift, 0, 0, 0), s, mt, half) !=
                  shifted_frag(warp_row, lane, shift, s, mt, half))
                return false;
  return true;
}
static_assert(fast_maps_match() && shifted_fast_maps_match(),
              "per-thread base + constant offsets must equal the index maps");

// The split-K rule: at most kCtasPerSm CTAs an SM (within one wave), at least 4 k-tiles a split.
// Rounded up toward a full wave, grids of half a wave to a wave split in two and ran a second,
// partial wave: H100, session 51 (`kb bench L1_003 --dims D --time-cap 0.2 --trials 2 --seed 7`,
// 2 splits / unsplit / reference us, /work/.device/6): 1 x 399 x 291 x 1,475 (329 tiles; seed 99's
// miss) 30 / 21 / 21, 1 x 1,023^3 (512 tiles) 73 / 64 / 63.
constexpr SplitRule kSplitRule{kRows, kCols, kBK, kCtasPerSm, 4, /*within_wave=*/true};

// ---- the kernel ----

// One thread's copies of B for a stage (4-byte: any N, any alignment); the pointer advances one
// k-tile a load.
struct BCopier {
  const float* b;     // B element of copy 0
  int b_even, b_odd;  // stage indices of copies 0 and 1
  int b_k;            // k row of copy 0 within a k-tile
  bool b_col_ok;      // its column < N

  // b_tile: B(k0, n0) of the CTA's k range and column tile; cols: N - n0.
  __device__ __forceinline__ BCopier(const GemmArgs& p, const float* b_tile, int cols) {
    const int tid = static_cast<int>(threadIdx.x);
    const Slot s0 = b_copy(tid, 0), s1 = b_copy(tid, 1);
    b = b_tile + int64_t{s0.row} * p.n + s0.col;
    b_even = b_index(s0.row, s0.col);
    b_odd = b_index(s1.row, s1.col);
    b_k = s0.row;
    b_col_ok = s0.col < cols;
  }
  __device__ __forceinline__ void load(const GemmArgs& p, uint32_t stage, int k_left) {
    const int64_t step = int64_t{kThreads / 32} * p.n;
    const float* src = b;
#pragma unroll
    for (int j = 0; j < kBCopies; ++j, src += step) {
      const bool ok = b_col_ok && b_k + (kThreads / 32) * j < k_left;
      tf32x3::cp_async_4(stage + 4 * b_copy_fast(b_even, b_odd, j), ok ? src : p.b, ok);
    }
    b += int64_t{kBK} * p.n;
  }
};

// Aligned A (K % 4 == 0, A 16-byte aligned): 16-byte copies into gemm128's swizzled layout; the
// fragments are one 8-byte load each.
struct AlignedA {
  const float* a;      // A element of copy 0 at the current k-tile
  int a_smem;          // stage index of copy 0
  int a_k;             // its k within a k-tile
  uint32_t a_rows_ok;  // bit j: copy j's row < rows
  int frag_base;       // a_frag(warp_row, lane, 0, 0, 0)

  __device__ __forceinline__ AlignedA(const GemmArgs& p, const float* a_tile, int rows,
                                      int warp_row, int lane) {
    const int tid = static_cast<int>(threadIdx.x);
    const Slot s0 = a_copy_vec(tid, 0);
    a = a_tile + int64_t{s0.row} * p.k + s0.col;
    a_smem = a_index(s0.row, s0.col);
    a_k = s0.col;
    a_rows_ok = 0;
#pragma unroll
    for (int j = 0; j < kACopiesVec; ++j)
      a_rows_ok |= (a_copy_vec(tid, j).row < rows ? 1u : 0u) << j;
    frag_base = a_frag(warp_row, lane, 0, 0, 0);
  }
  // K % 4 == 0 and k_left a multiple of 4: a chunk is all in range or all out.
  __device__ __forceinline__ void load(const GemmArgs& p, uint32_t stage, int k_left) {
    const int64_t step = int64_t{kThreads / 8} * p.k;
    const bool k_ok = a_k < k_left;
    const float* src = a;
#pragma unroll
    for (int j = 0; j < kACopiesVec; ++j, src += step) {
      const bool ok = ((a_rows_ok >> j) & 1u) && k_ok;
      tf32x3::cp_async_16(stage + 4 * a_copy_vec_fast(a_smem, j), ok ? src : p.a, ok);
    }
    a += kBK;
  }
  // A(row = warp_row + 16 mt + 8 half + g, k = 8 s + 2 t + {0, 1}).
  __device__ __forceinline__ float2 frag(const float* stage, int s, int mt, int half) const {
    return *reinterpret_cast<const float2*>(stage + a_frag_fast(frag_base, s, mt, half));
  }
};

// Unaligned A: a row's k-tile [k0, k0 + 32) starts `shift` = (its address / 4) % 4 floats into
// its first 16-byte chunk; the 9 chunks from there are copied whole (shifted_index(row, 4 c)), so
// A(row, k) sits at position k + shift. The shift is the same at every k-tile (32 k = 8 chunks)
// and for rows 8 apart (8 K floats, a multiple of 4), so each lane's four fragment rows share one.
// A chunk's bytes past the row's K (k >= k_left) are zero-filled (src-size); the floats before
// the shift (the previous k-tile's) and past position shift + 31 are never read. A source chunk
// is a 16-byte block holding one of A's floats (a block's other bytes, before A's first float
// or past a row's last, lie in the same allocation, which starts 256-byte aligned, and past K
// are not read); a zero-filled copy names the block holding A's first float, not A itself,
// which may be misaligned (an unaligned tensor, or a batch chunk of custom.cu's run()).
struct ShiftedA {
  // The 16-byte block holding *a: a valid 16-byte-aligned source for a copy that reads nothing.
  static __device__ __forceinline__ const float* first_block(const float* a) {
    return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(a) & ~uintptr_t{15});
  }

  const float* a[kACopiesShifted];  // the copy's 16-byte source chunk at the current k-tile
  int dst[kACopiesShifted];         // its stage index
  int first_k[kACopiesShifted];     // the k of its first float: 4 chunk - shift (-3 .. 32)
  uint32_t ok;                      // bit j: copy j exists and its row < rows
  int frag_base;                    // shifted_index(warp_row + g, shift + 2 t)

  __device__ __forceinline__ ShiftedA(const GemmArgs& p, const float* a_tile, int rows,
                                      int warp_row, int lane) {
    const int tid = static_cast<int>(threadIdx.x);
    ok = 0;
#pragma unroll
    for (int j = 0; j < kACopiesShifted; ++j) {
      const Slot c = a_copy_shifted(tid, j);
      const float* row_k0 = a_tile + int64_t{c.row} * p.k;
      const int shift = static_cast<int>((reinterpret_cast<uintptr_t>(row_k0) >> 2) & 3);
      a[j] = row_k0 - shift + 4 * c.col;
      dst[j] = shifted_index(c.row, 4 * c.col);
      first_k[j] = chunk_first_k(shift, c.col);
      ok |= (a_copy_shifted_exists(tid, j) && c.row < rows ? 1u : 0u) << j;
    }
    const float* row_k0 = a_tile + int64_t{warp_row + (lane >> 2)} * p.k;
    const int shift = static_cast<int>((reinterpret_cast<uintptr_t>(row_k0) >> 2) & 3);
    frag_base = shifted_frag(warp_row, lane, shift, 0, 0, 0);
  }
  __device__ __forceinline__ void load(const GemmArgs& p, uint32_t stage, int k_left) {
#pragma unroll
    for (int j = 0; j < kACopiesShifted; ++j) {
      const int floats = chunk_floats(k_left, first_k[j]);
      const bool copy = ((ok >> j) & 1u) && floats > 0;
      if (j < kACopiesShifted - 1 || ((ok >> j) & 1u))  // the last copy: half the threads
        tf32x3::cp_async_16_part(stage + 4 * dst[j], copy ? a[j] : first_block(p.a),
                                 copy ? 4 * floats : 0);
      a[j] += kBK;
    }
  }
  __device__ __forceinline__ float2 frag(const float* stage, int s, int mt, int half) const {
    const float* x = stage + shifted_frag_fast(frag_base, s, mt, half);
    return make_float2(x[0], x[1]);
  }
};

using Acc = float[kMTiles][kNTiles][4];

// acc += this warp's k half of one stage: k8 steps 2 k_half and 2 k_half + 1, those before K
// ends (k_left: the K still to multiply from the stage's first k).
template <class A>
__device__ __forceinline__ void mma_half_stage(const float* stage, const A& a_side, int b_base,
                                               int k_half, int k_left, Acc& acc) {
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int s = 2 * k_half + q;
    if (8 * s >= k_left) break;
    uint32_t b_big[kNTiles][2], b_small[kNTiles][2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tf32x3::split_tf32_b_quad(*reinterpret_cast<const float4*>(stage + b_frag_fast(b_base, s, i)),
                                i, b_big, b_small);
    }
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      uint32_t a_big[4], a_small[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        tf32x3::split_tf32_a_pair(a_side.frag(stage, s, mt, half), half, a_big, a_small);
      }
      tf32x3::mma3_k8_promoted<kNTiles>(acc[mt], a_big, a_small, b_big, b_small);
    }
  }
}

// One CTA: C[b][m0 : m0 + 64, n0 : n0 + 32) over k in [z k_split, z k_split + k_count), into C
// (one split) or partials[z]; blockIdx.x = row tile x p.tiles_n + column tile, so CTAs in
// launch order share A's rows. ASide: AlignedA or ShiftedA.
template <class ASide>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) narrow_bmm_kernel(const GemmArgs p) {
  extern __shared__ __align__(128) float smem[];
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int warp_row = kWarpRows * (warp & 1), k_half = warp >> 1;
  const int tile = static_cast<int>(blockIdx.x);
  const int m0 = tile / p.tiles_n * kRows, n0 = tile % p.tiles_n * kCols;
  const int64_t bi = blockIdx.y;
  const int k0 = static_cast<int>(blockIdx.z) * p.k_split;
  const int k_count = min(p.k_split, p.k - k0);
  const int rows = p.m - m0, cols = p.n - n0;

  ASide a_side(p, p.a + (bi * p.m + m0) * p.k + k0, rows, warp_row, lane);
  BCopier b_side(p, p.b + (bi * p.k + k0) * p.n + n0, cols);
  const int b_base = b_frag(lane, 0, 0);
  int load_k_left = k_count, mma_k_left = k_count;
  Acc acc;
  tf32x3::mainloop<kStages, kStageFloats>(
      smem, (k_count + kBK - 1) / kBK, acc,
      [&](uint32_t stage, int) {
        a_side.load(p, stage, load_k_left);
        b_side.load(p, stage, load_k_left);
        load_k_left -= kBK;
      },
      [&](const float* stage, Acc& c) {
        mma_half_stage(stage, a_side, b_base, k_half, mma_k_left, c);
        mma_k_left -= kBK;
      });

  // The second k half's sums to the first through shared memory ([element][row half][lane]:
  // consecutive lanes, consecutive words), which adds them and stores.
  __syncthreads();
  float* exchange = smem + (warp & 1) * 32 + lane;
  constexpr int kElementStride = 2 * 32;
  if (k_half == 1) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          exchange[((mt * kNTiles + nt) * 4 + e) * kElementStride] = acc[mt][nt][e];
  }
  __syncthreads();
  if (k_half == 1) return;

  float* out = gridDim.z == 1 ? p.c : p.partials + int64_t{blockIdx.z} * gridDim.y * p.m * p.n;
  float* c_tile = out + (bi * p.m + m0) * p.n + n0;
  const bool vec_c = p.n % 4 == 0 && reinterpret_cast<uintptr_t>(c_tile) % 16 == 0;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = warp_row + 16 * mt + 8 * half + (lane >> 2);
      if (row >= rows) continue;
      float* c_row = c_tile + int64_t{row} * p.n;
#pragma unroll
      for (int vec = 0; vec < 2; ++vec) {
        const int e = 2 * half + vec, col = c_col(lane, e);
        float v[kNTiles];
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
          v[nt] = acc[mt][nt][e] + exchange[((mt * kNTiles + nt) * 4 + e) * kElementStride];
        if (vec_c && col < cols) {  // N % 4 == 0: the whole float4 is in range
          *reinterpret_cast<float4*>(c_row + col) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt)
            if (col + nt < cols) c_row[col + nt] = v[nt];
        }
      }
    }
}

// Sets the kernels' shared-memory carveout (kCtasPerSm CTAs an SM); once, before any launch.
inline cudaError_t prepare_narrow_bmm() {
  for (auto kernel : {&narrow_bmm_kernel<AlignedA>, &narrow_bmm_kernel<ShiftedA>}) {
    cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// p: a chunk of at most 65,535 batch entries (batch of them), p.tiles_n = ceil(N / kCols);
// splits ranges of p.k_split (split_plan.h). vec_a: K % 4 == 0 and A 16-byte aligned.
inline cudaError_t launch_narrow_bmm(const GemmArgs& p, int splits, int batch, bool vec_a,
                                     cudaStream_t stream) {
  const int64_t tiles = (int64_t{p.m} + kRows - 1) / kRows * p.tiles_n;
  if (p.tiles_n != (p.n + kCols - 1) / kCols || tiles > 0x7fffffff) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(batch),
                  static_cast<unsigned>(splits));
  if (vec_a)
    narrow_bmm_kernel<AlignedA><<<grid, kThreads, kSmemBytes, stream>>>(p);
  else
    narrow_bmm_kernel<ShiftedA><<<grid, kThreads, kSmemBytes, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kb::custom::L1_003::narrow
