// 3xTF32 batched SGEMM on the tensor cores (mma.sync m16n8k8 TF32), the kernel of L1_003 custom.
//   C[b] = A[b] @ B[b];  A: (batch, M, K), B: (batch, K, N), C: (batch, M, N), fp32, row-major,
//   dense.
//
// Owns: the kernel (loaders, pipeline, store). Its tile geometry, index maps and mma stage are
// kernels/cores/tf32x3/gemm128.cuh (shared with L3_025). Launch and path choice: custom.cu.
//
// Precision (error-compensated TF32, "3xTF32"): each operand x is split into
//   big = tf32_rna(x)  (round to nearest, ties away: the value of cvt.rna.tf32.f32, computed with
//   two integer ops, see tf32_rna_bits),  small = tf32_rna(x - big)
// (x - big is exact in fp32), so x = big + small + r with |r| <= 2^-22 |x|. The product is
// a_big*b_small + a_small*b_big + a_big*b_big (small*small, <= 2^-22 |ab|, dropped), the two
// small products first. Tensor-core products of TF32 values are exact; sums are fp32.
// Error estimate for K = 1024, A, B ~ U[0, 1) (outputs ~256, allowed 1e-4 + 1e-4 * 256 ~ 0.026):
//  - operand split + dropped term: <= ~3 * 2^-22 relative per product, random sign: ~3e-6 rms
//    per output (worst-case same-sign bound 1024 * 0.25 * 7e-7 = 2e-4);
//  - fp32 accumulation: 3 MMAs per k8 step = 384 accumulations into one fp32 accumulator
//    (ulp 1.5e-5 .. 3e-5 near the end). With round-to-nearest sums ~1e-4; even if the tensor core
//    truncates its sums (biased, as measured on V100/A100) the bound is 384 * ~1.5e-5 = 6e-3.
//  Host emulation of this kernel (index maps, splits, m16n8k8 fragments; K = 1024, 256 x 256
//  outputs, U[0, 1)): max |err| 3.3e-4 with round-to-nearest MMA sums (1.2% of the budget),
//  2.5e-3 with truncating MMA sums (9%); an fp32 loop gives 5.3e-4, plain TF32-RN 1.2e-2 (47%).
//
// Tiling: CTA tile 128 x 128, K step 32, 3-stage cp.async pipeline (96 KB shared memory, two
// CTAs per SM), 8 warps as 2 (M) x 4 (N), warp tile 64 x 32 = 4 x 4 m16n8 tiles.
//  - Shared A stage: [128 rows][32 k], 16-byte chunks XOR-swizzled by row (chunk ^ 2*(row & 3)).
//    Fragments: for k8 step s the MMA's logical k = t and t + 4 take physical k = 8s + 2t and
//    8s + 2t + 1, so (a0, a2) and (a1, a3) are one 8-byte load each, conflict-free.
//  - Shared B stage: [32 k][128 n], chunks swizzled by k (chunk ^ 2*((k >> 1) & 3)). Within a
//    warp's 32 columns the MMA's logical column j of n-tile nt is physical column 4j + nt, so a
//    thread's B values for the 4 n-tiles are one 16-byte load, and its C values are 8 adjacent
//    columns (two 16-byte stores per row).
//  - Out-of-range rows, columns and k are zero-filled by cp.async (src-size 0), stores guarded.
//    Vector path: 16-byte copies (needs K % 4 == 0, N % 4 == 0 and 16-byte aligned pointers);
//    scalar path: 4-byte copies and scalar stores, for any shape.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include "kernels/cores/tf32x3/gemm128.cuh"

namespace kb::custom::L1_003 {

using namespace gemm128;  // tile geometry, index maps, mma_stage

// ---- the kernel ----

struct GemmArgs {
  const float* a;  // (batch, M, K), already offset to this launch's first batch entry
  const float* b;  // (batch, K, N)
  float* c;        // (batch, M, N)
  int m, n, k;
  int tiles_n;     // ceil(N / kBN); blockIdx.x = m_tile * tiles_n + n_tile, blockIdx.y = batch
};

// One thread's share of the global -> shared copies of a stage. Pointers advance one k-tile per
// load; rows / columns out of range were folded into masks once per tile.
template <bool kVec>
struct StageLoader {
  const float* a;      // A element of copy 0 at the current k-tile
  const float* b;      // B element of copy 0 at the current k-tile
  int a_smem, b_smem;  // element index of copy 0 in a stage
  int a_col, b_row;    // k of A copy 0 within the k-tile; k row of B copy 0
  uint32_t a_rows_ok;  // bit j: A copy j's row < M
  uint32_t b_cols_ok;  // bit j: B copy j's column < N (vector path: one bit for all)
};

template <bool kVec>
__device__ __forceinline__ StageLoader<kVec> make_loader(const GemmArgs& p, const float* a_tile,
                                                         const float* b_tile, int rows, int cols) {
  const int tid = threadIdx.x;
  const CopySlot sa = kVec ? a_copy_vec(tid, 0) : a_copy_scalar(tid, 0);
  const CopySlot sb = kVec ? b_copy_vec(tid, 0) : b_copy_scalar(tid, 0);
  StageLoader<kVec> l{a_tile + int64_t{sa.row} * p.k + sa.col, b_tile + int64_t{sb.row} * p.n + sb.col,
                      sa.smem, sb.smem, sa.col, sb.row, 0u, 0u};
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
template <bool kVec>
__device__ __forceinline__ void load_stage(const GemmArgs& p, StageLoader<kVec>& l, uint32_t stage,
                                           int k0) {
  const uint32_t sa = stage + l.a_smem * 4;
  const uint32_t sb = stage + (kStageFloatsA + l.b_smem) * 4;
  const int k_left = p.k - k0;  // valid k within this k-tile: < k_left
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
    const int tid = threadIdx.x;
#pragma unroll 4
    for (int j = 0; j < 16; ++j) {
      const bool ok = ((l.a_rows_ok >> j) & 1u) && l.a_col < k_left;
      cp_async_4(sa + (a_copy_scalar_fast(0, j) * 4), ok ? l.a + int64_t{8 * j} * p.k : p.a, ok);
    }
#pragma unroll 4
    for (int j = 0; j < 16; ++j) {
      const CopySlot s = b_copy_scalar(tid, j);  // the B swizzle changes with j here
      const bool ok = ((l.b_cols_ok >> j) & 1u) && s.row < k_left;
      cp_async_4(stage + (kStageFloatsA + s.smem) * 4, ok ? l.b + int64_t{2 * j} * p.n : p.b, ok);
    }
  }
  l.a += kBK;
  l.b += int64_t{kBK} * p.n;
}


template <bool kVec>
__device__ __forceinline__ void store_tile(const GemmArgs& p, float* c_tile, int rows, int cols,
                                           int warp_m, int warp_n, int lane,
                                           const float (&acc)[kMmaTilesM][kMmaTilesN][4]) {
#pragma unroll
  for (int mt = 0; mt < kMmaTilesM; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = c_row(warp_m, lane, mt, half);
      if (row >= rows) continue;
      float* c_row_ptr = c_tile + int64_t{row} * p.n;
#pragma unroll
      for (int vec = 0; vec < 2; ++vec) {
        const int col = c_col(warp_n, lane, vec);
        const int e = 2 * half + vec;  // c_e of each n-tile
        if constexpr (kVec) {
          if (col < cols)  // N % 4 == 0: the whole float4 is in range
            *reinterpret_cast<float4*>(c_row_ptr + col) =
                make_float4(acc[mt][0][e], acc[mt][1][e], acc[mt][2][e], acc[mt][3][e]);
        } else {
#pragma unroll
          for (int nt = 0; nt < kMmaTilesN; ++nt)
            if (col + nt < cols) c_row_ptr[col + nt] = acc[mt][nt][e];
        }
      }
    }
  }
}

// One CTA computes one 128 x 128 tile C[b][m0 : m0 + 128, n0 : n0 + 128]. Tiles of one batch
// entry are consecutive in blockIdx.x, n fastest, so co-resident CTAs share A rows and B in L2.
template <bool kVec>
__global__ void __launch_bounds__(kThreads, 2) tf32x3_bmm_kernel(const GemmArgs p) {
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;
  const int m0 = static_cast<int>(blockIdx.x / p.tiles_n) * kBM;
  const int n0 = static_cast<int>(blockIdx.x % p.tiles_n) * kBN;
  const int64_t bi = blockIdx.y;
  const float* a_tile = p.a + (bi * p.m + m0) * p.k;
  const float* b_tile = p.b + bi * p.k * p.n + n0;
  const int rows = p.m - m0, cols = p.n - n0;  // in range: row < rows, col < cols

  StageLoader<kVec> loader = make_loader<kVec>(p, a_tile, b_tile, rows, cols);
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  constexpr uint32_t kStageBytes = (kStageFloatsA + kStageFloatsB) * 4;
  const int k_tiles = (p.k + kBK - 1) / kBK;

  float acc[kMmaTilesM][kMmaTilesN][4];
#pragma unroll
  for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
    for (int nt = 0; nt < kMmaTilesN; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage<kVec>(p, loader, smem_base + s * kStageBytes, s * kBK);
    cp_async_commit();
  }
  const int a_base = a_frag_index(warp_m, lane, 0, 0, 0);
  const int b_base = kStageFloatsA + b_frag_index(warp_n, lane, 0, 0);
  int read_stage = 0, write_stage = kStages - 1;
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();  // k-tile kt has landed (this thread's copies)
    __syncthreads();               // ... everyone's; and write_stage (read at kt - 1) is free
    const int next = kt + kStages - 1;
    if (next < k_tiles) load_stage<kVec>(p, loader, smem_base + write_stage * kStageBytes, next * kBK);
    cp_async_commit();
    const float* stage = smem + read_stage * (kStageFloatsA + kStageFloatsB);
    mma_stage(stage, a_base, b_base, acc);
    read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
    write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();  // only empty groups can be pending here; keep the exit clean

  store_tile<kVec>(p, p.c + (bi * p.m + m0) * p.n + n0, rows, cols, warp_m, warp_n, lane, acc);
}

}  // namespace kb::custom::L1_003
