// L1_003 custom: torch.bmm(A, B) with error-compensated TF32 (3xTF32) on the tensor cores.
//   C: (batch, M, N) = A: (batch, M, K) @ B: (batch, K, N), fp32, row-major, dense;
//   C[b,i,j] = sum_k A[b,i,k] B[b,k,j] (full preset: batch 128, M 512, K 1024, N 2048).
//
// Cost (full preset 128 x (512 x 1024) @ (1024 x 2048), docs/problems.md#l1_003): 274.9 GFLOP;
// min DRAM 1,879 MB (A 268 + B 1,074 read once, C 537 written once) -> 0.44 ms at ~4.3 TB/s. fp32
// FMA floor 4.1 ms; best strict-fp32 peer 5.36 ms (autotuned; cuBLAS eager 5.37 ms,
// docs/baselines.md), goal <= 4.47 ms (peer / 1.2). 3xTF32 does 3 TF32 MMAs per product:
// 824.6 GFLOP of tensor work / ~490 TFLOP/s dense TF32 = 1.68 ms floor, compute-bound.
//
// Design: six paths, chosen in setup() by the shape (and by which code the driver loaded).
//  0. rows kernel (skinny_rows.cuh): M <= 16 (but thin K at N >= 256, and K of 17-127 past 8
//     rows), a stream of B with M sums a lane (takes_skinny);
//     thin-K kernel (thin_k.cuh): K <= 16 past that, but not products of N <= 32 past 32 rows
//     (column_product: the FMA tile's), a write of C with B's column in registers and A's rows in
//     shared memory (takes_thin_k).
//  1. wgmma (sm_90a; kernels/cores/tf32x3/wgmma_gemm.cuh): CTA tile 128 x 256 x 32, two
//     warpgroups of 64 x 256 (m64n256k8 TF32 wgmma, 128 accumulators per thread), both operands'
//     big and small parts in shared memory (K-major, 128-byte swizzle; B transposed on its way
//     in), register-staged loads (4-byte, any alignment), two stages (192 KB, one CTA per SM),
//     244 registers. K in launches of <= 1,024 (kMaxChainK: the tensor core's truncating sums).
//     Taken from 3/4 of a wave of CTAs whose tiles are at least 1/4 full, K >= 128 (takes_wgmma),
//     but not by unaligned products that the narrow tile fills 1.5x as well (path 3).
//  2. mma.sync (kernels/cores/tf32x3/{gemm128,dense_loader,mainloop}.cuh): the Ampere-style
//     GEMM, CTA tile 128 x 128 x 32, 3-stage cp.async pipeline (96 KB, 2 CTAs per SM), 8 warps
//     of 64 x 32, m16n8k8 TF32 MMAs, operands split in registers after the shared load; split-K
//     (split_plan.h) for grids under two CTAs per SM, the splits summed in order by
//     kernels/cores/split_sum.cuh (deterministic); 16-byte copies when K % 4 == 0, N % 4 == 0 and
//     the pointers are aligned, else 4-byte copies. Smaller grids, and any GPU without sm_90a code.
//  3. narrow tile (narrow_tile.cuh): products of at most 32 columns and more than 32 rows, past
//     4 M multiply-adds and K 16, and unaligned products
//     (K or N % 4 != 0) past 32 rows and 4 M multiply-adds with K >= 128, where its tiles fill at
//     least 1.5x as well as wgmma's would, or (where wgmma would not run) under two waves of 128
//     x 128 tiles: CTA tile 64 x 32 (a column tile), 3xTF32 on mma.sync with the sums promoted
//     every k8 step, A in 16-byte copies at any alignment (rows shifted into aligned chunks), 4
//     CTAs per SM, split-K toward them (takes_narrow).
//  4. fp32 FMA tile (fma_tile.cuh): 64 x 64 tiles on a 4-stage cp.async pipeline with split-K
//     (toward four CTAs per SM) for tiny products (<= 4 M multiply-adds) under one wave of 128 x
//     128 tiles, for products with K or N not a multiple of 4 at K < 128 or under two waves where
//     the narrow tile does not take them (at K < 128 from two waves, 64 x 128 tiles of 8 x 8
//     outputs a thread: takes_wide_fma), and in 32-row or 32-column tiles (fewer threads, more
//     CTAs per SM) for 9-16 rows at 16 < K < 128, 17-32 rows at K > 16, the tiny products of at
//     most 32 columns and thin K at N <= 32 past 32 rows (takes_small_grid); where its grid of
//     row tiles fits (small::row_tiles_fit; else mma.sync, or the narrow tile at N <= 32).
//     Up to 8 splits sum in order inside a thread-block cluster where the sm_90 code is loaded
//     (cluster_sum_); more, or other code, through split_sum's second launch.
//
// Measured (H200, full preset): mma.sync 3.92-4.01 ms (69-70 TFLOP/s effective; ~4 instructions
// per MMA put the issue limit near the MMA limit, ncu); **wgmma 3.34 ms** (session 19, `kb bench
// kernelbench22 --time-cap 3 --seed 7`; 82 TFLOP/s, 1.61x the best strict-fp32 peer, 0.81x the
// fp32 floor), max |err| 4.1e-3 (the same as mma.sync: one K = 1,024 chain). ncu of the wgmma
// kernel (session 19): 3.40 ms, warps stalled on the barrier 24% / long scoreboard 17% / wgmma
// wait 15%: shared memory carries both operands' two parts (the smem operand reads alone are
// ~75% of its bandwidth at the tensor peak), so the next steps are the A operand from registers
// (split there, no A small tile) and a deeper pipeline.
// Shape sweep (`kb bench L1_003 --sweep 6 --seed 2026`): the large shapes 1.35-1.48x the
// reference; 3 x 379 x 459 x 189 (the one miss through session 20, 0.75x on split mma.sync) 1.19x
// on the split FMA tile (session 21, call 5), worst 1.185x: met. Still under 0.9x: unaligned
// products of ~0.1-1 G multiply-adds, where both paths are 0.6-0.85x the reference (e.g. 16 x
// 301 x 303 x 299 at 0.66x, 1 x 1023^3 at 0.72x; seed 77's 71 x 43 x 419 x 255 at 0.79x): ncu
// (session 21) finds the FMA tile issue-bound with only 48% of its instructions FFMA. Session 38
// (ncu at 128 x 17 x 1024 x 2048, H100): the copies' per-element address math was the rest;
// set up once per tile, with B in 16-byte copies, the kernel issues 376 M instructions against
// 545 M (cuBLAS 397 M) and runs 509 us against 645 (cuBLAS 479).
// Measured and not taken: one launch for split-K (the last CTA of a tile sums the splits: its
// serial sum made 1 x 128 x 4096 x 128 9x slower, session 21), 8 x 8 outputs per thread in the
// FMA tile's 64 x 64 form (64 threads: 0.74x against 1.2x at the tiny shapes, session 21; the 64
// x 128 form of 128 threads is the wide tile of session 49, for large grids only), operands
// zero-padded to multiples of 4 in a copy (slower at every shape: 1.88 against 1.86 ms at 84 x
// 459 x 655 x 1637), one CTA per SM for mma.sync grids under one wave (no change, session 19),
// the FMA tile at 128 rows (256 threads of 4 x 4) or 1-4 forced splits at <= 32 columns (session
// 42, H100: 84 x 401 x 661 x 27 0.104 ms -> at best 0.096, reference 0.073; ncu: cuBLAS's 128 x
// 32 tile computes 8 x 4 outputs a thread; docs/kernels.md, session 42).
//
// Accuracy: ~fp32 level (estimate and derivation in kernels/cores/tf32x3/gemm128.cuh): x = big +
// small + r with |r| <= 2^-22 |x|, the small x small term dropped; no fast intrinsics, no
// statistics. The sum (K = 1024: 384 MMAs into one fp32 accumulator) is the larger term: host
// emulation 3.3e-4 with round-to-nearest MMA sums, 2.5e-3 if the tensor core truncates them (an
// fp32 loop 5.3e-4, plain TF32 1.2e-2, about half of the budget). Measured max |err| 4.0e-3
// (2026-11-30) to 4.1e-3 (session 19, wgmma), 16% of the 0.026 allowed: the truncating case. It
// grows with the chain (1.4e-2 at 1 x 2048^3 in one chain, 28% of its budget; 5.4e-2 at 8 x 1024
// x 4096 x 1024 on unsplit mma.sync, 53%), hence the wgmma path's K chunks (1.6e-2 there) and
// split-K's ordered sums on mma.sync. Robustness trials (small preset, seed 7, vs the golden
// model): shift (x + 100) 0.006x the tolerance (reference 0.003x), scale (x 1000) 0.006x
// (0.003x), centered 0.003x (0.001x).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/L1_003_batched_matmul/fma_tile.cuh"
#include "kernels/L1_003_batched_matmul/gemm_args.h"
#include "kernels/L1_003_batched_matmul/narrow_tile.cuh"
#include "kernels/L1_003_batched_matmul/skinny_rows.cuh"
#include "kernels/L1_003_batched_matmul/split_plan.h"
#include "kernels/L1_003_batched_matmul/thin_k.cuh"
#include "kernels/cores/split_sum.cuh"
#include "kernels/cores/tf32x3/dense_loader.cuh"
#include "kernels/cores/tf32x3/gemm128.cuh"
#include "kernels/cores/tf32x3/wgmma_gemm.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_003 {

using namespace gemm128;  // tile geometry, index maps, mma_stage, the dense loader

// ---- the mma.sync kernel (GemmArgs: gemm_args.h) ----

// The epilogue: acc -> C, float4 stores on the vector path, guarded scalar stores otherwise.
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
  const auto [lane, warp_m, warp_n] = warp_pos();
  const int m0 = static_cast<int>(blockIdx.x / p.tiles_n) * kBM;
  const int n0 = static_cast<int>(blockIdx.x % p.tiles_n) * kBN;
  const int64_t bi = blockIdx.y;
  const int k0 = static_cast<int>(blockIdx.z) * p.k_split;
  GemmArgs q = p;
  q.k_count = min(p.k_split, p.k - k0);
  const float* a_tile = p.a + (bi * p.m + m0) * p.k + k0;
  const float* b_tile = p.b + (bi * p.k + k0) * p.n + n0;
  const int rows = p.m - m0, cols = p.n - n0;  // in range: row < rows, col < cols

  float acc[kMmaTilesM][kMmaTilesN][4];
  dense_mainloop<kVec>(q, smem, a_tile, b_tile, rows, cols, warp_m, warp_n, lane, acc);

  float* out = gridDim.z == 1 ? p.c : p.partials + int64_t{blockIdx.z} * gridDim.y * p.m * p.n;
  store_tile<kVec>(p, out + (bi * p.m + m0) * p.n + n0, rows, cols, warp_m, warp_n, lane, acc);
}

// ---- the wgmma path (sm_90a): 128 x 256 tiles, one CTA per SM ----

namespace wg = tf32x3::wgmma_gemm;

// The longest K summed in one wgmma accumulator. The tensor core adds each instruction's products
// to the accumulator with truncation (tf32x3/mma.cuh), so the relative error grows with the chain:
// ~1.1e-5 at K 1,024 for same-sign data (H200: max |err| 4.0e-3 at the preset, outputs ~256;
// 1.4e-2 at 1 x 2048^3 in one chain, outputs ~512), and K ~8,000 in one chain would reach the
// 1e-4 tolerance. Longer K runs in launches of kMaxChainK, each adding its range's product to C
// in fp32. (A loop over the chunks inside the kernel spilled: 255 registers and 768 bytes of
// stack against 244 and none.)
constexpr int kMaxChainK = 1024;
static_assert(kMaxChainK % wg::kBK == 0, "whole k-tiles per chunk");

// acc -> C[rows, cols) of the tile at c (row stride n); add: C += acc (chunks after the first).
__device__ __forceinline__ void store_wgmma_tile(float* c, int64_t n, int rows, int cols, bool add,
                                                 const float (&acc)[wg::kAccs]) {
  const int tid = static_cast<int>(threadIdx.x);
  const bool pairs = n % 2 == 0;  // (col, col + 1) is one aligned 8-byte access
#pragma unroll
  for (int i = 0; i < wg::kAccs; i += 2) {
    const int row = wg::acc_row(tid, i), col = wg::acc_col(tid, i);
    if (row >= rows || col >= cols) continue;
    float* dst = c + row * n + col;
    float2 v = make_float2(acc[i], acc[i + 1]);
    if (pairs && col + 1 < cols) {
      if (add) {
        const float2 prev = *reinterpret_cast<const float2*>(dst);
        v.x += prev.x, v.y += prev.y;
      }
      *reinterpret_cast<float2*>(dst) = v;
    } else {
      dst[0] = add ? dst[0] + v.x : v.x;
      if (col + 1 < cols) dst[1] = add ? dst[1] + v.y : v.y;
    }
  }
}

// One CTA computes C[b][m0 : m0 + 128, n0 : n0 + 256]; p.tiles_n counts 256-column tiles.
__global__ void __launch_bounds__(wg::kThreads, 1) wgmma_bmm_kernel(const GemmArgs p) {
#if KB_WGMMA_ENABLED
  extern __shared__ __align__(1024) float wg_smem[];
  const int m0 = static_cast<int>(blockIdx.x / p.tiles_n) * wg::kBM;
  const int n0 = static_cast<int>(blockIdx.x % p.tiles_n) * wg::kBN;
  const int64_t bi = blockIdx.y;
  const int rows = p.m - m0, cols = p.n - n0;
  wg::DenseLoader loader{p.a + (bi * p.m + m0) * p.k + p.k_begin,
                         p.b + (bi * p.k + p.k_begin) * p.n + n0,
                         p.k,
                         p.n,
                         rows,
                         cols,
                         p.k_count};
  float acc[wg::kAccs];
  wg::mainloop(loader, (p.k_count + wg::kBK - 1) / wg::kBK, wg::stages(wg_smem), acc);
  store_wgmma_tile(p.c + (bi * p.m + m0) * p.n + n0, p.n, rows, cols, p.accumulate, acc);
#else
  (void)p;
  __trap();
#endif
}

// ---- the implementation (the small-grid path's FMA tile: fma_tile.cuh) ----

class Tf32x3Bmm final : public Implementation {
 public:
  Status setup(const ProblemInstance& problem, cudaStream_t) override {
    a_ = input_index(problem, "A");
    b_ = input_index(problem, "B");
    const Shape& a = problem.shape_of("A");  // (batch, M, K)
    const Shape& b = problem.shape_of("B");  // (batch, K, N)
    if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1])
      return Status::invalid_argument("L1_003 custom: expected A (b, M, K) and B (b, K, N)");
    constexpr int64_t kIntMax = 0x7fffffff;
    if (a[1] > kIntMax - kBM || a[2] > kIntMax - kBK || b[2] > kIntMax - kBN)
      return Status::failed_precondition("L1_003 custom: a dimension exceeds the int range");
    shape_ = {a[0], a[1], a[2], b[2]};
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    bool wgmma_loaded = false;
    KB_CUDA_TRY(tf32x3::wgmma::loaded_here(&wgmma_loaded));
    skinny_ = takes_skinny();
    thin_plan_ = thin::plan_thin_k(shape_.batch, shape_.m, shape_.k, shape_.n, sms);
    narrow_ = !skinny_ && takes_narrow(sms, wgmma_loaded);
    thin_ = !skinny_ && !narrow_ && takes_thin_k();
    if (thin_) return Status::ok();
    if (skinny_) {
      const SplitRule rule{skinny::rows_for(shape_.m), skinny::kCols, skinny::kWarps,
                           skinny::kCtasPerSm, skinny::kMinKPerSplit / skinny::kWarps};
      plan_split_k(sms, rule);
      return allocate_partials();
    }
    if (narrow_) {
      KB_CUDA_TRY(narrow::prepare_narrow_bmm());
      plan_split_k(sms, narrow::kSplitRule);
      return allocate_partials();
    }
    use_wgmma_ = wgmma_loaded && takes_wgmma(sms);
    if (use_wgmma_) {
      KB_CUDA_TRY(cudaFuncSetAttribute(
          &wgmma_bmm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, wg::kSmemBytes));
      return Status::ok();
    }
    small_grid_ = takes_small_grid(sms) && small::row_tiles_fit(shape_.m);
    if (small_grid_) {
      // The tile's rows and columns (fma_tile.cuh: fma_tile_rows, fma_tile_cols; the wide tile,
      // takes_wide_fma) and its split-K rule (fma_split_rule).
      fma_rows_ = small::fma_tile_rows(shape_.m);
      fma_cols_ = small::fma_tile_cols(shape_.n);
      if (takes_wide_fma(sms)) fma_rows_ = small::kTile, fma_cols_ = small::kWide;
      plan_split_k(sms, small::fma_split_rule(fma_rows_, fma_cols_));
      // The cluster sum needs sm_90 code: the loaded wgmma build (sm_90a) is that.
      cluster_sum_ = kRouteClusterSum && wgmma_loaded && fma_cols_ != small::kWide &&
                     splits_ >= 2 && splits_ <= small::kMaxClusterSplits;  // 4 x 4 forms only
      return cluster_sum_ ? Status::ok() : allocate_partials();
    }
    plan_split_k(sms, kMmaSyncSplits);
    KB_TRY(allocate_partials());
    // Dynamic shared memory above 48 KB, and the carveout that fits two CTAs per SM.
    for (auto kernel : {&tf32x3_bmm_kernel<true>, &tf32x3_bmm_kernel<false>}) {
      KB_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    }
    return Status::ok();
  }

  ~Tf32x3Bmm() override {
    if (partials_ != nullptr) cudaFree(partials_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const auto [batch, m, k, n] = shape_;
    if (batch == 0 || m == 0 || n == 0) return Status::ok();  // no output elements
    GemmArgs p{args.inputs[a_].data,
               args.inputs[b_].data,
               args.output.data,
               static_cast<int>(m),
               static_cast<int>(n),
               static_cast<int>(k),
               static_cast<int>((n + kBN - 1) / kBN),
               static_cast<int>(k_split_),
               0,
               partials_,
               0,
               false};
    const int64_t tiles = ((m + kBM - 1) / kBM) * p.tiles_n;  // per batch entry
    if (tiles > 0x7fffffff) return Status::failed_precondition("L1_003 custom: too many tiles");
    const bool vec = k % 4 == 0 && n % 4 == 0 && aligned16(p.a) && aligned16(p.b) && aligned16(p.c);
    // A grid dimension is the batch entry: more than 65,535 entries take several launches.
    constexpr int64_t kMaxGridBatch = 65535;
    for (int64_t b0 = 0; b0 < batch; b0 += kMaxGridBatch) {
      GemmArgs chunk = p;
      chunk.a += b0 * m * k;
      chunk.b += b0 * k * n;
      chunk.c += b0 * m * n;
      const int64_t chunk_batch = std::min(batch - b0, kMaxGridBatch);
      if (use_wgmma_) {
        GemmArgs wp = chunk;
        wp.tiles_n = static_cast<int>((n + wg::kBN - 1) / wg::kBN);
        const int64_t wg_tiles = ((m + wg::kBM - 1) / wg::kBM) * wp.tiles_n;
        const dim3 grid(static_cast<unsigned>(wg_tiles), static_cast<unsigned>(chunk_batch));
        int64_t k_begin = 0;
        do {  // at least one launch: K == 0 writes zeros
          wp.k_begin = static_cast<int>(k_begin);
          wp.k_count = static_cast<int>(std::min<int64_t>(kMaxChainK, k - k_begin));
          wp.accumulate = k_begin > 0;
          wgmma_bmm_kernel<<<grid, wg::kThreads, wg::kSmemBytes, stream>>>(wp);
          KB_CUDA_TRY(cudaGetLastError());
          k_begin += kMaxChainK;
        } while (k_begin < k);
        continue;
      }
      if (thin_) {
        KB_CUDA_TRY(thin::launch_thin_k(chunk, static_cast<int>(chunk_batch), thin_plan_, stream));
      } else if (skinny_) {
        chunk.tiles_n = static_cast<int>((n + skinny::kCols - 1) / skinny::kCols);
        KB_CUDA_TRY(
            skinny::launch_skinny_bmm(chunk, splits_, static_cast<int>(chunk_batch), stream));
      } else if (narrow_) {
        chunk.tiles_n = static_cast<int>((n + narrow::kCols - 1) / narrow::kCols);
        KB_CUDA_TRY(narrow::launch_narrow_bmm(chunk, splits_, static_cast<int>(chunk_batch),
                                              k % 4 == 0 && aligned16(p.a), stream));
      } else if (small_grid_) {
        chunk.tiles_n = static_cast<int>((n + fma_cols_ - 1) / fma_cols_);
        KB_CUDA_TRY(small::launch_fma_bmm(chunk, fma_rows_, fma_cols_, splits_,
                                          static_cast<int>(chunk_batch), cluster_sum_,
                                          n % 4 == 0 && aligned16(p.b), stream));
      } else {
        const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(chunk_batch),
                        static_cast<unsigned>(splits_));
        if (vec)
          tf32x3_bmm_kernel<true><<<grid, kThreads, kSmemBytes, stream>>>(chunk);
        else
          tf32x3_bmm_kernel<false><<<grid, kThreads, kSmemBytes, stream>>>(chunk);
      }
      KB_CUDA_TRY(cudaGetLastError());
      if (splits_ > 1 && !cluster_sum_) {
        KB_TRY(
            split_sum::launch_split_sum(partials_, chunk.c, chunk_batch * m * n, splits_, stream));
      }
    }
    return Status::ok();
  }

 private:
  struct Dims {
    int64_t batch = 0, m = 0, k = 0, n = 0;
  };
  // The wgmma kernel (one 128 x 256 CTA per SM) from 3/4 of a wave of CTAs whose tiles are at
  // least 1/4 full, for K of 4 k-tiles or more. H200, session 19 (`kb bench L1_003 --dims ...`,
  // both paths forced in one call; wgmma / mma.sync ms):
  //   CTAs: 96 equal (0.121 / 0.122 at 3 x 1024^3), 64 mma.sync (0.120 / 0.088 at 2 x 1024^3),
  //         128 wgmma (0.123 / 0.158 at 1 x 2048 x 1024 x 2048);
  //   fill: 0.2% mma.sync (the FMA tile's 0.0084 against 0.0129 at 107 x 13 x 59 x 5); 27%
  //         wgmma at K 512 (0.063 / 0.077, 99 x 67 x 512 x 131), 46-63% wgmma (0.117 / 0.192
  //         at 120 x 100 x 1024 x 150, 0.163 / 0.223 at 200 x 60 x 700 x 250);
  //   K: 40 mma.sync (0.022 / 0.014 at 99 x 100 x 40 x 200); 4 k-tiles is a guess between that
  //         and K 512. (At 99 x 67 x 2100 x 131, three launches of 99 CTAs, mma.sync is ahead,
  //         0.274 / 0.253: both under 0.93x the reference; the narrow tile takes it since session
  //         48, takes_narrow.)
  static constexpr int64_t kMinWgmmaK = 4 * wg::kBK;  // the wgmma path's K: 4 k-tiles (128)
  bool takes_wgmma(int sms) const {
    const auto [batch, m, k, n] = shape_;
    const int64_t tiles_m = (m + wg::kBM - 1) / wg::kBM, tiles_n = (n + wg::kBN - 1) / wg::kBN;
    const int64_t ctas = tiles_m * tiles_n * batch;
    const bool quarter_full = 4 * m * n >= tiles_m * wg::kBM * tiles_n * wg::kBN;
    return 4 * ctas >= 3 * int64_t{sms} && quarter_full && k >= kMinWgmmaK;
  }

  // The rows kernel (skinny_rows.cuh) for M <= 16, before any tile. H100, session 37 (`kb bench
  // L1_003 --dims ...`, main's pack and this one alternating twice, call 5; main / rows /
  // reference us): 32 / 14 / 18 at 83 x 3 x 215 x 201 (seed 2027's miss), 220 / 75 / 76 at 40 x 4
  // x 999 x 1001, 990 / 540 / 730 at 128 x 16 x 1024 x 2048, 16 / 12 / 14 at 1 x 8 x 4096 x 256
  // (split-K), 14 / 11 / 21 at 6 x 7 x 399 x 397, 8 / 7 / 8 at 29 x 11 x 93 x 105. Past 16 rows it
  // lost (calls 4 and 6): 52 -> 62 us at 71 x 43 x 419 x 255 with 16-row chunks, 52 -> 74 with one
  // 48-row CTA, 73 -> 101 at 64 x 48 x 256 x 1024.
  // Thin K (K <= 16) of at least kThinOverRowsMinN columns takes the thin-K kernel instead (its
  // passes of 4 rows: thin::lanes_for). H100, session 51 (rows kernel / thin-K kernel / reference
  // us, /work/.device/6): 65 x 7 x 9 x 1,399 (seed 99's miss) 16 / 8 / 12, 50 x 12 x 5 x 777 10 / 8
  // / 7.5.
  static constexpr int64_t kThinOverRowsMinN = 256;
  // Past kRowsMaxShortK rows, K of 17-127 takes the FMA tile's 32-row form (takes_small_grid):
  // H100, session 51 (rows kernel / FMA tile / reference us, forced runs on call 2's lease,
  // docs/kernels.md): 80 x 9 x 55 x 957 (seed 31's miss) 22 / 18 / 19, 70 x 9 x 67 x 2,039 43 / 35
  // / 42; the rows kernel kept at fewer rows or long K: 83 x 3 x 215 x 201 15 / 22 / 18, 40 x 4 x
  // 999 x 1,001 77 / 105 / 78, 6 x 7 x 399 x 397 12 / 12 / 21, 29 x 11 x 93 x 105 6.6 / 6.8 / 7.3
  // (within 3%), 128 x 16 x 1,024 x 2,048 540 / 506 / 725.
  static constexpr int64_t kRowsMaxShortK = 8;
  static constexpr int64_t kRowsMinLongK = 128;  // K the rows kernel keeps at 9-16 rows
  static_assert(thin::kFewRows == skinny::kMaxRows, "the thin kernel's few rows are these");
  bool takes_skinny() const {
    const auto [batch, m, k, n] = shape_;
    if (m > skinny::kMaxRows) return false;
    if (k <= thin::kMaxK) return n < kThinOverRowsMinN;
    return m <= kRowsMaxShortK || k >= kRowsMinLongK;
  }

  // The thin-K kernel (thin_k.cuh) for K <= 16 past the rows kernel: the product is a write of C.
  // (K == 0 writes zeros there too.) H100, session 39 (main / thin / reference us,
  // /work/.device/3): 97 x 431 x 5 x 1357 620 / 150 / 110, 79 x 397 x 5 x 1291 461 / 109 / 81-86,
  // 8 x 1000 x 9 x 999 98 / 19 / 22, 128 x 512 x 12 x 2048 316 / 207 / 291, 1 x 4096 x 16 x 4096 47
  // / 29 / 38, 64 x 512 x 16 x 1024 88 / 57 / 91, 100 x 205 x 9 x 13 7 / 8 / 7, 5 x 97 x 5 x 301 6
  // / 5 / 6. Odd N (rows not 16-byte aligned) wrote C at ~1.5 TB/s against ~2.6 at N 2048; at
  // K <= 8 its rows now leave through shared memory by 16-byte stores where N spans several
  // column tiles or a CTA writes much of one (thin_k.cuh's stages_rows, session 41: 97 x 431 x 5 x
  // 1357 149 -> 120 us against the reference's 110). (Thin K at N <= 32 past 32 rows takes the FMA
  // tile: takes_narrow's measurements.)
  bool takes_thin_k() const {
    if (column_product()) return false;
    return shape_.k <= thin::kMaxK && thin::fits(shape_.m, thin_plan_.rows);
  }

  // The narrow tensor tile (narrow_tile.cuh) for products of at most 32 columns and more than 32
  // rows past kSmallGridMaxMacs multiply-adds and K 16 (past the rows kernel). H100,
  // session 47 (`kb bench L1_003 --dims D --time-cap 0.2 --trials 2 --seed 7`, main f218a92's
  // pack (the FMA tile's 64-row and tall forms) / this tile / reference us, /work/.device/4 and 5):
  // 84 x 401 x 661 x 27 (the mixed sweep's miss) 95 / 68 / 73, 84 x 401 x 661 x 13 91 / 66 / 73,
  // 100 x 313 x 943 x 13 112 / 79 / 76, 128 x 512 x 1024 x 31 177 / 124 / 146, 1 x 4097 x 4097 x
  // 9 69 / 52 / 54, 200 x 77 x 301 x 32 37 / 29 / 27, 64 x 999 x 255 x 3 56 / 45 / 51, 32 x 1000
  // x 300 x 20 40 / 38 / 36, 129 x 255 x 37 x 27 14 / 11 / 11, 40 x 100 x 1101 x 5 30 / 25 / 49.
  // Tiny products stay on the FMA tile (the tile with 4-byte copies of A, call 4: 3 x 33 x 17 x 1
  // 1.00x -> 0.89x the reference, 2 x 40 x 30 x 20 1.31x -> 1.13x).
  // Thin K (K <= 16) at N <= 32 ran here from session 47 to 51 (now on the FMA tile, below): the
  // thin-K kernel's warps span 128 columns or more, and at N <= 32 most of them idle. H100, session
  // 47 call 6 (thin-K kernel / this tile / reference us, /work/.device/6): 101 x 333 x 5 x 5 (seed
  // 2026's miss) 15 / 8 / 7, 100 x 205 x 9 x 13 (seed 77's) 8 / 7 / 7, 64 x 999 x 16 x 32 14 / 12 /
  // 11, 128 x 512 x 12 x 32 14 / 12 / 11, 200 x 130 x 9 x 7 0.87x -> 0.92x, 1 x 4096 x 16 x
  // 16 1.39x -> 1.64x; a few us slower only at launch-bound sizes, still above the reference (2 x
  // 449 x 3 x 5 1.22x -> 1.09x, 3 x 50 x 3 x 20 1.21x -> 1.09x, 5 x 97 x 5 x 20 1.21x -> 1.08x).
  // Unaligned products past 32 columns (session 48): the tile over 32-column tiles where the
  // wgmma kernel would run the product with tiles filled at most 1 / kNarrowOverWgmmaFill as
  // well as the narrow tile's (tile_fill), else (wgmma would not run it) on the FMA tile's small
  // grids, under two waves of 128 x 128 tiles; K >= 128 and past 4 M multiply-adds either way.
  // H100, session 48 call 2 (/work/.device/2; `kb bench L1_003 --dims D
  // --time-cap 0.2 --trials 2 --seed 7`, the shipped paths / this tile forced by a temporary
  // switch / reference us; call 3 (/work/.device/12, 3 trials, against main b4c0829's pack)
  // agrees within 2 us). From the FMA tile: 69 x 83 x 299 x 149 (seed 2026's miss) 49 / 34 / 30,
  // 9 x 309 x 779 x 331 80 / 60 / 51, 16 x 301 x 303 x 299 50 / 40 / 35, 1 x 1023^3 86 / 72 / 64,
  // 71 x 43 x 419 x 255 50 / 40 / 41, 2 x 511 x 333 x 257 22 / 19 / 18, 3 x 379 x 459 x 189 20 /
  // 20 / 23. From wgmma, at fill ratios (narrow / wgmma) of 2.1-2.2: 64 x 129 x 257 x 131 42 / 38
  // / 42, 106 x 63 x 723 x 1363 (seed 5's) 406 / 380 / 345, and 1.6: 99 x 67 x 2100 x 131 271 /
  // 210 / 228. Left to wgmma, where the tile was slower: ratios 1.0-1.34 (15 x 69 x 839 x 2015 104
  // / 171 / 142, 13 x 257 x 519 x 1577 180 / 188 / 175, 22 x 429 x 701 x 1425 349 / 517 / 471, 8 x
  // 451 x 743 x 1943 198 / 310 / 278, 90 x 477 x 729 x 199 271 / 390 / 379). Left to the FMA tile,
  // K < 128: 12 x 501 x 39 x 1813 49 / 101 / 49, 95 x 231 x 31 x 1215 88 / 208 / 97, 38 x 265 x
  // 77 x 1307 98 / 125 / 84, 103 x 385 x 89 x 1399 432 / 514 / 361. With C staged in shared
  // memory and stored in row order (call 3, not kept) the tile ran those four at 58, 126, 105 and
  // 418 us, the others within 2 us, and products of N <= 32 at thin K ~1 us slower (101 x 333 x
  // 5 x 5 8 -> 9 us, 200 x 77 x 301 x 32 30 -> 32).
  static constexpr double kNarrowOverWgmmaFill = 1.5;
  // Thin K at N <= 32 (session 51: FMA tile / this tile / reference us, forced runs,
  // docs/kernels.md): 101 x 333 x 5 x 5 (seed 2026's miss) 6.1 / 8.4 / 7.3, 64 x 999 x 16 x 32 10 /
  // 13 / 11, 128 x 512 x 12 x 32 10 / 13 / 11, 200 x 130 x 9 x 7 6.3 / 8.6 / 8.0, 100 x 205 x 9 x
  // 13 6.1 / 6.8 / 6.9, 1 x 4,096 x 16 x 16 4.9 / 5.4 / 9.0: the FMA tile's 32-column forms
  // (takes_small_grid).
  bool takes_narrow(int sms, bool wgmma_loaded) const {
    const auto [batch, m, k, n] = shape_;
    if (column_product()) {
      // Thin K there runs on the FMA tile, unless its grid of row tiles would not fit.
      return k > thin::kMaxK ? !tiny() : !small::row_tiles_fit(m);
    }
    if (n <= narrow::kCols) return false;
    if (m <= small::kShort || tiny() || !unaligned() || k_short()) return false;
    if (wgmma_loaded && takes_wgmma(sms))
      return tile_fill(narrow::kRows, narrow::kCols) >=
             kNarrowOverWgmmaFill * tile_fill(wg::kBM, wg::kBN);
    return under_two_waves(sms);
  }

  // At most 32 columns past 32 rows: the narrow tile's and the FMA tile's 32-column forms.
  bool column_product() const { return shape_.n <= narrow::kCols && shape_.m > small::kShort; }

  // The share of a grid of tile_m x tile_n tiles that the product fills.
  double tile_fill(int64_t tile_m, int64_t tile_n) const {
    const int64_t rows = (shape_.m + tile_m - 1) / tile_m * tile_m;
    const int64_t cols = (shape_.n + tile_n - 1) / tile_n * tile_n;
    return double(shape_.m) * double(shape_.n) / (double(rows) * double(cols));
  }

  // The grid of the mma.sync tile (128 x 128), the measure of the small-grid rules.
  int64_t mma_sync_tiles() const {
    return ((shape_.m + kBM - 1) / kBM) * ((shape_.n + kBN - 1) / kBN) * shape_.batch;
  }
  // Under two waves of those tiles (two CTAs an SM): the narrow, FMA and wide-FMA rules' bound.
  bool under_two_waves(int sms) const { return mma_sync_tiles() < 2 * int64_t{sms}; }
  // At most kSmallGridMaxMacs multiply-adds.
  bool tiny() const {
    return double(shape_.batch) * double(shape_.m) * double(shape_.k) * double(shape_.n) <=
           kSmallGridMaxMacs;
  }
  // K or N not a multiple of 4: the tensor tiles' rows of A or B are not 16-byte aligned.
  bool unaligned() const { return shape_.k % 4 != 0 || shape_.n % 4 != 0; }
  // K under the wgmma path's minimum (the tensor tiles' pipeline is not filled).
  bool k_short() const { return shape_.k < kMinWgmmaK; }

  static bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

  // The FMA tile (fma_tile.cuh): products of 9-32 rows (takes_skinny, takes_thin_k), tiny products
  // under one wave of 128 x 128 tiles, and any product whose K or N is not a multiple of 4 (the
  // tensor path's 4-byte copies) under two waves or at K < 128, where the narrow tile
  // (takes_narrow, asked first) has not taken it. H200, `kb bench L1_003 --dims ...`, both paths
  // forced in one call (FMA / tensor / reference us): session 11 (unsplit FMA tile): 7 / 9 / 7 at
  // 11 x 5 x 47 x 201 and 20 x 17 x 33 x 100; session 21 (the pipelined, split FMA tile; calls
  // 5-6): 20 / 31 / 23 at 3 x 379 x 459 x 189, 22 / 43 / 18 at 4 x 301 x 303 x 299, 34 / 58 / 36 at
  // 2 x 511^3, 91 / 101 / 65 at 1 x 1023^3, 51 / 65 / 41 at 71 x 43 x 419 x 255 (142 tiles), 42 /
  // 42 / 43 at 64 x 129 x 257 x 131 (256 tiles), 1,406 / 1,405 / 2,040 at 84 x 459 x 655 x 1637
  // (past the rule: equal). Where K and N are multiples of 4 the tensor path's 16-byte copies win
  // (the unpipelined FMA tile: 43 / 29 / 36 at 6 x 300 x 700 x 200, 24 / 19 / 17 at 1 x 500 x 2000
  // x 100). Every product of 17-32 rows takes the FMA tile's 32-row form (session 38, H100,
  // cuBLAS's choice there too: an SIMT 32 x 64 tile): the tensor tiles of 128 rows leave 3/4 idle,
  // and where B is large its stream sets the time. main / 32-row tile / reference us
  // (/work/.device/2 and 4): 128 x 17 x 1024 x 2048 995 / 511 / 480, 16 x 25 x 2048 x 2048 258 /
  // 150 / 141, 64 x 24 x 1024 x 1024 255 / 150 / 156, 200 x 31 x 257 x 333 111 / 65 / 60, 120 x
  // 20 x 160 x 96 20 / 15 / 14, 50 x 24 x 512 x 64 23 / 15 / 26.
  // Every product of at most 32 columns takes the 32-column forms (session 39, H100, main / 32
  // columns / reference us, /work/.device/2): 84 x 401 x 661 x 27 (the mixed sweep's miss) 174 /
  // 103 / 74, 100 x 313 x 943 x 13 234 / 113 / 77, 128 x 512 x 1024 x 32 254 / 192 / 144, 16 x
  // 2048 x 512 x 17 81 / 64 / 47, 1 x 4096 x 4096 x 8 85 / 61 / 53, 40 x 100 x 1101 x 5 38 / 30 /
  // 49, 10 x 33 x 999 x 32 12 / 11 / 41: faster at each, still 0.7-0.9x the reference at the
  // large ones (not profiled yet).
  static constexpr double kSmallGridMaxMacs = 4e6;
  // Unaligned products of K < kMinWgmmaK (where wgmma cannot run) take the FMA tile at any grid:
  // the mma.sync tile's 4-byte copies, its pipeline fill and scalar epilogue over 1-4 k-tiles ran
  // 0.36-0.58x the reference in the mixed-regime sweep. H100, session 39 (main / FMA tile /
  // reference us, /work/.device/3): 95 x 231 x 31 x 1215 274 / 88 / 98, 12 x 501 x 39 x 1813 132 /
  // 49 / 55, 109 x 449 x 35 x 1417 729 / 304 / 269, 38 x 265 x 77 x 1307 165 / 98 / 87, 99 x 373 x
  // 97 x 1377 577 / 419 / 316, 103 x 385 x 89 x 1399 609 / 430 / 360, 6 x 300 x 101 x 203 10 / 10 /
  // 10.
  bool takes_small_grid(int sms) const {
    return shape_.m <= small::kShort || shape_.n <= small::kShort ||
           (tiny() && mma_sync_tiles() < sms) ||
           (unaligned() && (under_two_waves(sms) || k_short()));
  }

  // The FMA tile's splits summed in a cluster (fma_tile.cuh) instead of split_sum's launch. Off:
  // bit-identical and correct on an H100 (session 34), but 0.94-1.13x split_sum's speed at four
  // shapes, no gain at the sweep's miss 71 x 43 x 419 x 255 (docs/kernels.md, session 34).
  static constexpr bool kRouteClusterSum = false;

  // The FMA tile's wide form (64 x 128, 8 x 8 outputs a thread: 4 shared loads per 64 FMAs, not
  // 2 per 16) for unaligned products of K < kMinWgmmaK (and > 16: the thin-K kernel's before)
  // past 32 rows and columns on two waves of 128 x 128 tiles or more, where the 64 x 64 tile was
  // issue-bound at 0.75-0.87x the reference.
  // H100, session 49 call 1 (/work/.device/1; `kb bench L1_003 --dims D --time-cap 0.2 --trials
  // 2 --seed 7`, 64 x 64 / 64 x 128 / 128 x 128 of 8 x 8 (256 threads) / reference us): 95 x 231
  // x 31 x 1215 86 / 76 / 96 / 97, 12 x 501 x 39 x 1813 48 / 39 / 49 / 50, 109 x 449 x 35 x 1417
  // 297 / 224 / 275 / 262, 38 x 265 x 77 x 1307 96 / 85 / 106 / 84, 99 x 373 x 97 x 1377 414 /
  // 318 / 340 / 313, 103 x 385 x 89 x 1399 426 / 353 / 414 / 358, 64 x 512 x 100 x 1023 266 / 205
  // / 219 / 199. Under two waves the tiles are too few for 64 x 128 (20 x 129 x 65 x 301, 120
  // tiles: 15 / 15 us, the reference 12; 6 x 300 x 101 x 203 10 / 10). The rule (call 2,
  // /work/.device/6, 3 trials): 0.97-1.28x the reference at those seven. Not taken (call 2, the
  // wide tile forced): the narrow tile's unaligned products at K >= 128 (slower at 7 of 9, e.g.
  // 69 x 83 x 299 x 149 34 -> 56 us; 1 x 1023^3 72 -> 71, 106 x 63 x 723 x 1363 384 -> 358), and
  // aligned short K, where mma.sync's 16-byte copies win (64 x 512 x 100 x 1024 142 -> 184 us; 12
  // x 500 x 40 x 1812 44 -> 40 the one exception).
  bool takes_wide_fma(int sms) const {
    return shape_.m > small::kShort && shape_.n > small::kShort && unaligned() && k_short() &&
           !under_two_waves(sms);
  }

  // The mma.sync tile's split-K rule (split_plan.h; the FMA tile's: small::fma_split_rule).
  static constexpr SplitRule kMmaSyncSplits{kBM, kBN, kBK, 2, 2};
  void plan_split_k(int sms, const SplitRule& rule) {
    const SplitPlan plan =
        L1_003::plan_split_k(shape_.batch, shape_.m, shape_.k, shape_.n, sms, rule);
    splits_ = plan.splits, k_split_ = plan.k_split;
  }

  // The split-K workspace (splits_, batch, M, N), where the splits are summed by split_sum.
  Status allocate_partials() {
    if (splits_ <= 1) return Status::ok();
    const size_t floats = static_cast<size_t>(splits_ * shape_.batch * shape_.m * shape_.n);
    KB_CUDA_TRY(cudaMalloc(&partials_, sizeof(float) * floats));
    return Status::ok();
  }

  size_t a_ = 0, b_ = 0;
  Dims shape_;
  bool skinny_ = false;          // few rows: skinny_rows.cuh
  bool thin_ = false;            // thin K: thin_k.cuh
  thin::ThinPlan thin_plan_;     // its lanes, rows a CTA and staging (thin::plan_thin_k)
  bool use_wgmma_ = false;       // the sm_90a wgmma kernel
  bool narrow_ = false;          // the narrow tile: narrow_tile.cuh
  bool small_grid_ = false;      // the FMA tile instead of the tensor path
  bool cluster_sum_ = false;     // the FMA tile's splits sum in a cluster (no partials_)
  int fma_rows_ = small::kTile;  // the FMA tile's rows and columns (small_grid_: fma_tile_rows,
  int fma_cols_ = small::kTile;  // fma_tile_cols)
  int splits_ = 1;
  int64_t k_split_ = 0;        // K per split (a multiple of kBK when splits_ > 1)
  float* partials_ = nullptr;  // owned: (splits_, batch, M, N) when splits_ > 1 and no cluster sum
};

}  // namespace kb::custom::L1_003

KB_REGISTER_IMPLEMENTATION(L1_003, custom, kb::custom::L1_003::Tf32x3Bmm)
