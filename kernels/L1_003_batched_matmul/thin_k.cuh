// L1_003's path for products of a thin K (K <= kMaxK, namespace thin), taken by custom.cu's
// takes_thin_k.
//
// With K of a few terms each output costs K multiply-adds and one 4-byte store: the product is a
// write of C (batch x M x N floats), and the tiles built for reuse along K spend their time on
// pipeline fill and a strided epilogue. The mixed-regime sweep (seed 77, H100) measured the
// mma.sync tile at 0.18x the reference at 97 x 431 x 5 x 1357 (620 against 112 us), where writing
// C's 227 MB takes ~70 us. Here a CTA of kThreads threads owns `rows` rows of A (at most 64, as
// plan_thin_k shares M among the CTAs) and cols x `lanes` columns of C (cols = cols_per_thread(K),
// 4 or 2 so that B's registers stay under ~64; lanes 32 .. kThreads: lanes_for): thread t keeps
// B(k, col) for its cols columns col = n0 + t % lanes + lanes j and every k in registers (K a
// template argument: the loops unroll whole), the CTA's A rows (one contiguous run of rows x K
// floats) sit in shared memory, and the threads walk the rows kThreads / lanes at a time: per row,
// K broadcast loads of A serve `cols` outputs, each one chain of K FMAs (k ascending) and one
// store, consecutive threads on consecutive columns (coalesced at any alignment of N). Where N is
// not a multiple of 4 at K <= 8 and a CTA writes much of it (stages_rows) each warp owns 32 x
// cols consecutive columns instead and writes each row of them from shared memory by 16-byte stores
// (store_run): no store straddles a sector. Measured (H100, session 39, first form: one column a
// thread, K unrolled to 4, 8 or 16 with predicates): 97 x 431 x 5 x 1357 0.62 -> 0.155 ms
// (reference 0.106-0.117), 8 x 1000 x 9 x 999 0.098 -> 0.025 (0.021), but 5 x 97 x 5 x 301 0.006
// -> 0.011 (20 CTAs). Strict fp32 (one chain per output): no accuracy caveat.
//
// Thread safety: device code without state; launch_thin_k is stateless.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/L1_003_batched_matmul/gemm_args.h"
#include "kernels/cores/aligned_store.cuh"

namespace kb::custom::L1_003::thin {

constexpr int kThreads = 256;
constexpr int kMaxRows = 64;      // rows of A (and C) a CTA owns at most
constexpr int kMaxK = 16;         // the path's K
constexpr int kMinCtasPerSm = 4;  // the grid plan_thin_k aims at

// Columns of C a thread owns, `lanes` apart: 4 x K registers of B up to K = 8, then 2 x K.
constexpr int cols_per_thread(int64_t k) {
  return k <= 8 ? 4 : 2;
}

constexpr int kWideTileCols = 512;  // a column tile's width where N is wider
constexpr int kFewRows = 16;        // products of at most this many rows: passes of kFewRowLanes
constexpr int kFewRowLanes = 64;    // (4 rows a pass)

// The CTA's lanes across columns (a power of two from one warp to kThreads): the narrowest whose
// column tile (lanes x cols_per_thread(K)) covers N, up to kWideTileCols; past that, of the tiles
// at least kWideTileCols wide, the one whose last tile leaves the fewest columns idle (ties to
// the wider). Products of at most kFewRows rows take at most kFewRowLanes, so that a pass of the
// CTA's threads covers several rows (one pass of 256 lanes is one row).
// H100, session 51 (`kb bench L1_003 --dims D --time-cap 0.2 --trials 2 --seed 7`, lanes 256 /
// 128 / 64 / 32, custom us; reference in brackets; /work/.device/6): 79 x 397 x 5 x 1,291 107 /
// 92 / 96 / 103 [81], 97 x 431 x 5 x 1,357 138 / 117 / 124 / 133 [110]: two tiles of 1,024
// columns left 37% of the CTAs' columns idle, three of 512 16%, and narrower tiles' CTAs cost
// more than their fill gained. Few rows (the rows kernel's shapes, lanes 256 / 64): 65 x 7 x 9 x
// 1,399 9 / 8 [12], 50 x 12 x 5 x 777 8.3 / 7.9 [7.5].
inline int lanes_for(int64_t m, int64_t k, int64_t n) {
  const int cols = cols_per_thread(k);
  const int max_lanes = m <= kFewRows ? kFewRowLanes : kThreads;
  int lanes = 32;
  while (lanes < max_lanes && int64_t{lanes} * cols < std::min<int64_t>(n, kWideTileCols))
    lanes *= 2;
  int64_t best_idle = -1;
  int best = lanes;
  for (int l = lanes; l <= max_lanes; l *= 2) {
    const int64_t tile = int64_t{l} * cols;
    const int64_t idle = (n + tile - 1) / tile * tile - n;
    if (best_idle < 0 || idle <= best_idle) best = l, best_idle = idle;
  }
  return best;
}

// Whether the thin-K kernel stages C's rows in shared memory and writes them with 16-byte stores
// (kStaged): for N not a multiple of 4, whose rows start at every alignment, at K <= 8 (4 columns
// a thread), where N spans more than one column tile, or where one tile of at least 128 lanes
// spans it and a CTA writes at least kStagedMinCtaFloats of C. Written in place, each warp's 32
// consecutive 4-byte stores straddle a sector they share with the next warp's: N 1357 ran 147 us
// against 95 at N 1360 (97 x 431 x 5 x N). Session 41, H100, main's pack -> this one (us,
// reference in brackets): 97 x 431 x 5 x 1357 149 -> 120 [110], 79 x 397 x 5 x 1291 108 -> 93
// [82]; staged at 2 columns a thread it lost (8 x 1000 x 9 x 999 19 -> 32 [22], 64 x 512 x 16 x
// 1023 73 -> 112 [82]), as did a first form staging a whole CTA's row between block barriers at
// K 9 and 16. H100, session 53 (`kb bench L1_003 --dims D --time-cap 0.2 --trials 3 --seed 7`,
// exp53's pack, its KB_EXP_STAGE switch forcing either form at the same plan; staged / in place
// as the reference's multiple, /work/.device/6 and 14, docs/kernels.md has the table):
//  - several tiles, staged always won: 97 x 431 x 5 x 1357 1.07x / 0.79x, 64 x 512 x 6 x 1537
//    0.91x / 0.70x, 50 x 700 x 3 x 2050 1.07x / 0.65x, 30 x 1000 x 8 x 3001 1.08x / 0.82x;
//  - one tile, staged won where a CTA wrote >= 15,030 floats at 128 or 256 lanes: 100 x 300 x 3
//    x 1001 (30 rows a CTA) 1.10x / 0.94x, 200 x 77 x 3 x 1001 (26) 1.14x / 1.08x, 16 x 1000 x 3 x
//    1001 (16) 1.12x / 0.99x, 200 x 77 x 5 x 1001 (26) 1.32x / 1.11x, 100 x 300 x 5 x 501
//    (30) 1.18x / 1.11x, 200 x 77 x 8 x 1001 (26) 1.07x / 1.05x;
//  - and lost at <= 13,026 floats or 64 lanes: 200 x 77 x 3 x 501 (26 rows) 1.22x / 1.26x, 50 x
//    200 x 4 x 777 (16) 0.98x / 1.09x, 64 x 70 x 8 x 999 (8) 0.79x / 1.10x, 64 x 70 x 3 x 999
//    (8) 1.00x / 1.14x, 64 x 70 x 5 x 999 (8) 1.00x / 1.13x, 8 x 1000 x 5 x 999 (8) 0.95x / 0.95x,
//    5 x 97 x 5 x 301 (4) 1.11x / 1.17x; at 64 lanes, 120 x 323 x 8 x 249 (56 rows) 0.78x /
//    1.01x, 120 x 323 x 7 x 249 0.85x / 1.01x, 30 x 323 x 7 x 249 0.83x / 0.95x, 400 x 100 x 3 x
//    249 1.27x / 1.26x.
// The threshold sits in that gap, fitted to these shapes; why a CTA's share decides, not
// measured (a guess: the staged form's fixed cost a row, its warp barriers and shared-memory
// round trip, is paid back only over enough of C).
constexpr int64_t kStagedMinCtaFloats = 14000;
inline bool stages_rows(int64_t k, int64_t n, int64_t col_tiles, int lanes, int rows) {
  if (n % 4 == 0 || cols_per_thread(k) != 4) return false;
  return col_tiles > 1 || (lanes >= 128 && int64_t{rows} * n >= kStagedMinCtaFloats);
}

// The thin-K kernel's launch shape: lanes across columns (lanes_for), rows of A a CTA owns, and
// whether it stages C's rows (stages_rows).
struct ThinPlan {
  int lanes = 32;
  int rows = kMaxRows;
  bool staged = false;
};

// M shared evenly among the CTAs that CTAs of `rows` rows would take, in whole passes of `pass`
// rows: the same count of row tiles, none more than a pass over M / row tiles.
inline int even_rows(int64_t m, int rows, int pass) {
  const int64_t row_tiles = std::max<int64_t>(1, (m + rows - 1) / rows);
  const int64_t share = (m + row_tiles - 1) / row_tiles;
  return static_cast<int>(std::max<int64_t>(1, (share + pass - 1) / pass) * pass);
}

// The column tiles of `lanes` lanes over N.
inline int64_t column_tiles(int64_t k, int64_t n, int lanes) {
  const int64_t tile_cols = int64_t{lanes} * cols_per_thread(k);
  return (n + tile_cols - 1) / tile_cols;
}

// The rows a CTA owns: kMaxRows, halved (down to one pass of the CTA's threads) while the grid
// would be under kMinCtasPerSm CTAs an SM, but not below K / 2: each CTA loads K x its columns
// of B, so at fewer rows B's loads (from L2) outnumber the CTA's outputs more than twice. H100,
// session 51 (rows 2 / 8 / 16, /work/.device/6): 1 x 509 x 15 x 1,881 (seed 123's miss; 1,020 CTAs
// of 2 rows loaded 31 MB of B for 3.8 MB of C) 11 / 8 / 8 us [9]; 120 x 323 x 7 x 249, 720 CTAs of
// 64 rows: 29 us against 31 / 35 at 32 / 16 rows [23]. Then the CTAs of a column tile share M's
// rows evenly (even_rows): at 323 rows, 6 CTAs of 56 rather than 5 of 64 and one of 3 (H100,
// session 53, /work/.device/4: 29 -> 27 us; why it gains, not measured).
inline ThinPlan plan_thin_k(int64_t batch, int64_t m, int64_t k, int64_t n, int sms) {
  ThinPlan plan;
  plan.lanes = lanes_for(m, k, n);
  const int64_t col_tiles = column_tiles(k, n, plan.lanes);
  const int pass = kThreads / plan.lanes;
  const int min_rows = std::max<int>(pass, static_cast<int>((k + 1) / 2));
  while (plan.rows / 2 >= min_rows &&
         (m + plan.rows - 1) / plan.rows * col_tiles * batch < int64_t{kMinCtasPerSm} * sms)
    plan.rows /= 2;
  plan.rows = even_rows(m, plan.rows, pass);
  plan.staged = stages_rows(k, n, col_tiles, plan.lanes, plan.rows);
  return plan;
}

// grid: (column tiles, ceil(M / rows), batch entries); p.tiles_n unused. K == p.k.
// A thread's columns are n0 + base + stride j (j < kCols): in place, base = its lane and stride =
// lanes (each store of a warp 32 consecutive floats); kStaged, each warp owns a run of 32 kCols
// consecutive columns (base = the warp's run + its lane, stride 32), stages a row of it in shared
// memory at the alignment of its place in C and writes it by store_run: only warp barriers.
template <int K, bool kStaged>
__global__ void __launch_bounds__(kThreads)
    thin_k_kernel(const GemmArgs p, int lanes_log2, int cta_rows) {
  __shared__ __align__(16) float a_s[kMaxRows * (K > 0 ? K : 1)];  // A(m0 + r, k) at r K + k
  constexpr int kCols = cols_per_thread(K);
  constexpr int kRun = 32 * kCols;  // kStaged: a warp's columns
  // kStaged: a row of each warp's run, after up to 3 floats of alignment shift.
  __shared__ __align__(16) float z_s[kStaged ? (kThreads / 32) * (kRun + 4) : 1];
  const int t = static_cast<int>(threadIdx.x);
  const int lanes = 1 << lanes_log2;
  const int lane = t & (lanes - 1);
  const int n0 = static_cast<int>(blockIdx.x) * lanes * kCols;
  const int run0 = (lane >> 5) * kRun;  // kStaged: the warp's run in the tile
  const int base = kStaged ? run0 + (t & 31) : lane;
  const int stride = kStaged ? 32 : lanes;
  const int m0 = static_cast<int>(blockIdx.y) * cta_rows;
  const int64_t bi = blockIdx.z;
  const int rows = min(cta_rows, p.m - m0);

  const float* a = p.a + (bi * p.m + m0) * K;  // the CTA's rows: rows x K contiguous floats
  for (int i = t; i < rows * K; i += kThreads) a_s[i] = __ldg(a + i);
  float b[kCols][K > 0 ? K : 1];
  const int col0 = n0 + base;
  const float* b_col = p.b + bi * K * p.n + col0;
#pragma unroll
  for (int j = 0; j < kCols; ++j)
#pragma unroll
    for (int k = 0; k < K; ++k)
      b[j][k] = col0 + stride * j < p.n ? __ldg(b_col + int64_t{k} * p.n + stride * j) : 0.0f;
  __syncthreads();
  if (!kStaged && col0 >= p.n) return;

  float* c = p.c + (bi * p.m + m0) * p.n + n0;     // the CTA's column tile at row 0
  const int run_len = min(kRun, p.n - n0 - run0);  // kStaged: <= 0 where the run is past N
  float* z_run = z_s + (t >> 5) * (kRun + 4);
  for (int r = t >> lanes_log2; r < rows; r += kThreads >> lanes_log2) {
    float a_r[K > 0 ? K : 1];
#pragma unroll
    for (int k = 0; k < K; ++k) a_r[k] = a_s[r * K + k];
    float* c_row = c + int64_t{r} * p.n;
    const int shift = static_cast<int>((reinterpret_cast<uintptr_t>(c_row + run0) >> 2) & 3);
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      float acc = 0.0f;
#pragma unroll
      for (int k = 0; k < K; ++k) acc = fmaf(a_r[k], b[j][k], acc);
      if constexpr (kStaged) {
        z_run[shift + (t & 31) + 32 * j] = acc;
      } else if (col0 + stride * j < p.n) {
        c_row[base + stride * j] = acc;
      }
    }
    if constexpr (kStaged) {
      __syncwarp();
      const float* src = z_run + shift;
      if (run_len > 0) {
        store_run(
            c_row + run0, run_len, t & 31, 32,
            [src](int o) { return *reinterpret_cast<const float4*>(src + o); },
            [src](int o) { return src[o]; });
      }
      __syncwarp();
    }
  }
}

// Whether the grid's y dimension holds M in CTAs of `rows` rows.
inline bool fits(int64_t m, int rows) {
  return rows >= 1 && (m + rows - 1) / rows <= 65535;
}

// K in 0 .. kMaxK as a template argument.
template <int K = 0>
cudaError_t launch_for_k(const GemmArgs& p, dim3 grid, int lanes_log2, int rows, bool staged,
                         cudaStream_t stream) {
  if constexpr (K <= kMaxK) {
    if (p.k != K) return launch_for_k<K + 1>(p, grid, lanes_log2, rows, staged, stream);
    if (staged) {
      thin_k_kernel<K, true><<<grid, kThreads, 0, stream>>>(p, lanes_log2, rows);
    } else {
      thin_k_kernel<K, false><<<grid, kThreads, 0, stream>>>(p, lanes_log2, rows);
    }
    return cudaGetLastError();
  } else {
    return cudaErrorInvalidValue;
  }
}

// Launches the thin-K kernel over `batch` entries (p.k <= kMaxK, batch <= 65,535) as `plan` says
// (plan_thin_k; fits(p.m, plan.rows)).
inline cudaError_t launch_thin_k(const GemmArgs& p, int batch, const ThinPlan& plan,
                                 cudaStream_t stream) {
  if (p.k > kMaxK || !fits(p.m, plan.rows) || plan.rows > kMaxRows || plan.lanes < 32 ||
      plan.lanes > kThreads || (plan.lanes & (plan.lanes - 1)) != 0)
    return cudaErrorInvalidValue;
  int lanes_log2 = 0;
  while ((1 << lanes_log2) < plan.lanes) ++lanes_log2;
  const dim3 grid(static_cast<unsigned>(column_tiles(p.k, p.n, plan.lanes)),
                  static_cast<unsigned>((p.m + plan.rows - 1) / plan.rows),
                  static_cast<unsigned>(batch));
  return launch_for_k(p, grid, lanes_log2, plan.rows, plan.staged, stream);
}

}  // namespace kb::custom::L1_003::thin
