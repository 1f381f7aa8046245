// Implicit-GEMM 2-D convolution (3xTF32, mma.sync m16n8k8) whose epilogue never stores the conv:
// it takes the 2x2/stride-2 max of every pooling window, adds the per-channel bias, clamps to
// [lo, hi] and writes one partial sum per (image, channel, pixel tile). Used by L2_010.
//   conv: y[n][co][oh][ow] = sum_{ci,kh,kw} w[co][ci][kh][kw] * x[n][ci][oh-ph+kh*dh][ow-pw+kw*dw]
//   (stride 1); x: (N, C_in, H, W) fp32 NCHW; w: (C_out, K) with K = C_in*KH*KW, k =
//   (ci*KH+kh)*KW+kw. partial[n][co][pt] = sum over the pooling windows of tile pt of clamp(max4(y)
//   + bias[co], lo, hi)
// The gather of kernels/cores/conv2d_tf32x3/tensor_tile.cuh with a 64-channel CTA tile (C_out = 64
// in L2_010: a 128-row tile would idle half the MMAs): CTA tile 64 (C_out) x 128 (columns) x 32
// (k), 4 warps of 64 x 32, 3 stages, 3 CTAs per SM. The stage layout (swizzles), fragment maps and
// mma_stage are gemm128's (kernels/cores/tf32x3/gemm128.cuh: the same 64 x 32 warp tile over
// 32 k x 128 columns, one warp along M, so warp_m = 0); the copy slots are this tile's own. The
// pipeline is kernels/cores/tf32x3/mainloop.cuh (kernel and epilogue: L2_010's generic.cuh).
// Columns are "pool-window major": column c of an image is window q = c / 4 (row q / Wp, column
// q % Wp of the pooled map), element c % 4 = (dy, dx) = (c / 2 % 2, c % 2) of that window, so a
// thread's 4 consecutive accumulator columns are one window. Floor mode: only Hp = Ho/2 rows and
// Wp = Wo/2 columns of windows exist, the conv's odd last row/column is never computed.
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>
#include "kernels/cores/conv2d_tf32x3/conv_args.cuh"
#include "kernels/cores/tf32x3/gemm128.cuh"

namespace kb::custom::conv2d_pool_tf32x3 {

constexpr int kBM = 64;   // CTA tile rows: output channels
constexpr int kBN = 128;  // CTA tile columns: 32 pooling windows x 4 conv pixels, one image
constexpr int kBK = 32;   // k per pipeline stage
constexpr int kStages = 3;
constexpr int kThreads = 128;  // 4 warps
constexpr int kWarpsN = 4;
constexpr int kWarpTileM = kBM;            // 64
constexpr int kWarpTileN = kBN / kWarpsN;  // 32
constexpr int kMmaTilesM = kWarpTileM / 16;
constexpr int kMmaTilesN = kWarpTileN / 8;
constexpr int kKSteps = kBK / 8;
constexpr int kStageFloatsA = kBM * kBK;
constexpr int kStageFloatsB = kBK * kBN;
constexpr int kSmemBytes = kStages * (kStageFloatsA + kStageFloatsB) * 4;  // 73,728
constexpr int kGatherCopies = kBK;  // a thread owns one column and copies all 32 k rows
constexpr int kWeightVecCopies = kBM * kBK / 4 / kThreads;  // 4 chunks of 16 bytes
constexpr int kWeightScalarCopies = kBM * kBK / kThreads;   // 16 floats
constexpr int kMinBlocks = 3;

static_assert(kWarpsN * 32 == kThreads, "one warp per 64 x 32 warp tile");
static_assert(kMmaTilesN == 4, "a thread's B values for its n-tiles are one float4 = one window");
static_assert(kBK == 32 && kBN == 128 && kBM == 64, "the swizzles below assume these tiles");
static_assert(kBN == kThreads, "the gather gives each thread one column");
static_assert(kWeightVecCopies == 4 && kWeightScalarCopies == 16, "weight copy counts");
static_assert(kStages * (kStageFloatsA + kStageFloatsB) * 4 >= kWarpsN * kBM * 4,
              "the partial-sum reduction reuses the stages");
static_assert((kSmemBytes + 1024) * kMinBlocks <= 228 * 1024, "three CTAs per SM");
static_assert(kBK == gemm128::kBK && kBN == gemm128::kBN && kWarpsN == gemm128::kWarpsN &&
                  kWarpTileM == gemm128::kWarpTileM && kWarpTileN == gemm128::kWarpTileN,
              "gemm128's stage layout, warp tile and mma_stage");

// ---- from the gemm128 tile: stage layout, fragment and C maps (call with warp_m = 0), MMA ----

using gemm128::a_frag_fast;
using gemm128::a_frag_index;
using gemm128::a_smem_index;
using gemm128::b_frag_fast;
using gemm128::b_frag_index;
using gemm128::b_smem_index;
using gemm128::c_col;
using gemm128::c_row;
using gemm128::CopySlot;
using gemm128::mma_stage;

// ---- this tile's copy slots (the A rows per copy step follow the 128 threads) ----

__host__ __device__ constexpr CopySlot a_copy_vec(int tid, int j) {  // j < 4, 16-byte chunks
  return {(tid >> 3) + 16 * j, (tid & 7) * 4, a_smem_index((tid >> 3) + 16 * j, (tid & 7) * 4)};
}
__host__ __device__ constexpr CopySlot a_copy_scalar(int tid, int j) {  // j < 16
  return {(tid >> 5) + 4 * j, tid & 31, a_smem_index((tid >> 5) + 4 * j, tid & 31)};
}
// Gather j < 32: thread tid keeps column tid and copies k row j.
__host__ __device__ constexpr CopySlot b_copy_scalar(int tid, int j) {
  return {j, tid, b_smem_index(j, tid)};
}

// Gather copy j: k row j has swizzle 2 * ((j >> 1) & 3), i.e. column bits 3-4 flip by 8 that.
__host__ __device__ constexpr int b_copy_fast(int base, int j) {
  return (base ^ (8 * ((j >> 1) & 3))) + j * kBN;
}

constexpr bool fast_maps_match() {  // the fragment maps: gemm128's own check
  for (int tid = 0; tid < kThreads; ++tid) {
    for (int j = 0; j < kWeightVecCopies; ++j)
      if (a_copy_vec(tid, 0).smem + 16 * j * kBK != a_copy_vec(tid, j).smem) return false;
    for (int j = 0; j < kWeightScalarCopies; ++j)
      if (a_copy_scalar(tid, 0).smem + 4 * j * kBK != a_copy_scalar(tid, j).smem) return false;
    for (int j = 0; j < kGatherCopies; ++j)
      if (b_copy_fast(b_copy_scalar(tid, 0).smem, j) != b_copy_scalar(tid, j).smem) return false;
  }
  return true;
}
static_assert(fast_maps_match(), "per-thread base + constant offsets must equal the index maps");

// Every (row, k) / (k, column) of a stage is written by exactly one copy.
constexpr bool copies_cover_stage() {
  bool a_vec[kStageFloatsA] = {}, a_sc[kStageFloatsA] = {}, b[kStageFloatsB] = {};
  for (int tid = 0; tid < kThreads; ++tid) {
    for (int j = 0; j < kWeightVecCopies; ++j)
      for (int e = 0; e < 4; ++e) {
        const CopySlot s = a_copy_vec(tid, j);
        if (a_vec[a_smem_index(s.row, s.col + e)]) return false;
        a_vec[a_smem_index(s.row, s.col + e)] = true;
      }
    for (int j = 0; j < kWeightScalarCopies; ++j) {
      const int i = a_copy_scalar(tid, j).smem;
      if (a_sc[i]) return false;
      a_sc[i] = true;
    }
    for (int j = 0; j < kGatherCopies; ++j) {
      const int i = b_copy_scalar(tid, j).smem;
      if (b[i]) return false;
      b[i] = true;
    }
  }
  return true;
}
static_assert(copies_cover_stage(), "the copies must tile the stages exactly");

// ---- the gather: which x element feeds B(k, column) ----

// Per thread and tile: where its column's receptive field starts (the conv2d core's PixelOrigin;
// ok: the column exists, column < 4 * Hp * Wp), and where the gather reads B(k, column)
// (gather_source<true>: the layer is padded).
using conv2d_tf32x3::gather_source;
using conv2d_tf32x3::GatherSource;
using conv2d_tf32x3::PixelOrigin;
// Column c of image n (pool-window major, see the header comment); stride 1.
__host__ __device__ inline PixelOrigin pixel_origin(int64_t image_off, int col, int cols_total,
                                                    int wp, int w_in, int ph, int pw) {
  const bool ok = col < cols_total;
  const int c = ok ? col : 0;
  const int q = c >> 2;
  const int oh = 2 * (q / wp) + ((c >> 1) & 1), ow = 2 * (q % wp) + (c & 1);
  const int ih0 = oh - ph, iw0 = ow - pw;
  return {image_off + int64_t{ih0} * w_in + iw0, ih0, iw0, ok};
}
// (tap_off for k < K_pad, then (dh, dw) pairs), 0 past K; K_pad = ceil(K / kBK) * kBK.
inline std::vector<int> build_tap_table(int c_in, int h, int w, int kh_n, int kw_n, int dil) {
  const int k_total = c_in * kh_n * kw_n, k_pad = (k_total + kBK - 1) / kBK * kBK;
  std::vector<int> t(3 * static_cast<size_t>(k_pad), 0);
  for (int k = 0; k < k_total; ++k) {
    const int ci = k / (kh_n * kw_n), kh = k / kw_n % kh_n, kw = k % kw_n;
    t[k] = (ci * h + kh * dil) * w + kw * dil;
    t[k_pad + 2 * k] = kh * dil;
    t[k_pad + 2 * k + 1] = kw * dil;
  }
  return t;
}

// 3xTF32 and cp.async primitives: kernels/cores/tf32x3/mma.cuh.
using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;

using Acc = float[kMmaTilesM][kMmaTilesN][4];

}  // namespace kb::custom::conv2d_pool_tf32x3
