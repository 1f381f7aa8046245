// L1_003's small-grid path: a plain fp32 FMA tile (namespace small), taken by custom.cu's
// takes_small_grid.
//
// For tiny products the tensor path's fixed cost (pipeline fill, three MMAs per product) sets the
// time, and under one wave its 4-byte copies (K or N not a multiple of 4) leave it latency-bound:
// the shape sweep measured 0.80x the reference at 11 x 5 x 47 x 201 and 0.75x at 3 x 379 x 459 x
// 189. This kernel takes 64 x 64 tiles (4x the CTAs of 128 x 128), 16 x 16 threads of 4 x 4
// outputs (32 x 64 tiles of 16 x 8 threads for products of at most 32 rows, where a 64-row tile
// would leave half its rows idle; 64 x 32 for the tiny products of at most 32 columns the narrow
// tile leaves it), K in steps of 16 through a kStages-deep cp.async pipeline (4-byte copies, any
// alignment; zero-filled past the tile and K), and split-K (split_plan.h, fma_split_rule) toward
// four 64 x 64 tiles' threads per SM. Large grids of short, unaligned K take the wide form, 64 x
// 128 tiles of 16 x 8 threads with 8 x 8 outputs each and K in steps of 8 (custom.cu's
// takes_wide_fma): half the shared loads per FMA of the 4 x 4 form, which is issue-bound there. The
// splits are summed in split order in one of two ways:
//  - cluster sum (launch_fma_bmm's cluster_sum, 2 to kMaxClusterSplits splits, sm_90): the
//    splits of a tile are neighbours along x and form one thread-block cluster; each parks its
//    64 x 64 sums in its shared memory, and after the cluster barrier each sums a 1/splits share
//    of the tile over the cluster's shared memory (split 0 + split 1 + ... in order) and stores
//    it in C. No workspace and no second launch: at 71 x 43 x 419 x 255 the separate sum took
//    5.5 of 50 us (session 30's ncu, H100). Measured (session 34, H100): 0.94-1.13x the
//    split_sum path's speed, no gain at that shape; custom.cu leaves it off (kRouteClusterSum).
//  - otherwise every split stores into partials[split] and the caller adds them with
//    kernels/cores/split_sum.cuh, in the same order: both give the same bits.
// Strict fp32 (one FMA chain per output and split, k ascending): no accuracy caveat.
//
// Thread safety: device code without state; launch_fma_bmm is stateless.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L1_003_batched_matmul/gemm_args.h"
#include "kernels/L1_003_batched_matmul/split_plan.h"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::L1_003::small {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;

constexpr int kTile = 64;             // the full tile's rows and columns
constexpr int kWide = 128;            // the wide tile's columns (custom.cu's takes_wide_fma)
constexpr int kStep = 16;             // K per pipeline stage (the wide tile: kStepOf)
constexpr int kStages = 4;            // stages in flight
constexpr int kPer = 4;               // 4 x 4 outputs a thread (the wide tile: kPerOf)
constexpr int kPad = 4;               // a rows padded by 4 floats: float4-aligned, fewer conflicts
constexpr int kMaxClusterSplits = 8;  // the portable cluster size

// A tile of kRows (64, or 32 for products of <= 32 rows: half the idle rows) x kCols (64, or 32
// for products of <= 32 columns) columns, kCols / 4 x kRows / 4 threads of 4 x 4 outputs; the
// wide tile (64 x kWide) 16 x 8 threads of 8 x 8, as 2 x 2 quads of 4 x 4 half a tile apart
// (out_index): a warp's float4 reads of B are then 16 consecutive ones, and each k step reads 4
// float4s for 64 FMAs, not 2 for 16.
template <int kRows, int kCols>
constexpr int kPerOf = kCols == kWide ? 8 : kPer;
template <int kRows, int kCols>
constexpr int kQuadsOf = kPerOf<kRows, kCols> / 4;  // quads a thread along rows and columns
// K per stage: 8 for the wide tile (four stages in 48 KB of static shared memory), else 16.
template <int kRows, int kCols>
constexpr int kStepOf = kPerOf<kRows, kCols> == 8 ? 8 : kStep;
template <int kRows, int kCols>
constexpr int threads_of() {
  constexpr int kP = kPerOf<kRows, kCols>;
  return (kRows / kP) * (kCols / kP);
}
template <int kRows, int kCols>
constexpr int kThreadsOf = threads_of<kRows, kCols>();
// The tile row (column) of a thread's output i along rows (columns) of a tile kSpan long: quad i
// / 4 of the thread's kQuads, kSpan / kQuads apart, at 4 t + i % 4 (t: the thread's ty or tx).
template <int kSpan, int kQuads>
__host__ __device__ constexpr int out_index(int t, int i) {
  return i / 4 * (kSpan / kQuads) + 4 * t + i % 4;
}
// Resident CTAs an SM the registers are bounded for: 1,024 threads (64 registers), the wide tile
// 512 (128 registers: 64 sums a thread).
template <int kRows, int kCols>
constexpr int kMinBlocksOf = (kPerOf<kRows, kCols> == 8 ? 512 : 1024) / kThreadsOf<kRows, kCols>;

template <int kRows, int kCols>
struct Stage {
  static constexpr int kK = kStepOf<kRows, kCols>;
  float a[kK][kRows + kPad];  // A transposed: a[k][row]
  float b[kK][kCols];         // b[k][col]
};
static_assert(kStages * sizeof(Stage<kTile, kTile>) <= 48 * 1024, "static shared memory");
static_assert(kStages * sizeof(Stage<kTile, kWide>) <= 48 * 1024, "static shared memory");
// The kernel's shared memory: the pipeline's stages, then (cluster sum) the split's parked sums.
template <int kRows, int kCols, bool kParked>
union SharedTile {
  Stage<kRows, kCols> stages[kStages];
  float parked[kRows * kCols];  // [row][col]
};
template <int kRows, int kCols>
union SharedTile<kRows, kCols, false> {
  Stage<kRows, kCols> stages[kStages];
};

__device__ __forceinline__ uint32_t smem_address(const float* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The tile's copies, stage after stage: load() copies A(row, k) and B(k, col) for the next kK k
// (16; the wide tile 8) into a stage, zeros past k_end and outside the tile, and moves on. Thread
// t of T copies A rows t / kK + (T / kK) i at k = k0 + t % kK (4 kK bytes per row), 4 bytes each
// (A is stored transposed). B: kVecB (N a multiple of 4 and B 16-byte aligned; then a float4 of B
// is all inside the tile or all outside) in 16-byte copies, columns 4 (t % (kCols / 4)) .. + 3 at k
// = k0 + t / (kCols / 4) + (4 T / kCols) i; else 4-byte copies of column t % kCols at k = k0 + t /
// kCols + (T / kCols) i. The pointers, the tile-edge masks and the shared addresses are set once
// here: each copy then costs an address add, two selects and the cp.async (computing them per copy,
// and copying B 4 bytes at a time, made the kernel issue 2.0 instructions per FMA against
// cuBLAS's 1.5: session 38's ncu).
template <int kRows, int kCols, bool kVecB>
struct StageLoader {
  static constexpr int kThreads = kThreadsOf<kRows, kCols>;
  static constexpr int kK = kStepOf<kRows, kCols>;  // K per stage
  static constexpr int kLoadsA = kRows * kK / kThreads;
  static constexpr int kRowStride = kThreads / kK;    // A rows between a thread's copies
  static constexpr int kColsPerCopy = kVecB ? 4 : 1;  // of B
  static constexpr int kCopiesPerRow = kCols / kColsPerCopy;
  static constexpr int kKStride = kThreads / kCopiesPerRow;  // B k between a thread's copies
  static constexpr int kLoadsB = kK / kKStride;
  static_assert(kLoadsA <= 32 && kKStride >= 1 && kK % kKStride == 0,
                "row mask bits; whole stages of B");

  const float* a;                // A(t / kK, ka): this thread's first A copy of the next stage
  const float* b;                // B(kb, col): its first B copy
  int64_t a_row_step, b_k_step;  // kRowStride rows of A, kKStride rows of B
  int ka, kb, k_end;
  uint32_t row_ok;  // bit i: A row t / kK + kRowStride i is inside the tile
  bool col_ok;      // B's columns col .. col + kColsPerCopy - 1 are inside the tile

  __device__ __forceinline__ StageLoader(const GemmArgs& p, const float* a_tile,
                                         const float* b_tile, int rows, int cols, int k_begin,
                                         int k_end_)
      : a_row_step(int64_t{kRowStride} * p.k), b_k_step(int64_t{kKStride} * p.n), k_end(k_end_) {
    const int t = static_cast<int>(threadIdx.x);
    ka = k_begin + t % kK;
    kb = k_begin + t / kCopiesPerRow;
    const int col = t % kCopiesPerRow * kColsPerCopy;
    a = a_tile + int64_t{t / kK} * p.k + ka;
    b = b_tile + int64_t{kb} * p.n + col;
    row_ok = 0;
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) row_ok |= (t / kK + kRowStride * i < rows ? 1u : 0u) << i;
    col_ok = col < cols;
  }

  // p: the kernel's arguments (their pointers stand in for the source of a zero-filled copy).
  __device__ __forceinline__ void load(const GemmArgs& p, Stage<kRows, kCols>& st) {
    const int t = static_cast<int>(threadIdx.x);
    const uint32_t sa = smem_address(&st.a[t % kK][t / kK]);
    const bool k_ok = ka < k_end;
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const bool ok = k_ok && (row_ok >> i & 1u);
      cp_async_4(sa + 4 * kRowStride * i, ok ? a + i * a_row_step : p.a, ok);
    }
    const uint32_t sb = smem_address(&st.b[t / kCopiesPerRow][t % kCopiesPerRow * kColsPerCopy]);
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      const bool ok = col_ok && kb + kKStride * i < k_end;
      if constexpr (kVecB)
        cp_async_16(sb + 4 * kCols * kKStride * i, ok ? b + i * b_k_step : p.b, ok);
      else
        cp_async_4(sb + 4 * kCols * kKStride * i, ok ? b + i * b_k_step : p.b, ok);
    }
    a += kK;
    ka += kK;
    b += b_k_step * (kK / kKStride);
    kb += kK;
  }
};

// The cluster sum's second half: this CTA (rank `rank` of `splits`) adds float4 q of every split's
// parked tile (`parked`: this CTA's own, [kRows][kCols]) in split order for its share of the
// tile's kRows * kCols / 4 float4s, and stores those inside C (c: the tile's first output).
template <int kRows, int kCols>
__device__ __forceinline__ void cluster_sum_store(const float* parked, int rank, int splits,
                                                  float* c, int n, int rows, int cols) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  constexpr int kThreads = kThreadsOf<kRows, kCols>;
  constexpr int kQuads = kRows * kCols / 4, kRowQuads = kCols / 4;
  const int begin = rank * kQuads / splits, end = (rank + 1) * kQuads / splits;
  for (int q = begin + static_cast<int>(threadIdx.x); q < end; q += kThreads) {
    const int row = q / kRowQuads, col = q % kRowQuads * 4;
    float4 sum = reinterpret_cast<const float4*>(cluster.map_shared_rank(parked, 0))[q];
    for (int s = 1; s < splits; ++s) {
      const float4 v = reinterpret_cast<const float4*>(cluster.map_shared_rank(parked, s))[q];
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    if (row >= rows) continue;
    const float out[4] = {sum.x, sum.y, sum.z, sum.w};
    float* dst = c + int64_t{row} * n + col;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (col + j < cols) dst[j] = out[j];
  }
#else
  (void)parked, (void)rank, (void)splits, (void)c, (void)n, (void)rows, (void)cols;
  __trap();  // launch_fma_bmm's callers take the cluster sum only on sm_90 code
#endif
}

// grid: (N tiles x splits, M tiles, batch entries), p.tiles_n = N tiles (of kCols); split s takes
// k in [s k_split, (s + 1) k_split). kClusterSum: blockIdx.x = tile column x splits + s, and the
// splits (a cluster of gridDim.x / tiles_n CTAs along x) sum into C; else blockIdx.x = s x
// tiles_n + tile column, and split s writes partials[s] (gridDim.z, M, N), or C when there is one
// split. Guarded stores.
template <int kRows, int kCols, bool kClusterSum, bool kVecB>
__global__ void __launch_bounds__(kThreadsOf<kRows, kCols>, kMinBlocksOf<kRows, kCols>)
    fma_bmm_kernel(const GemmArgs p) {
  constexpr int kP = kPerOf<kRows, kCols>, kQuads = kQuadsOf<kRows, kCols>;
  constexpr int kK = kStepOf<kRows, kCols>;
  constexpr int kThreadCols = kCols / kP;
  static_assert(!kClusterSum || kP == kPer, "the cluster sum parks 4 x 4 outputs a thread");
  __shared__ __align__(16) SharedTile<kRows, kCols, kClusterSum> shared;
  Stage<kRows, kCols>* st = shared.stages;
  const int splits = static_cast<int>(gridDim.x) / p.tiles_n;
  const int x = static_cast<int>(blockIdx.x);
  const int split = kClusterSum ? x % splits : x / p.tiles_n;
  const int m0 = static_cast<int>(blockIdx.y) * kRows;
  const int n0 = (kClusterSum ? x / splits : x % p.tiles_n) * kCols;
  const int64_t bi = blockIdx.z;
  const int k_begin = split * p.k_split, k_end = min(p.k, k_begin + p.k_split);
  const float* a = p.a + (bi * p.m + m0) * p.k;
  const float* b = p.b + bi * p.k * p.n + n0;
  const int rows = p.m - m0, cols = p.n - n0;
  const int tx = static_cast<int>(threadIdx.x) % kThreadCols;
  const int ty = static_cast<int>(threadIdx.x) / kThreadCols;

  const int steps = (k_end - k_begin + kK - 1) / kK;
  StageLoader<kRows, kCols, kVecB> loader(p, a, b, rows, cols, k_begin, k_end);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) loader.load(p, st[s]);
    cp_async_commit();
  }
  float acc[kP][kP] = {};
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<kStages - 2>();  // this step's stage has landed (for this thread's copies)
    __syncthreads();               // ... for every thread's; and step - 1's stage is free
    const int next = step + kStages - 1;
    if (next < steps) loader.load(p, st[next % kStages]);
    cp_async_commit();
    const Stage<kRows, kCols>& cur = st[step % kStages];
#pragma unroll
    for (int k = 0; k < kK; ++k) {
      float ar[kP], br[kP];
#pragma unroll
      for (int q = 0; q < kQuads; ++q) {
        const float4 av =
            *reinterpret_cast<const float4*>(&cur.a[k][out_index<kRows, kQuads>(ty, 4 * q)]);
        ar[4 * q] = av.x, ar[4 * q + 1] = av.y, ar[4 * q + 2] = av.z, ar[4 * q + 3] = av.w;
        const float4 bv =
            *reinterpret_cast<const float4*>(&cur.b[k][out_index<kCols, kQuads>(tx, 4 * q)]);
        br[4 * q] = bv.x, br[4 * q + 1] = bv.y, br[4 * q + 2] = bv.z, br[4 * q + 3] = bv.w;
      }
#pragma unroll
      for (int i = 0; i < kP; ++i)
#pragma unroll
        for (int j = 0; j < kP; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
  }
  if constexpr (kClusterSum) {
    cp_async_wait<0>();
    __syncthreads();  // every thread is done with the stages: they hold the parked tile now
    float* parked = shared.parked;
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      reinterpret_cast<float4*>(parked + (ty * kPer + i) * kCols)[tx] =
          make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    cooperative_groups::this_cluster().sync();  // every split's tile is parked
    cluster_sum_store<kRows, kCols>(parked, split, splits, p.c + (bi * p.m + m0) * p.n + n0, p.n,
                                    rows, cols);
    cooperative_groups::this_cluster().sync();  // no CTA leaves while others read its tile
    return;
  }
  const bool one_split = static_cast<int>(gridDim.x) == p.tiles_n;
  float* out = one_split ? p.c : p.partials + int64_t{split} * gridDim.z * p.m * p.n;
  float* c = out + (bi * p.m + m0) * p.n + n0;
#pragma unroll
  for (int i = 0; i < kP; ++i) {
    const int row = out_index<kRows, kQuads>(ty, i);
    if (row >= rows) continue;
#pragma unroll
    for (int j = 0; j < kP; ++j) {
      const int col = out_index<kCols, kQuads>(tx, j);
      if (col < cols) c[int64_t{row} * p.n + col] = acc[i][j];
    }
  }
}

// Launches the FMA tile of kRows x kCols for p (tiles_n, k_split and partials set by the caller)
// over `batch` entries in `splits` splits of K. cluster_sum (requires sm_90 code loaded and 2 <=
// splits <= kMaxClusterSplits): the kernel sums the splits into C; else the caller sums partials
// when splits > 1. kVecB: B in 16-byte copies (StageLoader).
template <int kRows, int kCols, bool kVecB>
cudaError_t launch_fma_tile(const GemmArgs& p, int splits, int batch, bool cluster_sum,
                            cudaStream_t stream) {
  constexpr int kThreads = kThreadsOf<kRows, kCols>;
  const dim3 grid(static_cast<unsigned>(p.tiles_n * splits),
                  static_cast<unsigned>((p.m + kRows - 1) / kRows), static_cast<unsigned>(batch));
  if (cluster_sum && (splits < 2 || splits > kMaxClusterSplits)) return cudaErrorInvalidValue;
  if (!cluster_sum) {
    fma_bmm_kernel<kRows, kCols, false, kVecB><<<grid, kThreads, 0, stream>>>(p);
    return cudaGetLastError();
  }
  if constexpr (kPerOf<kRows, kCols> != kPer) {
    return cudaErrorInvalidValue;  // the wide tile sums its splits through split_sum
  } else {
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    cudaLaunchAttribute cluster = {};
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = static_cast<unsigned>(splits);
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, fma_bmm_kernel<kRows, kCols, true, kVecB>, p);
  }
}

// The 4 x 4 tile for p (the wide tile is custom.cu's choice, takes_wide_fma): 32 rows for
// products of at most kShort rows, else 64; 32 columns for products
// of at most kShort columns (a 64-column tile would leave half its columns idle), else 64.
// (Session 43's tall tile, 128 x 32 of 8 x 4 outputs a thread, ran large products of at most 32
// columns until the narrow tensor tile took them: docs/kernels.md, session 47.)
constexpr int kShort = 32;
inline int fma_tile_rows(int64_t m) {
  return m <= kShort ? kShort : kTile;
}
inline int fma_tile_cols(int64_t n) {
  return n <= kShort ? kShort : kTile;
}
// Whether the grid's y dimension (launch_fma_tile: row tiles, at most 65,535) holds M's row tiles
// of fma_tile_rows(M) rows (the wide tile's are as many: kTile rows past kShort).
inline bool row_tiles_fit(int64_t m) {
  return (m + fma_tile_rows(m) - 1) / fma_tile_rows(m) <= 65535;
}
// The split-K rule (split_plan.h) of the tile of rows x cols: toward four 64 x 64 tiles' threads
// an SM (more CTAs of the short and narrow tiles, which have fewer threads; two of the wide tile,
// whose grids never split: custom.cu takes it on two waves of 128 x 128 tiles, as many CTAs as
// the rule's slots), at least 4 k-steps a split.
inline SplitRule fma_split_rule(int rows, int cols) {
  constexpr int64_t kCtasPerSm = 4, kMinKSteps = 4;
  return SplitRule{rows, cols, kStep, kCtasPerSm * kTile * kTile / (rows * cols), kMinKSteps};
}
template <int kRows, int kCols>
cudaError_t launch_fma_shape(const GemmArgs& p, int splits, int batch, bool cluster_sum, bool vec_b,
                             cudaStream_t stream) {
  return vec_b ? launch_fma_tile<kRows, kCols, true>(p, splits, batch, cluster_sum, stream)
               : launch_fma_tile<kRows, kCols, false>(p, splits, batch, cluster_sum, stream);
}
// rows x cols: the tile of the whole product (p may be a chunk of its batch): fma_tile_rows x
// fma_tile_cols, or the wide tile (cols == kWide: kTile rows, whatever rows says).
inline cudaError_t launch_fma_bmm(const GemmArgs& p, int rows, int cols, int splits, int batch,
                                  bool cluster_sum, bool vec_b, cudaStream_t stream) {
  if (cols == kWide)
    return launch_fma_shape<kTile, kWide>(p, splits, batch, cluster_sum, vec_b, stream);
  if (rows == kShort)
    return cols == kShort
               ? launch_fma_shape<kShort, kShort>(p, splits, batch, cluster_sum, vec_b, stream)
               : launch_fma_shape<kShort, kTile>(p, splits, batch, cluster_sum, vec_b, stream);
  return cols == kShort
             ? launch_fma_shape<kTile, kShort>(p, splits, batch, cluster_sum, vec_b, stream)
             : launch_fma_shape<kTile, kTile>(p, splits, batch, cluster_sum, vec_b, stream);
}

}  // namespace kb::custom::L1_003::small
