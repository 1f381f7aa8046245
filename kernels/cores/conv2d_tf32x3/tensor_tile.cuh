// The conv2d core's 3xTF32 tile: implicit-GEMM 2-D convolution with error-compensated TF32 on
// mma.sync m16n8k8, with a pluggable epilogue (epilogue.cuh), the core's kernel for large layers
// whose images do not take the wgmma kernel (conv2d_core.cuh has the choice).
//   y[n][co][oh][ow] = sum_{ci,kh,kw} w[co][ci][kh][kw] * x[n][ci][oh*sh-ph+kh*dh][ow*sw-pw+kw*dw]
// GEMM per image n: Y_n (C_out x P) = Wt (C_out x K) @ X_n (K x P), P = Ho*Wo, K = C_in*KH*KW,
// k = (ci*KH + kh)*KW + kw: Wt is the OIHW weight as stored (row-major, K contiguous) and column p
// of X_n is the im2col patch of output pixel p, gathered from global memory with 4-byte cp.async
// through a tap table (k -> offset of x[n][ci][kh*dh][kw*dw] from x[n][0][0][0]) built in setup()
// and copied to shared memory by each CTA (2.3 KB for K = 576): per copy one broadcast load, one
// IMAD.WIDE, a predicate and the cp.async.
// Tile, index maps, mma_stage and precision: the gemm128 tile of L1_003
// (kernels/cores/tf32x3/gemm128.cuh), pipelined by kernels/cores/tf32x3/mainloop.cuh: CTA tile
// 128 (C_out) x 128 (pixels of ONE image) x 32 (k), 3-stage cp.async pipeline, 8 warps of
// 64 x 32, operands split into big + small TF32 after the shared-memory load, product =
// a_small*b_big + a_big*b_small + a_big*b_big. Tiles never straddle two images, so an epilogue
// may reduce per (n, co) plane (kStats: store_tile, reduce_stats).
// Owns: the gather's index map (checked by static_assert), the weight loader, the tile's
// epilogue and statistics, the kernel.
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/conv2d_tf32x3/conv_args.cuh"
#include "kernels/cores/conv2d_tf32x3/epilogue.cuh"
#include "kernels/cores/tf32x3/gemm128.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"

namespace kb::custom::conv2d_tf32x3 {

// The tile: kernels/cores/tf32x3/gemm128.cuh (CTA 128 x 128 x 32, 3 stages, 8 warps of 64 x 32,
// swizzles, A copy slots, fragment and C maps, mma_stage); the B operand is gathered here.
using namespace gemm128;

constexpr int kGatherCopies = kBK * kBN / kThreads;  // 16 per thread
// The tap table goes to shared memory (after the stages) when it fits this; else it is read from
// global memory. 2 x (96 + 16 + 1 reserved) KB <= 228 KB keeps two CTAs per SM.
constexpr int kMaxSmemTableBytes = 16 * 1024;
constexpr int kMaxSmemBytes = kSmemBytes + kMaxSmemTableBytes;

static_assert(kBM * kBK == 16 * kThreads && kGatherCopies == 16, "scalar paths: 16 floats each");
static_assert((kMaxSmemBytes + 1024) * 2 <= 228 * 1024, "two CTAs per SM");
static_assert(kWarpsN * kBM * 2 * 4 <= kSmemBytes, "the stats reduction reuses the stages");
static_assert(2 * kMmaTilesN == 8, "a thread's columns in a tile row: 8 consecutive ones");

// Gather j < 16 uses gemm128's b_copy_scalar: a thread keeps one pixel (column tid & 127) and
// copies k rows (tid >> 7) + 2j. Row r0 + 2j has swizzle 2 * (j & 3) (r0 <= 1), i.e. bits 3-4 of
// the index flip by 8 (j & 3).
__host__ __device__ constexpr int b_copy_fast(int base, int j) {
  return (base ^ (8 * (j & 3))) + 2 * j * kBN;
}
constexpr bool gather_map_matches() {
  for (int tid = 0; tid < kThreads; ++tid)
    for (int j = 0; j < kGatherCopies; ++j)
      if (b_copy_fast(b_copy_scalar(tid, 0).smem, j) != b_copy_scalar(tid, j).smem) return false;
  return true;
}
static_assert(gather_map_matches(), "per-thread base + constant offsets must equal the index map");

struct TileCoord {
  int n, pt, ct;  // image, pixel tile, channel tile
};
__device__ __forceinline__ TileCoord tile_coord(const ConvArgs& p) {
  const int b = static_cast<int>(blockIdx.x);
  const int r = b / p.co_tiles;
  return {r / p.pix_tiles, r % p.pix_tiles, b % p.co_tiles};
}

// ---- global -> shared ----

template <bool kVec>
struct WeightLoader {
  const float* a;    // weight of copy 0 at the current k-tile (dereferenced only when in range)
  int col;           // k of copy 0 within the k-tile
  uint32_t rows_ok;  // bit j: copy j's channel < C_out
};
template <bool kVec>
__device__ __forceinline__ CopySlot weight_slot(int tid, int j) {
  return kVec ? a_copy_vec(tid, j) : a_copy_scalar(tid, j);
}
template <bool kVec>
__device__ __forceinline__ WeightLoader<kVec> make_weight_loader(const ConvArgs& p, int co0) {
  const CopySlot s = weight_slot<kVec>(threadIdx.x, 0);
  WeightLoader<kVec> l{p.w + int64_t{co0 + s.row} * p.k + s.col, s.col, 0u};
#pragma unroll
  for (int j = 0; j < (kVec ? 4 : 16); ++j)
    l.rows_ok |= (co0 + weight_slot<kVec>(threadIdx.x, j).row < p.c_out ? 1u : 0u) << j;
  return l;
}
// Copies the weight k-tile k0 / kBK into the stage at byte address stage_a; advances the loader.
template <bool kVec>
__device__ __forceinline__ void load_weights(const ConvArgs& p, WeightLoader<kVec>& l,
                                             uint32_t stage_a, int k0) {
  const bool k_ok = l.col < p.k - k0;  // vector path: K % 4 == 0, so a chunk is all in or all out
  constexpr int kCopies = kVec ? 4 : 16;
  constexpr int kRowStep = kVec ? 32 : 8;
#pragma unroll
  for (int j = 0; j < kCopies; ++j) {
    const bool ok = ((l.rows_ok >> j) & 1u) && k_ok;
    const float* src = ok ? l.a + int64_t{kRowStep * j} * p.k : p.w;
    const uint32_t dst = stage_a + weight_slot<kVec>(threadIdx.x, j).smem * 4;
    if constexpr (kVec)
      cp_async_16(dst, src, ok);
    else
      cp_async_4(dst, src, ok);
  }
  l.a += kBK;
}
// Gathers the im2col k-tile k0 / kBK of this thread's pixel into the stage at stage_b.
// table: tap_off of ConvArgs, in shared or global memory (generic loads), tap_hw after K_pad ints.
template <bool kPadded>
__device__ __forceinline__ void gather_pixels(const ConvArgs& p, const PixelOrigin& o,
                                              const int* table, int k_pad, uint32_t stage_b,
                                              int k0) {
  const CopySlot s0 = b_copy_scalar(threadIdx.x, 0);
  const int* taps = table + k0 + s0.row;  // copy j reads entry 2j (< K_pad: the table covers it)
  const int2* taps_hw = reinterpret_cast<const int2*>(table + k_pad) + k0 + s0.row;
  // With padding x_pix may point outside x (only rel brings it in). The empty asm keeps the
  // compiler from folding x_off back into each copy's address (one IMAD.WIDE per copy, not four).
  const float* x_pix = p.x + o.x_off;
  asm("" : "+l"(x_pix));
#pragma unroll
  for (int j = 0; j < kGatherCopies; ++j) {
    const int2 hw = kPadded ? taps_hw[2 * j] : make_int2(0, 0);
    const GatherSource src =
        gather_source<kPadded>(o, k0 + s0.row + 2 * j, p.k, taps[2 * j], hw.x, hw.y, p.h, p.w_in);
    cp_async_4(stage_b + b_copy_fast(s0.smem, j) * 4, x_pix + src.rel, src.ok);
  }
}

// ---- epilogue (the contract: epilogue.cuh) ----

using Acc = float[kMmaTilesM][kMmaTilesN][4];
using RowSums = float[kMmaTilesM][2];

// Values of a thread's row that are in range: its 8 columns from c_col(warp_n, lane, 0) on.
__device__ __forceinline__ float thread_row_count(int cols, int warp_n, int lane) {
  return static_cast<float>(min(max(cols - c_col(warp_n, lane, 0), 0), 2 * kMmaTilesN));
}

// Applies epi and stores the tile y[n][co0 + row][p0 + col]; means/m2s: a thread's row
// statistics (kStats).
template <class Epi>
__device__ __forceinline__ void store_tile(const ConvArgs& p, const Epi& epi, float* y_tile,
                                           int co0, int rows, int cols, int warp_m, int warp_n,
                                           int lane, const Acc& acc, RowSums& means, RowSums& m2s) {
  const float count = thread_row_count(cols, warp_n, lane);
#pragma unroll
  for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      means[mt][half] = m2s[mt][half] = 0.0f;
      const int row = c_row(warp_m, lane, mt, half);
      if (row >= rows) continue;
      const typename Epi::Row r = epi.row(co0 + row);
      float* y_row = y_tile + int64_t{row} * p.hw_out;
      float pilot = 0.0f, s = 0.0f, q = 0.0f;  // sums of v - pilot, (v - pilot)^2
#pragma unroll
      for (int vec = 0; vec < 2; ++vec) {
        const int col = c_col(warp_n, lane, vec);
        float v[kMmaTilesN];
#pragma unroll
        for (int nt = 0; nt < kMmaTilesN; ++nt) {
          v[nt] = epi(r, acc[mt][nt][2 * half + vec]);
          if (Epi::kStats) {
            if (vec == 0 && nt == 0) pilot = v[0];  // in range whenever any column is
            if (col + nt < cols) {
              const float d = v[nt] - pilot;
              s += d;
              q = fmaf(d, d, q);
            }
          }
        }
        if (p.vec_y) {
          if (col < cols)
            *reinterpret_cast<float4*>(y_row + col) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int nt = 0; nt < kMmaTilesN; ++nt)
            if (col + nt < cols) y_row[col + nt] = v[nt];
        }
      }
      if (Epi::kStats && count > 0.0f) {
        const float mean_d = s / count;
        means[mt][half] = pilot + mean_d;
        m2s[mt][half] = fmaxf(fmaf(-s, mean_d, q), 0.0f);
      }
    }
}

// stats[n][co0 + row][pt] = (mean, M2) over the tile's pixels, merged in a fixed order
// (deterministic). red: the (no longer used) pipeline stages.
__device__ __forceinline__ void reduce_stats(const ConvArgs& p, float* red, const TileCoord& tc,
                                             int co0, int rows, int cols, int warp_m, int warp_n,
                                             int lane, RowSums& means, RowSums& m2s) {
  __syncthreads();  // every warp is done with the stages
#pragma unroll
  for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float2 m = merge_over_quad(thread_row_count(cols, warp_n, lane),
                                       make_float2(means[mt][half], m2s[mt][half]));
      if ((lane & 3) == 0) {
        const int row = c_row(warp_m, lane, mt, half);
        red[(warp_n * kBM + row) * 2] = m.x;
        red[(warp_n * kBM + row) * 2 + 1] = m.y;
      }
    }
  __syncthreads();
  const int row = threadIdx.x;
  if (row < kBM && row < rows) {
    float n = 0.0f;
    float2 m = make_float2(0.0f, 0.0f);
#pragma unroll
    for (int wn = 0; wn < kWarpsN; ++wn) {  // warp wn holds columns [32 wn, 32 wn + 32)
      const float n_b = static_cast<float>(min(max(cols - wn * kWarpTileN, 0), kWarpTileN));
      m = merge_moments(n, m, n_b,
                        make_float2(red[(wn * kBM + row) * 2], red[(wn * kBM + row) * 2 + 1]));
      n += n_b;
    }
    p.stats[(int64_t{tc.n} * p.c_out + co0 + row) * p.pix_tiles + tc.pt] = m;
  }
}

// ---- the kernel ----

template <bool kVecW, bool kPadded, class Epi>
__global__ void __launch_bounds__(kThreads, 2)
    conv2d_tf32x3_kernel(const ConvArgs p, const Epi epi) {
  extern __shared__ __align__(128) float smem[];
  const auto [lane, warp_m, warp_n] = warp_pos();
  const TileCoord tc = tile_coord(p);
  const int co0 = tc.ct * kBM, p0 = tc.pt * kBN;
  const int rows = p.c_out - co0,
            cols = min(kBN, p.hw_out - p0);  // in range: row < rows, col < cols

  WeightLoader<kVecW> weights = make_weight_loader<kVecW>(p, co0);
  const int* table =
      staged_tap_table<kThreads>(p, smem + kStages * (kStageFloatsA + kStageFloatsB));
  const PixelOrigin origin = pixel_origin(tc.n * p.x_image, p0 + b_copy_scalar(threadIdx.x, 0).col,
                                          p.hw_out, p.wo, p.w_in, p.sh, p.sw, p.ph, p.pw);
  const int a_base = a_frag_index(warp_m, lane, 0, 0, 0);
  const int b_base = kStageFloatsA + b_frag_index(warp_n, lane, 0, 0);
  Acc acc;
  tf32x3::mainloop<kStages, kStageFloatsA + kStageFloatsB>(
      smem, (p.k + kBK - 1) / kBK, acc,
      [&](uint32_t stage, int kt) {
        load_weights<kVecW>(p, weights, stage, kt * kBK);
        gather_pixels<kPadded>(p, origin, table, p.k_pad, stage + kStageFloatsA * 4, kt * kBK);
      },
      [&](const float* stage, Acc& c) { mma_stage(stage, a_base, b_base, c); });

  float* y_tile = p.y + (int64_t{tc.n} * p.c_out + co0) * p.hw_out + p0;
  RowSums means, m2s;
  store_tile(p, epi, y_tile, co0, rows, cols, warp_m, warp_n, lane, acc, means, m2s);
  if constexpr (Epi::kStats)
    reduce_stats(p, smem, tc, co0, rows, cols, warp_m, warp_n, lane, means, m2s);
}

}  // namespace kb::custom::conv2d_tf32x3
