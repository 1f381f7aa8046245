// 3xTF32 1x1 convolution (a GEMM per image) with a per-row moment epilogue, for L3_025 custom.
//   Y[n] = Wcat @ x[n];  Wcat: (M, K), x: (batch, K, N = H*W), Y rows split into two outputs.
//   moments[r] += (sum_d, sum_d^2) over the batch's columns, d = Y[n][r][col] - shift[r].
//
// The tile of kernels/cores/tf32x3/gemm128.cuh, the dense loader and the mainloop shared with
// L1_003 (128 x 128 x 32, 3-stage cp.async, 8 warps of 64 x 32, same vector/scalar copy paths and
// zero-filled tails), with an epilogue of its own. Changes: A is one matrix for every image
// (batch stride 0), m-tiles are fastest in blockIdx.x (x read once from DRAM), and the epilogue
// routes rows r < split to `hi` and the rest to `lo`, and reduces each row's moments (fp32 within
// a quad, double across warps, one double atomicAdd per row and CTA).
//
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include "kernels/cores/tf32x3/dense_loader.cuh"
#include "kernels/cores/tf32x3/gemm128.cuh"

namespace kb::custom::L3_025 {

using namespace gemm128;  // tile geometry, index maps, mma_stage, the dense loader

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
  const auto [lane, warp_m, warp_n] = warp_pos();
  const int m0 = static_cast<int>(blockIdx.x % p.tiles_m) * kBM;
  const int n0 = static_cast<int>(blockIdx.x / p.tiles_m) * kBN;
  const int64_t bi = blockIdx.y;
  const float* a_tile = p.a + int64_t{m0} * p.k;
  const float* b_tile = p.b + bi * p.k * p.n + n0;
  const int rows = p.m - m0, cols = p.n - n0;  // in range: row < rows, col < cols

  float acc[kMmaTilesM][kMmaTilesN][4];
  dense_mainloop<kVec>(p, smem, a_tile, b_tile, rows, cols, warp_m, warp_n, lane, acc);
  __syncthreads();  // every warp is done with the stages: the epilogue reuses them

  store_tile_and_moments<kVec>(p, bi, m0, n0, rows, cols, warp_m, warp_n, lane, smem, acc);
}

}  // namespace kb::custom::L3_025
