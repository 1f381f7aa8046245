// 3xTF32 1x1 convolution (a GEMM per image) with a per-row moment epilogue, for L3_025 custom.
//   Y[n] = Wcat @ x[n];  Wcat: (M, K), x: (batch, K, N = H*W), Y rows split into two outputs.
//   moments[r] += (sum_d, sum_d^2) over the batch's columns, d = Y[n][r][col] - shift[r].
//
// The tile of kernels/cores/tf32x3/gemm128.cuh, shared with L1_003 (128 x 128 x 32, 3-stage
// cp.async, 8 warps of 64 x 32, its swizzles, index maps and 3xTF32 mma stage), with loaders and
// an epilogue of its own: same vector/scalar copy paths and zero-filled tails. Changes: A is one
// matrix for every image (batch stride 0), m-tiles are fastest in blockIdx.x (x read once from
// DRAM), and the epilogue routes rows r < split to `hi` and the rest to `lo`, and reduces each
// row's moments (fp32 within a quad, double across warps, one double atomicAdd per row and CTA).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include "kernels/cores/tf32x3/gemm128.cuh"

namespace kb::custom::L3_025 {

using namespace gemm128;  // tile geometry, index maps, mma_stage

// ---- arguments ----
struct GemmArgs {
  const float* a;      // Wcat: (M, K), shared by every image
  const float* b;      // x: (batch, K, N)
  float* hi;           // rows r < split: (batch, split, N)      (the shortcut conv, into `out`)
  float* lo;           // rows r >= split: (batch, M - split, N) (conv1)
  const float* shift;  // [M]: moments are of Y - shift[r] (a value near the row's mean)
  double2* moments;    // [M]: += (sum d, sum d^2), d = Y - shift (zeroed before the launch)
  int m, n, k, split;
  int tiles_m;  // ceil(M / kBM); blockIdx.x = n_tile * tiles_m + m_tile, blockIdx.y = batch
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
  StageLoader<kVec> l{a_tile + int64_t{sa.row} * p.k + sa.col,
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

// ---- the kernel: Y = Wcat @ x[n] with a row-moment epilogue ----

// Row r of image bi in the output it belongs to.
__device__ __forceinline__ float* output_row(const GemmArgs& p, int64_t bi, int r) {
  if (r < p.split) return p.hi + (bi * p.split + r) * p.n;
  return p.lo + (bi * (p.m - p.split) + (r - p.split)) * p.n;
}

template <bool kVec>
__device__ __forceinline__ void store_row_values(float* dst, int col, int cols,
                                                 const float (&v)[4]) {
  if constexpr (kVec) {
    if (col < cols) *reinterpret_cast<float4*>(dst + col) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int nt = 0; nt < kMmaTilesN; ++nt)
      if (col + nt < cols) dst[col + nt] = v[nt];
  }
}

// Stores the tile and adds its per-row moments (of the in-range columns) to p.moments:
// fp32 over a thread's 8 values and a quad's 32, double across the 4 warps and the grid.
template <bool kVec>
__device__ __forceinline__ void store_tile_and_moments(
    const GemmArgs& p, int64_t bi, int m0, int n0, int rows, int cols, int warp_m, int warp_n,
    int lane, float* smem, const float (&acc)[kMmaTilesM][kMmaTilesN][4]) {
  float2* red = reinterpret_cast<float2*>(smem);  // [kWarpsN][kBM]; the pipeline is drained
#pragma unroll
  for (int mt = 0; mt < kMmaTilesM; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = c_row(warp_m, lane, mt, half);
      const bool row_ok = row < rows;
      const float sh = row_ok ? p.shift[m0 + row] : 0.0f;
      float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
      for (int vec = 0; vec < 2; ++vec) {
        const int col = c_col(warp_n, lane, vec);
        float v[4];
#pragma unroll
        for (int nt = 0; nt < kMmaTilesN; ++nt) {
          v[nt] = acc[mt][nt][2 * half + vec];
          const float d = col + nt < cols ? v[nt] - sh : 0.0f;
          s1 += d;
          s2 = fmaf(d, d, s2);
        }
        if (row_ok) store_row_values<kVec>(output_row(p, bi, m0 + row) + n0, col, cols, v);
      }
#pragma unroll
      for (int off = 1; off < 4; off *= 2) {  // the quad sharing this row
        s1 += __shfl_xor_sync(0xffffffffu, s1, off);
        s2 += __shfl_xor_sync(0xffffffffu, s2, off);
      }
      if ((lane & 3) == 0) red[warp_n * kBM + row] = make_float2(s1, s2);
    }
  }
  __syncthreads();
  const int row = threadIdx.x;
  if (row < kBM && row < rows) {
    double s1 = 0.0, s2 = 0.0;
#pragma unroll
    for (int w = 0; w < kWarpsN; ++w) {
      const float2 v = red[w * kBM + row];
      s1 += v.x;
      s2 += v.y;
    }
    atomicAdd(&p.moments[m0 + row].x, s1);
    atomicAdd(&p.moments[m0 + row].y, s2);
  }
}

// One CTA computes one 128 x 128 tile Y[b][m0 : m0 + 128, n0 : n0 + 128]. The m-tiles of one
// n-tile are consecutive in blockIdx.x, so x is read from DRAM once (Wcat stays in L2).
template <bool kVec>
__global__ void __launch_bounds__(kThreads, 2) tf32x3_conv1x1_moments_kernel(const GemmArgs p) {
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warp_m = warp % kWarpsM;
  const int warp_n = warp / kWarpsM;
  const int m0 = static_cast<int>(blockIdx.x % p.tiles_m) * kBM;
  const int n0 = static_cast<int>(blockIdx.x / p.tiles_m) * kBN;
  const int64_t bi = blockIdx.y;
  const float* a_tile = p.a + int64_t{m0} * p.k;
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
    if (next < k_tiles)
      load_stage<kVec>(p, loader, smem_base + write_stage * kStageBytes, next * kBK);
    cp_async_commit();
    const float* stage = smem + read_stage * (kStageFloatsA + kStageFloatsB);
    mma_stage(stage, a_base, b_base, acc);
    read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
    write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();  // only empty groups can be pending here
  __syncthreads();     // every warp is done with the stages: the epilogue reuses them

  store_tile_and_moments<kVec>(p, bi, m0, n0, rows, cols, warp_m, warp_n, lane, smem, acc);
}

}  // namespace kb::custom::L3_025
