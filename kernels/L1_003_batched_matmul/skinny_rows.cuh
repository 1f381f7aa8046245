// L1_003's path for products of few rows (M <= kMaxRows, namespace skinny), taken by custom.cu's
// takes_skinny.
//
// With M of a few rows the product is a stream of B (batch x K x N floats, each used M times) and
// the 64 x 64 FMA tile wastes most of its rows: the seed-2027 sweep measured it at 0.57x the
// reference at 83 x 3 x 215 x 201 (H100, 32.0 against 18.1 us), where reading B once takes ~5 us.
// Here a CTA of kWarps warps owns kRows rows of A (M rounded up to 4, 8, 12 or 16) and kCols = 32
// columns of C: lane = column, warp = a slice of K (k = warp, warp + kWarps, ...). A's rows for a
// chunk of kChunk k are staged in shared memory transposed (a_t[k][row], a float4 per 4 rows, a
// broadcast read for the whole warp); each lane streams its column of B in groups of kInFlight
// loads, the chunk's first group issued before A is staged and each next group while the current
// one's FMAs run, and keeps kRows sums. The warps' sums meet in shared memory and are added in warp
// order (deterministic). Grids under kCtasPerSm CTAs an SM split K (split_plan.h) into
// partials that custom.cu sums with kernels/cores/split_sum.cuh, as the FMA tile's splits are.
// Strict fp32 (a chain per output, warp and split, then ordered sums): no accuracy caveat.
// Measured (H100, session 37; custom.cu's takes_skinny has the figures): 83 x 3 x 215 x 201 32 ->
// 14 us against the reference's 18. Past 16 rows the FMA tile's reuse of B wins (branch
// next/s37-rows48: CTAs of 24-48 rows lost at 6 of 9 shapes, docs/kernels.md's session 37).
//
// Thread safety: device code without state; launch_skinny_bmm is stateless.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L1_003_batched_matmul/gemm_args.h"

namespace kb::custom::L1_003::skinny {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kCols = 32;           // columns of C a CTA owns: one a lane
constexpr int kChunk = 256;         // k per staging of A
constexpr int kMaxRows = 16;        // rows of A a CTA owns at most
constexpr int kCtasPerSm = 4;       // resident (64 registers) and the split-K target
constexpr int kMinKPerSplit = 128;  // so a warp walks >= 16 k a split

// The rows a CTA owns for M (M <= kMaxRows: M rounded up to a multiple of 4; more: chunks of 16).
constexpr int rows_for(int64_t m) {
  return m <= 4 ? 4 : m <= 8 ? 8 : m <= 12 ? 12 : kMaxRows;
}

// Loads of B a lane has outstanding: 8, or 4 with 16 rows of sums (8 spilled under 64 registers).
template <int kRows>
constexpr int kInFlight = kRows < kMaxRows ? 8 : 4;

// A's chunk, transposed: a row pitch of an odd number of float4s (kRows, or kRows + 4 for 8 and 16
// rows), so that a quarter-warp's float4 stores (8 consecutive k) land on 8 different 16-byte
// bank groups.
template <int kRows>
constexpr int kPitch = kRows / 4 % 2 == 1 ? kRows : kRows + 4;

template <int kRows>
union Shared {
  float a_t[kChunk][kPitch<kRows>];  // a_t[k][row]: A(m0 + row, kc + k)
  float sums[kWarps][kRows][kCols];  // each warp's sums, for the ordered add
};

// grid: (tiles_n x splits, row chunks, batch entries), p.tiles_n = ceil(N / kCols); CTA x takes
// column tile x % tiles_n and split x / tiles_n, i.e. k in [split k_split, (split + 1) k_split).
// One split writes C; more write partials[split] (gridDim.z, M, N).
template <int kRows>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) skinny_bmm_kernel(const GemmArgs p) {
  __shared__ __align__(16) Shared<kRows> shared;
  const int x = static_cast<int>(blockIdx.x);
  const int split = x / p.tiles_n;
  const int n0 = x % p.tiles_n * kCols, m0 = static_cast<int>(blockIdx.y) * kRows;
  const int64_t bi = blockIdx.z;
  const int k_begin = split * p.k_split, k_end = min(p.k, k_begin + p.k_split);
  const int rows = min(kRows, p.m - m0);
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const bool col_ok = n0 + lane < p.n;
  const float* a = p.a + (bi * p.m + m0) * p.k;
  const float* b = p.b + bi * p.k * p.n + n0 + lane;

  constexpr int kLoads = kInFlight<kRows>, kGroup = kLoads * kWarps;
  float acc[kRows] = {};
  for (int kc = k_begin; kc < k_end; kc += kChunk) {
    const int len = min(kChunk, k_end - kc);
    const float* bk = b + int64_t{kc} * p.n;
    // A group of the lane's column of B: k0 + j kWarps for j < kLoads, zeros past the chunk.
    const auto load_group = [&](int k0, float(&v)[kLoads]) {
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        const int k = k0 + j * kWarps;
        v[j] = col_ok && k < len ? __ldg(bk + int64_t{k} * p.n) : 0.0f;
      }
    };
    float next[kLoads];
    load_group(warp, next);  // in flight while A is staged
    // Stage A(m0 .. m0 + kRows, kc .. kc + kChunk) as a_t[k][row], zeros past M and the range.
    constexpr int kQuads = kChunk * kRows / 4;
    for (int i = t; i < kQuads; i += kThreads) {
      const int k = i % kChunk, r = i / kChunk * 4;
      float v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q)
        v[q] = r + q < rows && k < len ? __ldg(a + int64_t{r + q} * p.k + kc + k) : 0.0f;
      *reinterpret_cast<float4*>(&shared.a_t[k][r]) = make_float4(v[0], v[1], v[2], v[3]);
    }
    __syncthreads();
    // Each group's products while the next group's loads are in flight.
    for (int k0 = warp; k0 < len; k0 += kGroup) {
      float cur[kLoads];
#pragma unroll
      for (int j = 0; j < kLoads; ++j) cur[j] = next[j];
      if (k0 + kGroup < len) load_group(k0 + kGroup, next);
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        const int k = k0 + j * kWarps;
        if (k >= len) break;
#pragma unroll
        for (int r = 0; r < kRows; r += 4) {
          const float4 av = *reinterpret_cast<const float4*>(&shared.a_t[k][r]);
          acc[r] = fmaf(av.x, cur[j], acc[r]);
          acc[r + 1] = fmaf(av.y, cur[j], acc[r + 1]);
          acc[r + 2] = fmaf(av.z, cur[j], acc[r + 2]);
          acc[r + 3] = fmaf(av.w, cur[j], acc[r + 3]);
        }
      }
    }
    __syncthreads();  // a_t is free (and becomes sums after the last chunk)
  }

#pragma unroll
  for (int r = 0; r < kRows; ++r) shared.sums[warp][r][lane] = acc[r];
  __syncthreads();
  const bool one_split = static_cast<int>(gridDim.x) == p.tiles_n;
  float* out = one_split ? p.c : p.partials + int64_t{split} * gridDim.z * p.m * p.n;
  float* c = out + (bi * p.m + m0) * p.n + n0;
  for (int i = t; i < kRows * kCols; i += kThreads) {
    const int r = i / kCols, col = i % kCols;
    if (r >= rows || n0 + col >= p.n) continue;
    float sum = shared.sums[0][r][col];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) sum += shared.sums[w][r][col];
    c[int64_t{r} * p.n + col] = sum;
  }
}

// Launches the kernel for p (tiles_n = ceil(N / kCols), k_split and partials set by the caller)
// over `batch` entries in `splits` splits of K; the caller sums partials when splits > 1.
inline cudaError_t launch_skinny_bmm(const GemmArgs& p, int splits, int batch,
                                     cudaStream_t stream) {
  const int rows = rows_for(p.m);
  const dim3 grid(static_cast<unsigned>(p.tiles_n * splits),
                  static_cast<unsigned>((p.m + rows - 1) / rows), static_cast<unsigned>(batch));
  if (rows == 4)
    skinny_bmm_kernel<4><<<grid, kThreads, 0, stream>>>(p);
  else if (rows == 8)
    skinny_bmm_kernel<8><<<grid, kThreads, 0, stream>>>(p);
  else if (rows == 12)
    skinny_bmm_kernel<12><<<grid, kThreads, 0, stream>>>(p);
  else
    skinny_bmm_kernel<kMaxRows><<<grid, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kb::custom::L1_003::skinny
