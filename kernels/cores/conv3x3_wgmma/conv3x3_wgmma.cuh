// 3x3 / stride 1 convolution, 3xTF32 on Hopper's warpgroup MMA (tf32x3/wgmma.cuh, sm_90a), with
// a pluggable tile epilogue: the conv core of L2_010 (+ 2x2 max pool + clamp + sums,
// conv2d_pool_tf32x3/conv3x3_pool_wgmma.cuh) and of conv2d_tf32x3/conv2d_core.cuh's users where
// the image is wide enough (L2_031: elementwise epilogue, stored; L2_017: stored with per-tile
// plane statistics; L2_001: stored, its sums promoted).
//   y[n][co][oh][ow] = sum_{ci,kh,kw} w'[co][ci][kh][kw] * x[n][ci][oh - pad + kh][ow - pad + kw]
//   x: (N, C_in, H, W) fp32 NCHW, zero outside; w' split per call by split_weight_kernel from an
//   OIHW conv weight, or from a ConvTranspose2d weight (C_in, C_out, 3, 3) flipped.
//
// GEMM view per tap (kh, kw) and 8-channel chunk: M = 64 output channels (the weights), N = the
// pixels of one output row (the input patch shifted by (kh, kw)), K = 8 input channels. Both
// operands sit in shared memory as plain K-major core matrices (8 rows x 4 channels, 128
// contiguous bytes; wgmma.cuh): the weights as [quad][co][4 ci], the patch as [quad][pixel][4 ci],
// so the 9 taps' B operands are the same patch read from 9 start addresses (a pixel is 16 bytes
// and any pixel may start a core matrix), with no copy per tap.
//
// Tile: 64 channels x 4 output rows x 128 output columns, one persistent CTA per SM of 2
// warpgroups; warpgroup g owns output rows 2 g and 2 g + 1 in two m64n128 accumulators (acc[0..63],
// acc[64..127]). Per stage (8 input channels): 9 taps x 2 rows x 3 product terms (a_small b_big,
// a_big b_small, a_big b_big) = 54 wgmmas per warpgroup. Thread t of warpgroup g, warp w = (t /
// 32) % 4, lane l: accumulator acc[64 rr + 4 j + 2 h + e] is channel 16 w + l / 4 + 8 h, row 2 g
// + rr, column 8 j + 2 (l % 4) + e of the tile.
// Stage: weights 9 taps x 2 parts x 2 quads x 64 x 4 (36 KB, one cp.async copy of the split
// weights) + patch 2 parts x 2 quads x 6 x 130 pixels x 4 (48 KB, loaded to registers, split,
// stored); two stages (170 KB) and the epilogues' scratch (2 KB).
// Promoted (Geometry<true>, L2_001): 64 channels x 2 rows x 128 columns, one row per warpgroup;
// each stage's wgmmas (27 per warpgroup) start their sums afresh in part[64], which the thread adds
// to its fp32 totals acc[64] once they end: the tensor core truncates each k8 step's sum, so a
// tile's chain of 3 x 9 x C_in / 8 truncations (a relative bias that grows with the chain) becomes
// 27 per stage plus one rounded add. Patch 4 x 130 pixels (33 KB); two stages (138 KB).
// Pipeline per (tile, chunk) item j: issue stage j % 2's wgmmas; meanwhile copy item j + 1's
// weights and load, split and store its patch into the other stage; wait for the wgmmas; at a
// tile's last chunk run the epilogue's tile(); one barrier; then its after_barrier(). (Waiting for
// the previous item only, with item j still running, made ptxas insert a full wait anyway, C7517:
// the accumulators cross the tile-end branch.)
//
// Host side: Conv3x3Wgmma, the plan (tile counts, the split weights, the persistent grid, the
// launches) that L2_010 and the conv2d core share.
//
// Thread safety: stateless device code; a Conv3x3Wgmma is used by one thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/status.h"
#include "kernels/cores/conv3x3_patch/patch_loads.cuh"
#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/cores/tf32x3/wgmma.cuh"

namespace kb::custom::conv3x3_wgmma {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::split_tf32_quad;
using ::kb::tf32x3::SplitTf32;
namespace wgmma = ::kb::tf32x3::wgmma;

constexpr int kKernel = 3;
constexpr int kTaps = kKernel * kKernel;
constexpr int kTileCo = 64;     // output channels per tile: one m64
constexpr int kTileCols = 128;  // output columns: one n128
constexpr int kThreads = 256;   // 2 warpgroups
constexpr int kChunkCi = 8;     // input channels per stage: one k8 step per tap
constexpr int kQuads = kChunkCi / 4;
constexpr int kPatchCols = kTileCols + kKernel - 1;    // 130
constexpr int kWTapFloats = 2 * kQuads * kTileCo * 4;  // big + small of one tap: 1,024
constexpr int kWStageFloats = kTaps * kWTapFloats;     // 9,216 (36 KB)
constexpr int kStages = 2;
constexpr int kRedFloats = 4 * kTileCo;  // an epilogue's scratch per tile (shared memory)
constexpr int kRedBuffers = 2;           // by tile parity
constexpr int kRowAccs = 64;             // one output row's m64n128 accumulator fragment

// The tile's rows and what follows from them. Plain: 2 rows per warpgroup, each sum one chain
// in the tensor core (4-row tiles). Promoted: 1 row per warpgroup, each stage's sums started
// afresh and added to fp32 totals (2-row tiles; the registers of the second row hold the totals).
template <bool kPromoted>
struct Geometry {
  static constexpr int kRowsPerGroup = kPromoted ? 1 : 2;
  static constexpr int kTileRows = 2 * kRowsPerGroup;                 // 4 / 2
  static constexpr int kPatchRows = kTileRows + kKernel - 1;          // 6 / 4
  static constexpr int kPatchPixels = kPatchRows * kPatchCols;        // 780 / 520
  static constexpr int kPatchPitch = (kPatchPixels + 7) / 8 * 8;      // per (part, quad) plane
  static constexpr int kPStageFloats = 2 * kQuads * kPatchPitch * 4;  // 12,544 / 8,320
  static constexpr int kStageFloats = kWStageFloats + kPStageFloats;
  static constexpr int kSmemBytes = (kStages * kStageFloats + kRedBuffers * kRedFloats) * 4;
  static constexpr int kPatchSlots = (kPatchPixels + kThreads - 1) / kThreads;  // 4 / 3
  static constexpr int kAccs = kRowsPerGroup * kRowAccs;  // a warpgroup's rows: 128 / 64
  static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM");
};
// The plain kernel's accumulators per thread (L2_010's pooling epilogue takes them whole).
constexpr int kAccs = Geometry<false>::kAccs;

static_assert(kWStageFloats % (4 * kThreads) == 0, "weights: whole 16-byte copies per thread");

// ---- index maps (host + device) ----

// Float index of weight (tap, part, ci, co) in a stage: [tap][part][ci / 4][co][ci % 4].
__host__ __device__ constexpr int weight_index(int tap, int part, int ci, int co) {
  return (((tap * 2 + part) * kQuads + ci / 4) * kTileCo + co) * 4 + ci % 4;
}
// ---- per-call weight preparation ----

// w_split[ct][chunk][stage weights] from the conv weight w'[co][ci][kh][kw]: `weight` itself
// (OIHW, C_out x C_in x 3 x 3) or, transposed_flipped, a ConvTranspose2d weight (C_in, C_out, 3,
// 3) with w'[co][ci][kh][kw] = weight[ci][co][2 - kh][2 - kw]; zero past C_in / C_out.
static __global__ void split_weight_kernel(const float* __restrict__ weight,
                                           float* __restrict__ w_split, int c_in, int c_out,
                                           int chunks, int co_tiles, bool transposed_flipped) {
  constexpr int kPerStage = kTaps * kChunkCi * kTileCo;  // (tap, ci, co) of one stage
  const int64_t total = int64_t{co_tiles} * chunks * kPerStage;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t block = i / kPerStage;  // ct * chunks + chunk
    const int r = static_cast<int>(i % kPerStage);
    const int tap = r / (kChunkCi * kTileCo), ci_l = r / kTileCo % kChunkCi, co_l = r % kTileCo;
    const int co = static_cast<int>(block / chunks) * kTileCo + co_l;
    const int ci = static_cast<int>(block % chunks) * kChunkCi + ci_l;
    const int kh = tap / kKernel, kw = tap % kKernel;
    const int64_t at = transposed_flipped
                           ? ((int64_t{ci} * c_out + co) * kKernel + (kKernel - 1 - kh)) * kKernel +
                                 (kKernel - 1 - kw)
                           : ((int64_t{co} * c_in + ci) * kKernel + kh) * kKernel + kw;
    const float v = co < c_out && ci < c_in ? weight[at] : 0.0f;
    const SplitTf32 sp = split_tf32(v);
    float* dst = w_split + block * kWStageFloats;
    dst[weight_index(tap, 0, ci_l, co_l)] = __uint_as_float(sp.big);
    dst[weight_index(tap, 1, ci_l, co_l)] = __uint_as_float(sp.small);
  }
}

// ---- the kernel ----

// Sizes validated by the host: C_in*H*W and the tile count fit int.
struct WgmmaArgs {
  const float* x;        // (N, C_in, H, W)
  const float* w_split;  // (co_tiles, chunks, kWStageFloats), from split_weight_kernel
  int c_in, c_out, h, w, pad;
  int chunks, co_tiles, tiles_h, tiles_w, tiles_total;
};

// Tile index = ((n * co_tiles + ct) * tiles_h + th) * tiles_w + tw; (r0, c0): the tile's first
// output row and column.
struct TileCoord {
  int n, ct, r0, c0, slot;  // slot = th * tiles_w + tw
};
template <class G>
__device__ __forceinline__ TileCoord tile_coord(const WgmmaArgs& p, int tile) {
  const int per_plane = p.tiles_h * p.tiles_w;
  const int slot = tile % per_plane, rest = tile / per_plane;
  return {rest / p.co_tiles, rest % p.co_tiles, slot / p.tiles_w * G::kTileRows,
          slot % p.tiles_w * kTileCols, slot};
}

template <class G>
using PatchRegs = float[G::kPatchSlots][kChunkCi];

// Patch pixel s of this thread: tid + s * kThreads (row-major in the kPatchRows x 130 patch).
template <class G>
__device__ __forceinline__ void load_patch(const WgmmaArgs& p, const TileCoord& tc, int chunk,
                                           PatchRegs<G>& raw) {
  conv3x3_patch::load_patch<kPatchCols, G::kPatchPixels, kThreads>(
      p.x, tc.n, p.c_in, chunk * kChunkCi, p.h, p.w, tc.r0 - p.pad, tc.c0 - p.pad, raw);
}
// Splits the registers and stores each pixel's 4-channel quads, big and small.
template <class G>
__device__ __forceinline__ void store_patch(float* patch, const PatchRegs<G>& raw) {
  static_assert(kChunkCi == 8, "conv3x3_patch's planes hold 8 channels");
  conv3x3_patch::store_patch_planes<G::kPatchPixels, G::kPatchPitch, kThreads>(patch, threadIdx.x,
                                                                               raw);
}
// One stage's weights: a contiguous copy of w_split[ct][chunk].
__device__ __forceinline__ void load_weights(const WgmmaArgs& p, uint32_t w_stage, int ct,
                                             int chunk) {
  conv3x3_patch::copy_stage<kWStageFloats, kThreads>(
      p.w_split + (int64_t{ct} * p.chunks + chunk) * kWStageFloats, w_stage);
}

// Warpgroup g's wgmmas of one stage: its G::kRowsPerGroup rows (kRowsPerGroup g + rr) of the
// tile, 9 taps, 3 terms (54 plain, 27 promoted). fresh: the first wgmma per row starts the sums
// (acc is not read): a plain tile's first stage, every promoted stage.
template <class G>
__device__ __forceinline__ void mma_stage(const float* weights, const float* patch, int group,
                                          bool fresh, float (&acc)[G::kAccs]) {
  constexpr uint32_t kCoreRows = 8 * 16;                 // 8 rows (channels or pixels) x 16 B
  constexpr uint32_t kWQuadBytes = kTileCo * 16;         // next 4 input channels of the weights
  constexpr uint32_t kPQuadBytes = G::kPatchPitch * 16;  // next 4 input channels of the patch
  constexpr uint32_t kPSmallFloats = kQuads * G::kPatchPitch * 4;
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap) {
    const int kh = tap / kKernel, kw = tap % kKernel;
    const float* w_big = weights + weight_index(tap, 0, 0, 0);
    const float* w_small = weights + weight_index(tap, 1, 0, 0);
    const uint64_t ab = wgmma::plain_descriptor(w_big, kWQuadBytes, kCoreRows);
    const uint64_t as = wgmma::plain_descriptor(w_small, kWQuadBytes, kCoreRows);
#pragma unroll
    for (int rr = 0; rr < G::kRowsPerGroup; ++rr) {
      const float* row = patch + 4 * ((G::kRowsPerGroup * group + rr + kh) * kPatchCols + kw);
      const uint64_t bb = wgmma::plain_descriptor(row, kPQuadBytes, kCoreRows);
      const uint64_t bs = wgmma::plain_descriptor(row + kPSmallFloats, kPQuadBytes, kCoreRows);
      auto& d = *reinterpret_cast<float(*)[kRowAccs]>(acc + rr * kRowAccs);
      wgmma::mma_m64n128k8(d, as, bb, !(fresh && tap == 0));
      wgmma::mma_m64n128k8(d, ab, bs);
      wgmma::mma_m64n128k8(d, ab, bb);
    }
  }
}

// The tile epilogue Epi: `void tile(const WgmmaArgs&, const TileCoord&, const float
// (&acc)[G::kAccs], float* red) const`, run by every thread once the tile's sums are complete
// (red: kRedFloats of shared memory for this tile), and `void after_barrier(const WgmmaArgs&, const
// TileCoord&, const float* red) const`, run after the barrier that follows.
// Grid: persistent, gridDim.x <= tiles_total; block: kThreads; dynamic shared memory
// Geometry<kPromoted>::kSmemBytes.
template <class Epi, bool kPromoted = false>
__global__ void __launch_bounds__(kThreads, 1) conv3x3_kernel(const WgmmaArgs p, const Epi epi) {
#if KB_WGMMA_ENABLED
  using G = Geometry<kPromoted>;
  extern __shared__ __align__(16) float smem[];
  float* red = smem + kStages * G::kStageFloats;
  const int group = static_cast<int>(threadIdx.x) / 128;
  const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);
  const int items = (p.tiles_total - first + step - 1) / step * p.chunks;  // (tile, chunk) pairs
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const auto w_stage = [&](int stage) { return smem + stage * G::kStageFloats; };
  const auto p_stage = [&](int stage) { return smem + stage * G::kStageFloats + kWStageFloats; };

  TileCoord cur = tile_coord<G>(p, first);
  PatchRegs<G> raw;
  load_weights(p, smem_base, cur.ct, 0);
  cp_async_commit();
  load_patch<G>(p, cur, 0, raw);
  store_patch<G>(p_stage(0), raw);
  cp_async_wait<0>();
  wgmma::fence_operand_stores();
  __syncthreads();

  // Plain: acc is the wgmmas' accumulator, written first by the fresh wgmmas of a tile's first
  // stage. Promoted: the wgmmas write part afresh each stage, and acc = the fp32 sum of the parts.
  float acc[G::kAccs];
  float part[kPromoted ? G::kAccs : 1];
  float(&sums)[G::kAccs] = *reinterpret_cast<float(*)[G::kAccs]>(kPromoted ? part : acc);

  int chunk = 0, tile_i = 0;  // item j = (tile first + tile_i * step, chunk)
  for (int j = 0; j < items; ++j) {
    const int stage = j & 1;
    wgmma::fence();
    mma_stage<G>(w_stage(stage), p_stage(stage), group, kPromoted || chunk == 0, sums);
    wgmma::commit_group();
    const bool tile_done = chunk + 1 == p.chunks, has_next = j + 1 < items;
    const int next_chunk = tile_done ? 0 : chunk + 1;
    const TileCoord next =
        tile_done && has_next ? tile_coord<G>(p, first + (tile_i + 1) * step) : cur;
    if (has_next) {  // stage ^ 1: its wgmmas (item j - 1) ended before the last barrier
      load_weights(p, smem_base + 4u * (stage ^ 1) * G::kStageFloats, next.ct, next_chunk);
      cp_async_commit();
      load_patch<G>(p, next, next_chunk, raw);
      store_patch<G>(p_stage(stage ^ 1), raw);
    }
    wgmma::wait_group<0>(sums);  // item j; outside the tile-end branch (see the pipeline above)
    if constexpr (kPromoted) {
#pragma unroll
      for (int i = 0; i < G::kAccs; ++i) acc[i] = chunk == 0 ? part[i] : acc[i] + part[i];
    }
    float* tile_red = red + (tile_i & 1) * kRedFloats;
    if (tile_done) epi.tile(p, cur, acc, tile_red);
    cp_async_wait<0>();
    wgmma::fence_operand_stores();
    __syncthreads();
    if (tile_done) epi.after_barrier(p, cur, tile_red);
    tile_i += tile_done ? 1 : 0;
    chunk = next_chunk;
    cur = next;
  }
#else
  (void)p, (void)epi;
  __trap();
#endif
}

// ---- host side ----

// One conv's plan on the kernel: setup() once (sizes, the split-weight buffer, the kernel's
// shared-memory attribute, the grid), run() per call (the weight split, then the conv). The
// caller names the same Epi and kPromoted in both. Owns the split weights; not copyable.
class Conv3x3Wgmma {
 public:
  // What a conv is: x (n, c_in, h, w), `pad` on both axes, the output rows x cols the tiles must
  // cover (those an epilogue reads: all of them, or L2_010's pooled ones), and whether the weight
  // is a ConvTranspose2d's (C_in, C_out, 3, 3), flipped (split_weight_kernel).
  struct Sizes {
    int n, c_in, c_out, h, w, pad, rows, cols;
    bool transposed_flipped;
  };

  Conv3x3Wgmma() = default;
  Conv3x3Wgmma(const Conv3x3Wgmma&) = delete;
  Conv3x3Wgmma& operator=(const Conv3x3Wgmma&) = delete;
  ~Conv3x3Wgmma() { KB_CUDA_WARN(cudaFree(w_split_)); }

  // Where its users take the kernel: from this many output columns (its tiles are 128 wide).
  // H200, session 19, on L2_010 (`kb bench L2_010 --dims ...`, both paths forced in one call, N
  // 16, C_in = C_out = 64, H 96): at W 40 and 64 the mma.sync path is 10% faster (0.136 / 0.137
  // against 0.152 ms), at W 96 wgmma by 30% (0.154 against 0.218 ms); at N 46, C_in 44, C_out 30,
  // 83 x 125 wgmma 0.296 against 0.536 ms.
  static constexpr int kMinWidth = 80;

  // The tiles' layout (tiles_h x tiles_w per (n, channel tile), Geometry<kPromoted>::kTileRows
  // rows each): what an epilogue's per-tile outputs are indexed by.
  const WgmmaArgs& args() const { return args_; }
  int tile_rows() const { return tile_rows_; }

  template <class Epi, bool kPromoted = false>
  Status setup(const Sizes& z) {
    using G = Geometry<kPromoted>;
    WgmmaArgs& a = args_;
    a.c_in = z.c_in, a.c_out = z.c_out, a.h = z.h, a.w = z.w, a.pad = z.pad;
    a.chunks = (z.c_in + kChunkCi - 1) / kChunkCi;
    a.co_tiles = (z.c_out + kTileCo - 1) / kTileCo;
    tile_rows_ = G::kTileRows;
    a.tiles_h = (z.rows + G::kTileRows - 1) / G::kTileRows;
    a.tiles_w = (z.cols + kTileCols - 1) / kTileCols;
    transposed_flipped_ = z.transposed_flipped;
    const int64_t tiles = int64_t{z.n} * a.co_tiles * a.tiles_h * a.tiles_w;
    const int64_t x_floats = int64_t{z.c_in} * z.h * z.w;
    if (tiles > 0x7fffffff || x_floats > 0x7fffffff)
      return Status::failed_precondition("conv3x3_wgmma: a size exceeds the int range");
    a.tiles_total = static_cast<int>(tiles);
    KB_CUDA_TRY(cudaFree(w_split_));
    w_split_ = nullptr;
    KB_CUDA_TRY(
        cudaMalloc(&w_split_, sizeof(float) * size_t(a.co_tiles) * a.chunks * kWStageFloats));
    KB_CUDA_TRY(cudaFuncSetAttribute(conv3x3_kernel<Epi, kPromoted>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, G::kSmemBytes));
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    grid_ = static_cast<unsigned>(std::min<int64_t>(tiles, sms));
    return Status::ok();
  }

  // conv(x, weight) into epi on `stream`; no tile at all (an empty output): nothing runs.
  template <class Epi, bool kPromoted = false>
  Status run(const float* x, const float* weight, const Epi& epi, cudaStream_t stream) const {
    WgmmaArgs a = args_;
    a.x = x;
    a.w_split = w_split_;
    constexpr int kPrepThreads = 256;
    const int prep_items = a.co_tiles * a.chunks * kTaps * kChunkCi * kTileCo;
    split_weight_kernel<<<(prep_items + kPrepThreads - 1) / kPrepThreads, kPrepThreads, 0,
                          stream>>>(weight, w_split_, a.c_in, a.c_out, a.chunks, a.co_tiles,
                                    transposed_flipped_);
    KB_CUDA_TRY(cudaGetLastError());
    if (grid_ > 0) {
      conv3x3_kernel<Epi, kPromoted>
          <<<grid_, kThreads, Geometry<kPromoted>::kSmemBytes, stream>>>(a, epi);
      KB_CUDA_TRY(cudaGetLastError());
    }
    return Status::ok();
  }

 private:
  WgmmaArgs args_{};   // sizes; pointers are filled per call
  int tile_rows_ = 0;  // Geometry<kPromoted>::kTileRows of setup()
  bool transposed_flipped_ = false;
  float* w_split_ = nullptr;  // (co_tiles, chunks, kWStageFloats), refreshed per call
  unsigned grid_ = 0;         // persistent CTAs
};

}  // namespace kb::custom::conv3x3_wgmma
