// L1_003's path for products of a thin K (K <= kMaxK, namespace thin), taken by custom.cu's
// takes_thin_k.
//
// With K of a few terms each output costs K multiply-adds and one 4-byte store: the product is a
// write of C (batch x M x N floats), and the tiles built for reuse along K spend their time on
// pipeline fill and a strided epilogue. The mixed-regime sweep (seed 77, H100) measured the
// mma.sync tile at 0.18x the reference at 97 x 431 x 5 x 1357 (620 against 112 us), where writing
// C's 227 MB takes ~70 us. Here a CTA of kThreads threads owns `rows` rows of A (64, fewer where
// the grid would be under kMinCtasPerSm CTAs an SM) and cols x `lanes` columns of C (cols =
// cols_per_thread(K), 4 or 2 so that B's registers stay under ~64; lanes 32 .. kThreads: N / cols
// rounded up to a power of two): thread t keeps B(k, col) for its cols columns col = n0 + t %
// lanes + lanes j and every k in registers (K a template argument: the loops unroll whole), the
// CTA's A rows (one contiguous run of rows x K floats) sit in shared memory, and the threads walk
// the rows kThreads / lanes at a time: per row, K broadcast loads of A serve `cols` outputs, each
// one chain of K FMAs (k ascending) and one store, consecutive threads on consecutive columns
// (coalesced at any alignment of N).
// Measured (H100, session 39, first form: one column a thread, K unrolled to 4, 8 or 16 with
// predicates): 97 x 431 x 5 x 1357 0.62 -> 0.155 ms (reference 0.106-0.117), 8 x 1000 x 9 x 999
// 0.098 -> 0.025 (0.021), but 5 x 97 x 5 x 301 0.006 -> 0.011 (20 CTAs).
// Strict fp32 (one chain per output): no accuracy caveat.
//
// Thread safety: device code without state; launch_thin_k is stateless.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L1_003_batched_matmul/gemm_args.h"

namespace kb::custom::L1_003::thin {

constexpr int kThreads = 256;
constexpr int kMaxRows = 64;      // rows of A (and C) a CTA owns at most
constexpr int kMaxK = 16;         // the path's K
constexpr int kMinCtasPerSm = 4;  // the grid rows_for aims at

// Columns of C a thread owns, `lanes` apart: 4 x K registers of B up to K = 8, then 2 x K.
constexpr int cols_per_thread(int64_t k) {
  return k <= 8 ? 4 : 2;
}

// The CTA's lanes across columns: N / cols_per_thread(K) rounded up to a power of two, from one
// warp to kThreads.
constexpr int lanes_for(int64_t k, int64_t n) {
  int lanes = 32;
  while (lanes < kThreads && int64_t{lanes} * cols_per_thread(k) < n) lanes *= 2;
  return lanes;
}

// The rows a CTA owns: kMaxRows, halved (down to one pass of the CTA's threads) while the grid
// would be under kMinCtasPerSm CTAs an SM.
inline int rows_for(int64_t batch, int64_t m, int64_t k, int64_t n, int sms) {
  const int lanes = lanes_for(k, n);
  const int64_t tile_cols = int64_t{lanes} * cols_per_thread(k);
  const int64_t col_tiles = (n + tile_cols - 1) / tile_cols;
  int rows = kMaxRows;
  while (rows > kThreads / lanes &&
         (m + rows - 1) / rows * col_tiles * batch < int64_t{kMinCtasPerSm} * sms)
    rows /= 2;
  return rows;
}

// grid: (column tiles, ceil(M / rows), batch entries); p.tiles_n unused. K == p.k.
template <int K>
__global__ void __launch_bounds__(kThreads)
    thin_k_kernel(const GemmArgs p, int lanes_log2, int cta_rows) {
  __shared__ __align__(16) float a_s[kMaxRows * (K > 0 ? K : 1)];  // A(m0 + r, k) at r K + k
  const int t = static_cast<int>(threadIdx.x);
  const int lanes = 1 << lanes_log2;
  constexpr int kCols = cols_per_thread(K);
  const int col0 = static_cast<int>(blockIdx.x) * lanes * kCols + (t & (lanes - 1));
  const int m0 = static_cast<int>(blockIdx.y) * cta_rows;
  const int64_t bi = blockIdx.z;
  const int rows = min(cta_rows, p.m - m0);

  const float* a = p.a + (bi * p.m + m0) * K;  // the CTA's rows: rows x K contiguous floats
  for (int i = t; i < rows * K; i += kThreads) a_s[i] = __ldg(a + i);
  float b[kCols][K > 0 ? K : 1];
  const float* b_col = p.b + bi * K * p.n + col0;
#pragma unroll
  for (int j = 0; j < kCols; ++j)
#pragma unroll
    for (int k = 0; k < K; ++k)
      b[j][k] = col0 + lanes * j < p.n ? __ldg(b_col + int64_t{k} * p.n + lanes * j) : 0.0f;
  __syncthreads();
  if (col0 >= p.n) return;

  float* c = p.c + (bi * p.m + m0) * p.n + col0;
  for (int r = t >> lanes_log2; r < rows; r += kThreads >> lanes_log2) {
    float a_r[K > 0 ? K : 1];
#pragma unroll
    for (int k = 0; k < K; ++k) a_r[k] = a_s[r * K + k];
    float* c_row = c + int64_t{r} * p.n;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float acc = 0.0f;
#pragma unroll
      for (int k = 0; k < K; ++k) acc = fmaf(a_r[k], b[j][k], acc);
      if (col0 + lanes * j < p.n) c_row[lanes * j] = acc;
    }
  }
}

// Whether the grid's y dimension holds M in CTAs of `rows` rows.
inline bool fits(int64_t m, int rows) {
  return rows >= 1 && (m + rows - 1) / rows <= 65535;
}

// K in 0 .. kMaxK as a template argument.
template <int K = 0>
cudaError_t launch_for_k(const GemmArgs& p, dim3 grid, int lanes_log2, int rows,
                         cudaStream_t stream) {
  if constexpr (K <= kMaxK) {
    if (p.k != K) return launch_for_k<K + 1>(p, grid, lanes_log2, rows, stream);
    thin_k_kernel<K><<<grid, kThreads, 0, stream>>>(p, lanes_log2, rows);
    return cudaGetLastError();
  } else {
    return cudaErrorInvalidValue;
  }
}

// Launches the thin-K kernel over `batch` entries (p.k <= kMaxK, batch <= 65,535) with `rows`
// rows a CTA (rows_for; fits(p.m, rows)).
inline cudaError_t launch_thin_k(const GemmArgs& p, int batch, int rows, cudaStream_t stream) {
  if (p.k > kMaxK || !fits(p.m, rows) || rows > kMaxRows) return cudaErrorInvalidValue;
  const int lanes = lanes_for(p.k, p.n);
  int lanes_log2 = 0;
  while ((1 << lanes_log2) < lanes) ++lanes_log2;
  const int tile_cols = lanes * cols_per_thread(p.k);
  const dim3 grid(static_cast<unsigned>((p.n + tile_cols - 1) / tile_cols),
                  static_cast<unsigned>((p.m + rows - 1) / rows), static_cast<unsigned>(batch));
  return launch_for_k(p, grid, lanes_log2, rows, stream);
}

}  // namespace kb::custom::L1_003::thin
