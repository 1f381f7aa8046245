// The stage loader of the gemm128 tile (gemm128.cuh) for dense row-major operands: A (M, K) with
// row stride K and B (K, N) with row stride N. Used by L1_003 (batched A and B) and L3_025 (one
// A for every image) as the load_stage of the mainloop (mainloop.cuh).
//
// Contract: Args (concept DenseGemmArgs) has `a`, `b` (the operands' first elements: the source
// of zero-filled copies, so they must be dereferenceable), `n` and `k` (A's row stride, and the
// K to multiply over). Args may also have `k_count`: the K to multiply over when it is less than
// the row stride (a split of K that starts at a_tile's column and b_tile's row; a multiple of 4
// on the vector path). make_dense_loader
// takes the CTA's first A row (a_tile) and first B column (b_tile) and how many rows / columns of
// the tile are in range; load_dense_stage(p, l, stage_saddr, k0) copies k-tile k0 / kBK into the
// stage (A at 0, B at kStageFloatsA), zero-filling what is out of range, and advances l by one
// k-tile, so it must be called for k0 = 0, kBK, 2 kBK, ... in order.
//   kVec: 16-byte copies (K % 4 == 0, N % 4 == 0, 16-byte aligned pointers); else 4-byte copies.
//
// dense_mainloop(p, smem, a_tile, b_tile, rows, cols, warp_m, warp_n, lane, acc) is the whole
// collective: acc = this warp's share of A[tile rows] @ B[:, tile columns] over all of K (the
// mainloop with this loader and gemm128's mma_stage); the epilogue is the caller's.
//
// Thread safety: per-thread state (DenseLoader) and device functions; nothing shared.
#pragma once

#include <cuda_runtime.h>

#include <concepts>
#include <cstdint>

#include "kernels/cores/tf32x3/gemm128.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"

namespace kb::custom::gemm128 {

template <class Args>
concept DenseGemmArgs = requires(const Args& p) {
  { p.a } -> std::convertible_to<const float*>;
  { p.b } -> std::convertible_to<const float*>;
  { p.n } -> std::convertible_to<int>;
  { p.k } -> std::convertible_to<int>;
};

// The K that a tile multiplies over: k_count where Args has one, else all of k.
template <DenseGemmArgs Args>
__device__ __forceinline__ int k_extent(const Args& p) {
  if constexpr (requires { p.k_count; }) {
    return p.k_count;
  } else {
    return p.k;
  }
}

// One thread's share of the global -> shared copies of a stage. Pointers advance one k-tile per
// load; rows / columns out of range were folded into masks once per tile.
template <bool kVec>
struct DenseLoader {
  const float* a;      // A element of copy 0 at the current k-tile
  const float* b;      // B element of copy 0 at the current k-tile
  int a_smem, b_smem;  // element index of copy 0 in a stage
  int a_col, b_row;    // k of A copy 0 within the k-tile; k row of B copy 0
  uint32_t a_rows_ok;  // bit j: A copy j's row < M
  uint32_t b_cols_ok;  // bit j: B copy j's column < N (every copy of a thread has the same column)
};

template <bool kVec, DenseGemmArgs Args>
__device__ __forceinline__ DenseLoader<kVec> make_dense_loader(const Args& p, const float* a_tile,
                                                               const float* b_tile, int rows,
                                                               int cols) {
  const int tid = threadIdx.x;
  const CopySlot sa = kVec ? a_copy_vec(tid, 0) : a_copy_scalar(tid, 0);
  const CopySlot sb = kVec ? b_copy_vec(tid, 0) : b_copy_scalar(tid, 0);
  DenseLoader<kVec> l{a_tile + int64_t{sa.row} * p.k + sa.col,
                      b_tile + int64_t{sb.row} * p.n + sb.col,
                      sa.smem,
                      sb.smem,
                      sa.col,
                      sb.row,
                      0u,
                      0u};
  constexpr int kCopies = kVec ? 4 : 16;
#pragma unroll
  for (int j = 0; j < kCopies; ++j) {
    const CopySlot ja = kVec ? a_copy_vec(tid, j) : a_copy_scalar(tid, j);
    l.a_rows_ok |= (ja.row < rows ? 1u : 0u) << j;
    const CopySlot jb = kVec ? b_copy_vec(tid, j) : b_copy_scalar(tid, j);
    l.b_cols_ok |= (jb.col < cols ? 1u : 0u) << j;
  }
  return l;
}

// Copies k-tile k0 / kBK of A and B into the stage at byte address `stage` (zero-filling what is
// out of range) and advances the loader to the next k-tile.
template <bool kVec, DenseGemmArgs Args>
__device__ __forceinline__ void load_dense_stage(const Args& p, DenseLoader<kVec>& l,
                                                 uint32_t stage, int k0) {
  const uint32_t sa = stage + l.a_smem * 4;
  const uint32_t sb = stage + (kStageFloatsA + l.b_smem) * 4;
  const int k_left = k_extent(p) - k0;  // valid k within this k-tile: < k_left
  if constexpr (kVec) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool ok = ((l.a_rows_ok >> j) & 1u) && l.a_col < k_left;
      cp_async_16(sa + (a_copy_vec_fast(0, j) * 4), ok ? l.a + int64_t{32 * j} * p.k : p.a, ok);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool ok = ((l.b_cols_ok >> j) & 1u) && l.b_row + 8 * j < k_left;
      cp_async_16(sb + (b_copy_vec_fast(0, j) * 4), ok ? l.b + int64_t{8 * j} * p.n : p.b, ok);
    }
  } else {
    // Per copy: a pointer step, a predicate and the copy; the smem offsets are constants after
    // unrolling (the index maps' per-j arithmetic cost ~700 instructions per warp and k-tile,
    // nearly doubling the kernel's instructions: L1_003 at K 655, N 1637, ncu). A stage with
    // every row, column and k in range (all but the edge tiles' and the last k-tile's) copies
    // without predicates.
    const int64_t a_step = int64_t{8} * p.k, b_step = int64_t{2} * p.n;
    const bool a_k_ok = l.a_col < k_left, b_col_ok = (l.b_cols_ok & 1u) != 0u;
    const bool interior = l.a_rows_ok == 0xffffu && b_col_ok && k_left >= kBK;
    const float* a_src = l.a;
    const float* b_src = l.b;
    if (interior) {
#pragma unroll
      for (int j = 0; j < 16; ++j, a_src += a_step)
        cp_async_4(sa + (a_copy_scalar_fast(0, j) * 4), a_src, true);
#pragma unroll
      for (int j = 0; j < 16; ++j, b_src += b_step)
        cp_async_4(stage + (kStageFloatsA + b_copy_scalar_fast(l.b_smem, j)) * 4, b_src, true);
    } else {
#pragma unroll
      for (int j = 0; j < 16; ++j, a_src += a_step) {
        const bool ok = ((l.a_rows_ok >> j) & 1u) && a_k_ok;
        cp_async_4(sa + (a_copy_scalar_fast(0, j) * 4), ok ? a_src : p.a, ok);
      }
#pragma unroll
      for (int j = 0; j < 16; ++j, b_src += b_step) {
        const bool ok = b_col_ok && l.b_row + 2 * j < k_left;
        cp_async_4(stage + (kStageFloatsA + b_copy_scalar_fast(l.b_smem, j)) * 4, ok ? b_src : p.b,
                   ok);
      }
    }
  }
  l.a += kBK;
  l.b += int64_t{kBK} * p.n;
}

// acc = the CTA tile's product over K (k_extent): the mainloop (mainloop.cuh) with the dense loader
// and gemm128's mma_stage. Returns with the pipeline drained but no barrier passed.
template <bool kVec, DenseGemmArgs Args>
__device__ __forceinline__ void dense_mainloop(const Args& p, float* smem, const float* a_tile,
                                               const float* b_tile, int rows, int cols, int warp_m,
                                               int warp_n, int lane,
                                               float (&acc)[kMmaTilesM][kMmaTilesN][4]) {
  DenseLoader<kVec> loader = make_dense_loader<kVec>(p, a_tile, b_tile, rows, cols);
  const int a_base = a_frag_index(warp_m, lane, 0, 0, 0);
  const int b_base = kStageFloatsA + b_frag_index(warp_n, lane, 0, 0);
  int k_left = k_extent(p);  // K not yet multiplied: the last stage may hold fewer k8 steps
  tf32x3::mainloop<kStages, kStageFloatsA + kStageFloatsB>(
      smem, (k_extent(p) + kBK - 1) / kBK, acc,
      [&](uint32_t stage, int kt) { load_dense_stage<kVec>(p, loader, stage, kt * kBK); },
      [&](const float* stage, auto& c) {
        mma_stage(stage, a_base, b_base, c, stage_k_steps(k_left));
        k_left -= kBK;
      });
}

}  // namespace kb::custom::gemm128
