// The 128 x 256 3xTF32 GEMM tile on Hopper's warpgroup MMA (wgmma.cuh, sm_90a): the shared-memory
// stage, the register-staged operand pipeline (global -> registers -> split -> shared), the
// mainloop, the accumulator -> C map, and the dense row-major loader (L1_003's operands).
//
// Why register staging and not cp.async: wgmma reads its operands from shared memory, and 3xTF32
// needs each operand's big and small parts there (x = big + small + r, tf32x3/mma.cuh), so every
// value passes through the registers once anyway to be split. Loading into registers also takes
// any alignment (4-byte loads, coalesced along a row) and lets B be transposed on its way into the
// K-major layout that TF32 wgmma requires for both operands.
//
// Tile: CTA 128 (M) x 256 (N) x 32 (K per stage), 256 threads = 2 warpgroups, warpgroup g owns
// rows 64 g .. 64 g + 63 and all 256 columns (one m64n256k8 instruction per k8 step and product
// term, 128 fp32 accumulators per thread). Per k-tile and warpgroup: 4 k8 steps x 3 terms
// (a_small b_big, a_big b_small, a_big b_big: the small products first) = 12 wgmmas.
// Shared memory: two stages of {A big, A small: 128 x 32; B big, B small: 256 x 32} fp32 =
// 2 x 96 KB (one CTA per SM), each tile K-major and 128-byte swizzled (wgmma.cuh).
//
// Pipeline (k-tile t): issue stage t % 2's wgmmas and commit them; wait until this warpgroup's
// previous group is done; barrier (both warpgroups are then done with stage (t + 1) % 2); split
// and store the registers holding k-tile t + 1 into stage (t + 1) % 2, fence them for the async
// proxy, load k-tile t + 2 into the registers; barrier. The stores and loads overlap the wgmmas.
//
// Thread safety: device functions without state.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/cores/tf32x3/wgmma.cuh"

namespace kb::tf32x3::wgmma_gemm {

constexpr int kBM = 128;       // CTA tile rows
constexpr int kBN = 256;       // CTA tile columns (one m64n256 instruction)
constexpr int kBK = 32;        // K per stage: one 128-byte swizzled row
constexpr int kThreads = 256;  // two warpgroups
constexpr int kAccs = 128;     // accumulators per thread (64 x 256 / 128)
static_assert(kBK == wgmma::kSwizzleRowFloats, "one swizzled row per k-tile");

struct Stage {
  float a_big[kBM * kBK], a_small[kBM * kBK];  // K-major, 128-byte swizzled (wgmma.cuh)
  float b_big[kBN * kBK], b_small[kBN * kBK];
};
constexpr int kStages = 2;
constexpr int kAlign = wgmma::kSwizzleAtomBytes;  // each tile starts on a swizzle atom
constexpr int kSmemBytes = kStages * static_cast<int>(sizeof(Stage)) + kAlign;
static_assert(sizeof(Stage) % kAlign == 0 && (kBM * kBK * 4) % kAlign == 0, "atom-aligned tiles");

__device__ __forceinline__ Stage* stages(void* smem_raw) {
  const auto base = reinterpret_cast<uintptr_t>(smem_raw);
  return reinterpret_cast<Stage*>((base + kAlign - 1) & ~uintptr_t{kAlign - 1});
}

// Splits x and stores big and small at index i of a (big, small) tile pair.
__device__ __forceinline__ void store_split(float* big, float* small, int i, float x) {
  const SplitTf32 s = split_tf32(x);
  big[i] = __uint_as_float(s.big);
  small[i] = __uint_as_float(s.small);
}

// One warpgroup's 12 wgmmas for one stage: rows 64 g.. of A, all of B.
__device__ __forceinline__ void mma_stage(const Stage& st, int group, float (&acc)[kAccs]) {
  const float* a_big = st.a_big + group * 64 * kBK;
  const float* a_small = st.a_small + group * 64 * kBK;
#pragma unroll
  for (int s = 0; s < kBK / 8; ++s) {
    const uint64_t ab = wgmma::swizzled_descriptor(a_big + 8 * s);
    const uint64_t as = wgmma::swizzled_descriptor(a_small + 8 * s);
    const uint64_t bb = wgmma::swizzled_descriptor(st.b_big + 8 * s);
    const uint64_t bs = wgmma::swizzled_descriptor(st.b_small + 8 * s);
    wgmma::mma_m64n256k8(acc, as, bb);
    wgmma::mma_m64n256k8(acc, ab, bs);
    wgmma::mma_m64n256k8(acc, ab, bb);
  }
}

// The mainloop over k-tiles [0, k_tiles): acc (zeroed here) += A_tile * B_tile. Loader: fetch(t)
// loads k-tile t into the loader's registers; stash(Stage&) splits and stores them.
template <typename Loader>
__device__ __forceinline__ void mainloop(Loader& loader, int k_tiles, Stage* st,
                                         float (&acc)[kAccs]) {
  const int group = static_cast<int>(threadIdx.x) / 128;
#pragma unroll
  for (int i = 0; i < kAccs; ++i) acc[i] = 0.0f;
  loader.fetch(0);
  loader.stash(st[0]);
  wgmma::fence_operand_stores();
  if (k_tiles > 1) loader.fetch(1);
  __syncthreads();
  for (int t = 0; t < k_tiles; ++t) {
    wgmma::fence();
    mma_stage(st[t & 1], group, acc);
    wgmma::commit_group();
    wgmma::wait_group<1>(acc);  // this warpgroup's k-tile t - 1 is done
    __syncthreads();            // both warpgroups': stage (t + 1) % 2 is free
    if (t + 1 < k_tiles) {
      loader.stash(st[(t + 1) & 1]);
      wgmma::fence_operand_stores();
      if (t + 2 < k_tiles) loader.fetch(t + 2);
    }
    __syncthreads();
  }
  wgmma::wait_group<0>(acc);
}

// The global row and column of accumulator i of thread `tid` (0..255) in the CTA tile.
__device__ __forceinline__ int acc_row(int tid, int i) {
  return (tid / 128) * 64 + ((tid / 32) % 4) * 16 + (tid % 32) / 4 + 8 * ((i >> 1) & 1);
}
__device__ __forceinline__ int acc_col(int tid, int i) {
  return 8 * (i >> 2) + 2 * (tid % 4) + (i & 1);
}

// Dense row-major operands of one CTA tile: A (rows x K, row stride lda), B (K x cols, row stride
// ldb); rows / cols in range below `rows` / `cols`, k below `k`; out of range loads as zero.
// Thread t loads A at k = t % 32 of rows t / 32 + 8 j (16 values: a warp reads one 128-byte row
// segment), and B's column t at the 32 k of the tile (32 values: a warp reads 128 contiguous
// bytes of one row of B per k), which it stores as eight 16-byte chunks of its K-major row.
struct DenseLoader {
  static constexpr int kAPer = kBM * kBK / kThreads;  // 16
  static constexpr int kBPer = kBK;                   // 32
  const float* a;                                     // the tile's first row, k = 0
  const float* b;                                     // the tile's first column, k = 0
  int64_t lda, ldb;
  int rows, cols, k;
  float ra[kAPer], rb[kBPer];

  __device__ __forceinline__ void fetch(int tile) {
    const int tid = static_cast<int>(threadIdx.x);
    const int ka = tile * kBK + tid % kBK;
    const float* pa = a + int64_t{tid / kBK} * lda + ka;
#pragma unroll
    for (int j = 0; j < kAPer; ++j) {
      const int row = tid / kBK + 8 * j;
      ra[j] = row < rows && ka < k ? pa[8 * j * lda] : 0.0f;
    }
    const int kb0 = tile * kBK;
    const float* pb = b + int64_t{kb0} * ldb + tid;
    const bool col_ok = tid < cols;
#pragma unroll
    for (int q = 0; q < kBPer; ++q) rb[q] = col_ok && kb0 + q < k ? pb[q * ldb] : 0.0f;
  }

  __device__ __forceinline__ void stash(Stage& st) const {
    const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
    for (int j = 0; j < kAPer; ++j)
      store_split(st.a_big, st.a_small, wgmma::swizzled_index(tid / kBK + 8 * j, tid % kBK), ra[j]);
#pragma unroll
    for (int c = 0; c < kBK / 4; ++c) {
      float4 big, small;
      split_tf32_quad(rb + 4 * c, big, small);
      const int i = wgmma::swizzled_index(tid, 4 * c);
      *reinterpret_cast<float4*>(st.b_big + i) = big;
      *reinterpret_cast<float4*>(st.b_small + i) = small;
    }
  }
};

}  // namespace kb::tf32x3::wgmma_gemm
