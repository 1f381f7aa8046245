// 3x3 / stride 1 / padding 1 convolution + 2x2 max pool + bias + clamp + per-tile channel sums,
// 3xTF32 on mma.sync m16n8k8, with the input patch staged (and split) once in shared memory:
// L2_010's fast path (ConvTranspose2d k3 s1 p1 == conv2d with the flipped weight, pad 1) for
// images under 80 columns or where no sm_90a code is loaded (else conv3x3_pool_wgmma.cuh).
//   conv: y[n][co][oh][ow] = sum_{ci,kh,kw} w'[co][ci][kh][kw] * x[n][ci][oh-1+kh][ow-1+kw]
//   x: (N, C_in, H, W) fp32 NCHW, zero outside; Hp = H/2, Wp = W/2 (floor mode).
//   partial[n][co][tile] = sum over the tile's pooling windows of clamp(max4(y) + bias, lo, hi)
//
// Why not the im2col core (conv2d_pool_core.cuh): there every im2col element is gathered with its
// own 4-byte cp.async (9 copies of each input value) and every warp re-splits A and B into big +
// small after each shared load: ~5 instructions per MMA. Here
//   - a CTA tile is 64 channels x 16 x 16 output pixels; per stage it holds 8 input channels of
//     the 18 x 18 input patch (halo included), loaded once to registers, split into TF32
//     big + small once, and stored as float4 (big[ci], small[ci], big[ci+4], small[ci+4]) so one
//     LDS.128 is a thread's (b0, b1) in both parts; the 9 taps read it at shifted addresses;
//   - the weights are flipped, split and laid out in fragment order once per call
//     (split_weight_kernel, 64 co x 576 k x 2 floats per channel tile), so one LDS.128 is a
//     thread's a0..a3 of one part, and a stage's weights are one contiguous 36 KB cp.async copy;
//   - the mainloop is then per tap and warp: 8 + 4 LDS.128 for 48 MMAs, no split, no gather.
// k order inside a stage: k8 step = tap (kh, kw); MMA k index t / t + 4 = input channel t / t + 4
// of the stage's 8. 8 warps; warp w owns output rows 2w, 2w + 1 of the tile x 16 columns x all 64
// channels (4 x 4 m16n8 tiles); n-tile nt is row 2w + (nt & 1), columns 8 (nt >> 1) + 0..7, so a
// thread's C values (columns 2t, 2t + 1 of n-tiles 2 nb, 2 nb + 1) are the whole 2x2 window
// (w, 4 nb + t) of the pooled tile. Persistent CTAs (one per SM, 118 KB of shared memory) walk
// tiles blockIdx.x + i * gridDim.x; (tile, 8-channel chunk) items are double-buffered: while
// item j computes, item j + 1's weights stream by cp.async and its patch sits in registers.
// Sums are fixed-order (shuffle tree, then warps 0..7): deterministic.
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/conv3x3_patch/patch_loads.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::conv3x3_pool_patch {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::SplitTf32;

constexpr int kKernel = 3;  // 3x3, stride 1, conv padding 1
constexpr int kTaps = kKernel * kKernel;
constexpr int kTileCo = 64;    // output channels per tile (C_out = 64 in L2_010)
constexpr int kTileRows = 16;  // output rows per tile
constexpr int kTileCols = 16;  // output columns per tile
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kWarpRows = kTileRows / kWarps;  // 2: one row of pooling windows per warp
constexpr int kChunkCi = 8;                    // input channels per stage: one k8 step per tap
constexpr int kMmaTilesM = kTileCo / 16;       // 4
constexpr int kMmaTilesN = 4;                  // 2 rows x 2 column groups of 8
constexpr int kPatchRows = kTileRows + kKernel - 1;  // 18
constexpr int kPatchCols = kTileCols + kKernel - 1;  // 18
constexpr int kPatchPositions = kPatchRows * kPatchCols;
// One plane per channel pair (c, c + 4), in float4 units; 330 = 2 (mod 8) puts the 4 planes of a
// quarter warp's (t = 0..3, two consecutive columns) loads on 8 distinct 16-byte bank groups.
constexpr int kPlaneQuads = 330;
constexpr int kPlanes = kChunkCi / 2;
constexpr int kFragFloats = 32 * 4;  // one part (big or small) of one m-tile's A fragments
constexpr int kATapFloats = kMmaTilesM * 2 * kFragFloats;  // 1024
constexpr int kAStageFloats = kTaps * kATapFloats;         // 9216 (36 KB)
constexpr int kBStageFloats = kPlanes * kPlaneQuads * 4;   // 5280 (20.6 KB)
constexpr int kStageFloats = kAStageFloats + kBStageFloats;
constexpr int kStages = 2;
constexpr int kRedFloats = kWarps * kTileCo;  // per-warp channel sums of one tile
constexpr int kRedBuffers = 2;                // by tile parity: no barrier between write and reuse
constexpr int kSmemBytes = (kStages * kStageFloats + kRedBuffers * kRedFloats) * 4;  // 120,064
constexpr int kPatchSlots = (kPatchPositions + kThreads - 1) / kThreads;  // 2 positions per thread

static_assert(kWarpRows == 2, "a warp owns one row of pooling windows");
static_assert(kTileCols == 2 * 8, "two column groups of 8 = one n-tile width each");
static_assert(kMmaTilesN == 2 * (kTileCols / 8), "n-tiles: 2 rows x column groups");
static_assert(kChunkCi == 8, "one MMA k8 step per tap");
static_assert(kPlaneQuads >= kPatchPositions && kPlaneQuads % 8 == 2, "plane size and banks");
static_assert(kAStageFloats % (4 * kThreads) == 0, "weights: whole 16-byte copies per thread");
static_assert(kTileCo <= kThreads, "one thread per channel in the final tile sum");
static_assert(kSmemBytes + 1024 <= 227 * 1024, "one CTA per SM");

// ---- index maps (host + device, so a host emulation can check them) ----

// Weight buffer, per (channel tile, chunk): [tap][mt][part][lane][e], part 0 = big, 1 = small;
// e = 0..3 is the m16n8k8 A fragment a0..a3 = A(g, t), A(g + 8, t), A(g, t + 4), A(g + 8, t + 4)
// with g = lane / 4, t = lane % 4, row = channel within the m-tile, column = input channel.
__host__ __device__ constexpr int a_frag_offset(int tap, int mt, int part) {
  return ((tap * kMmaTilesM + mt) * 2 + part) * kFragFloats;
}
struct WeightSlot {
  int co, ci, tap;  // tile-relative channel, chunk-relative input channel, tap
};
// Inverse of the layout: which weight sits at float f (< kAStageFloats, part 0) of a stage.
__host__ __device__ constexpr WeightSlot weight_slot(int f) {
  const int e = f & 3, lane = (f >> 2) & 31, mt = (f >> 8) % kMmaTilesM,
            tap = (f >> 8) / kMmaTilesM;
  return {mt * 16 + (lane >> 2) + 8 * (e & 1), (lane & 3) + 4 * (e >> 1), tap};
}
// Patch: float4 unit of (channel pair plane, patch row, patch column).
__host__ __device__ constexpr int patch_quad(int plane, int row, int col) {
  return plane * kPlaneQuads + row * kPatchCols + col;
}
// Tile pixel (row, column) of B column g of n-tile nt in warp w.
__host__ __device__ constexpr int b_pixel_row(int warp, int nt) {
  return kWarpRows * warp + (nt & 1);
}
__host__ __device__ constexpr int b_pixel_col(int nt, int g) {
  return 8 * (nt >> 1) + g;
}

// ---- per-call weight preparation ----

// w_split[ct][chunk][stage layout above] from weight (C_in, C_out, 3, 3), flipped: the conv
// weight is w'[co][ci][kh][kw] = weight[ci][co][2 - kh][2 - kw]; zero past C_in / C_out.
__global__ void split_weight_kernel(const float* __restrict__ weight, float* __restrict__ w_split,
                                    int c_in, int c_out, int chunks, int co_tiles) {
  const int64_t total = int64_t{co_tiles} * chunks * (kAStageFloats / 2);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t block = i / (kAStageFloats / 2);  // ct * chunks + chunk
    const int r = static_cast<int>(i % (kAStageFloats / 2));
    const int f = (r >> 7) * 2 * kFragFloats + (r & (kFragFloats - 1));  // part-0 float of r
    const WeightSlot s = weight_slot(f);
    const int co = static_cast<int>(block / chunks) * kTileCo + s.co;
    const int ci = static_cast<int>(block % chunks) * kChunkCi + s.ci;
    const int kh = s.tap / kKernel, kw = s.tap % kKernel;
    const float v =
        co < c_out && ci < c_in
            ? weight[((int64_t{ci} * c_out + co) * kKernel + (kKernel - 1 - kh)) * kKernel +
                     (kKernel - 1 - kw)]
            : 0.0f;
    const SplitTf32 sp = split_tf32(v);
    float* dst = w_split + block * kAStageFloats + f;
    dst[0] = __uint_as_float(sp.big);
    dst[kFragFloats] = __uint_as_float(sp.small);
  }
}

// ---- the fused kernel ----

// Sizes validated by the host: C_in*H*W and the tile count fit int.
struct PatchArgs {
  const float* x;        // (N, C_in, H, W)
  const float* w_split;  // (co_tiles, chunks, kAStageFloats), from split_weight_kernel
  const float* bias;     // (C_out)
  float* partial;        // (N, C_out, tiles_h * tiles_w)
  int c_in, c_out, h, w, hp, wp;
  int chunks, co_tiles, tiles_h, tiles_w, tiles_total;
  float lo, hi;
};

// Tile index = ((n * co_tiles + ct) * tiles_h + th) * tiles_w + tw.
struct TileCoord {
  int n, ct, r0, c0, slot;  // slot = th * tiles_w + tw: the tile's column in partial
};
__device__ __forceinline__ TileCoord tile_coord(const PatchArgs& p, int tile) {
  const int per_plane = p.tiles_h * p.tiles_w;
  const int slot = tile % per_plane, rest = tile / per_plane;
  return {rest / p.co_tiles, rest % p.co_tiles, slot / p.tiles_w * kTileRows,
          slot % p.tiles_w * kTileCols, slot};
}

using Acc = float[kMmaTilesM][kMmaTilesN][4];
using PatchRegs = float[kPatchSlots][kChunkCi];  // this thread's patch positions x 8 channels

// Patch position s of this thread: tid + s * kThreads (row-major in the 18 x 18 patch).
// raw[s][c] = x[n][ci0 + c][r0 - 1 + row][c0 - 1 + col], 0 outside the image or past C_in.
__device__ __forceinline__ void load_patch(const PatchArgs& p, const TileCoord& tc, int chunk,
                                           PatchRegs& raw) {
  conv3x3_patch::load_patch<kPatchCols, kPatchPositions, kThreads>(
      p.x, tc.n, p.c_in, chunk * kChunkCi, p.h, p.w, tc.r0 - 1, tc.c0 - 1, raw);
}
// Splits the registers and stores plane c: float4 (big[c], small[c], big[c+4], small[c+4]).
__device__ __forceinline__ void store_patch(float* b_stage, const PatchRegs& raw) {
#pragma unroll
  for (int s = 0; s < kPatchSlots; ++s) {
    const int pos = threadIdx.x + s * kThreads;
    if (pos >= kPatchPositions) continue;
#pragma unroll
    for (int c = 0; c < kPlanes; ++c) {
      const SplitTf32 lo = split_tf32(raw[s][c]), hi = split_tf32(raw[s][c + kPlanes]);
      *reinterpret_cast<float4*>(b_stage + 4 * (c * kPlaneQuads + pos)) =
          make_float4(__uint_as_float(lo.big), __uint_as_float(lo.small), __uint_as_float(hi.big),
                      __uint_as_float(hi.small));
    }
  }
}
// One stage's weights: a contiguous copy of w_split[ct][chunk].
__device__ __forceinline__ void load_weights(const PatchArgs& p, uint32_t a_stage, int ct,
                                             int chunk) {
  conv3x3_patch::copy_stage<kAStageFloats, kThreads>(
      p.w_split + (int64_t{ct} * p.chunks + chunk) * kAStageFloats, a_stage);
}

__device__ __forceinline__ uint4 lds128(const float* p) {
  return *reinterpret_cast<const uint4*>(p);
}

// acc += 3xTF32 product of one stage (8 input channels x 9 taps). a: stage + lane * 4;
// b: B part of the stage + 4 * patch_quad(t, 2 w, g).
__device__ __forceinline__ void mma_stage(const float* a, const float* b, Acc& acc) {
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap) {
    const int kh = tap / kKernel, kw = tap % kKernel;
    uint32_t a_big[kMmaTilesM][4], a_small[kMmaTilesM][4], b_big[kMmaTilesN][2],
        b_small[kMmaTilesN][2];
#pragma unroll
    for (int mt = 0; mt < kMmaTilesM; ++mt) {
      const uint4 big = lds128(a + a_frag_offset(tap, mt, 0));
      const uint4 small = lds128(a + a_frag_offset(tap, mt, 1));
      a_big[mt][0] = big.x, a_big[mt][1] = big.y, a_big[mt][2] = big.z, a_big[mt][3] = big.w;
      a_small[mt][0] = small.x, a_small[mt][1] = small.y, a_small[mt][2] = small.z,
      a_small[mt][3] = small.w;
    }
#pragma unroll
    for (int nt = 0; nt < kMmaTilesN; ++nt) {
      const uint4 v = lds128(b + 4 * patch_quad(0, (nt & 1) + kh, 8 * (nt >> 1) + kw));
      b_big[nt][0] = v.x, b_small[nt][0] = v.y, b_big[nt][1] = v.z, b_small[nt][1] = v.w;
    }
    // Small terms first; each accumulator is 16 MMAs away from its previous update.
#pragma unroll
    for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
      for (int nt = 0; nt < kMmaTilesN; ++nt)
        mma_tf32(acc[mt][nt], a_small[mt], b_big[nt][0], b_big[nt][1]);
#pragma unroll
    for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
      for (int nt = 0; nt < kMmaTilesN; ++nt)
        mma_tf32(acc[mt][nt], a_big[mt], b_small[nt][0], b_small[nt][1]);
#pragma unroll
    for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
      for (int nt = 0; nt < kMmaTilesN; ++nt)
        mma_tf32(acc[mt][nt], a_big[mt], b_big[nt][0], b_big[nt][1]);
  }
}

// Per warp: red[warp][co] = sum over the warp's windows (row w, columns 0..7 of the pooled tile)
// of clamp(max4 + bias, lo, hi); then zeroes acc for the next tile.
__device__ __forceinline__ void pool_warp_sums(const PatchArgs& p, const TileCoord& tc, Acc& acc,
                                               float* red, int warp, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const bool row_ok = tc.r0 / 2 + warp < p.hp;
  bool win_ok[2];
#pragma unroll
  for (int nb = 0; nb < 2; ++nb) win_ok[nb] = row_ok && tc.c0 / 2 + 4 * nb + t < p.wp;
#pragma unroll
  for (int mt = 0; mt < kMmaTilesM; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int co = tc.ct * kTileCo + mt * 16 + half * 8 + g;
      const float bias = co < p.c_out ? __ldg(p.bias + co) : 0.0f;
      float s = 0.0f;
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {  // n-tiles 2 nb (row 0), 2 nb + 1 (row 1); columns 2t, 2t+1
        const float* top = acc[mt][2 * nb];
        const float* bottom = acc[mt][2 * nb + 1];
        const int e = 2 * half;
        const float m = fmaxf(fmaxf(top[e], top[e + 1]), fmaxf(bottom[e], bottom[e + 1])) + bias;
        if (win_ok[nb]) s += fminf(fmaxf(m, p.lo), p.hi);
      }
      s += __shfl_xor_sync(0xffffffffu, s, 1);  // the 4 lanes (t) of a channel row
      s += __shfl_xor_sync(0xffffffffu, s, 2);
      if (t == 0) red[warp * kTileCo + mt * 16 + half * 8 + g] = s;
    }
  tf32x3::zero_accumulators(acc);
}
// After the barrier: partial[n][co][slot] = sum over warps 0..7 (in order) of red[w][co].
__device__ __forceinline__ void write_tile_sum(const PatchArgs& p, const TileCoord& tc,
                                               const float* red) {
  const int row = threadIdx.x, co = tc.ct * kTileCo + row;
  if (row >= kTileCo || co >= p.c_out) return;
  float s = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) s += red[w * kTileCo + row];
  p.partial[(int64_t{tc.n} * p.c_out + co) * (p.tiles_h * p.tiles_w) + tc.slot] = s;
}

// Grid: persistent, gridDim.x <= tiles_total; block: kThreads; dynamic shared memory kSmemBytes.
__global__ void __launch_bounds__(kThreads, 1) conv3x3_pool_kernel(const PatchArgs p) {
  extern __shared__ __align__(16) float smem[];
  float* red = smem + kStages * kStageFloats;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);
  const int items = (p.tiles_total - first + step - 1) / step * p.chunks;  // (tile, chunk) pairs
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const auto a_stage = [&](int stage) { return smem_base + 4u * stage * kStageFloats; };
  const auto b_stage = [&](int stage) { return smem + stage * kStageFloats + kAStageFloats; };
  const int a_lane = 4 * lane;
  const int b_lane = 4 * patch_quad(lane & 3, kWarpRows * warp, lane >> 2);

  TileCoord cur = tile_coord(p, first);
  PatchRegs raw;
  load_weights(p, a_stage(0), cur.ct, 0);
  cp_async_commit();
  load_patch(p, cur, 0, raw);
  store_patch(b_stage(0), raw);
  cp_async_wait<0>();
  __syncthreads();

  Acc acc;
  tf32x3::zero_accumulators(acc);

  int chunk = 0, tile_i = 0;  // item j = (tile first + tile_i * step, chunk)
  for (int j = 0; j < items; ++j) {
    const int stage = j & 1;
    const bool tile_done = chunk + 1 == p.chunks, has_next = j + 1 < items;
    const int next_chunk = tile_done ? 0 : chunk + 1;
    const TileCoord next = tile_done && has_next ? tile_coord(p, first + (tile_i + 1) * step) : cur;
    if (has_next) {  // stage ^ 1 was last read in item j - 1, before the barrier that ended it
      load_weights(p, a_stage(stage ^ 1), next.ct, next_chunk);
      load_patch(p, next, next_chunk, raw);
    }
    cp_async_commit();
    mma_stage(smem + stage * kStageFloats + a_lane, b_stage(stage) + b_lane, acc);
    float* tile_red = red + (tile_i & 1) * kRedFloats;
    if (tile_done) pool_warp_sums(p, cur, acc, tile_red, warp, lane);
    if (has_next) store_patch(b_stage(stage ^ 1), raw);
    cp_async_wait<0>();
    __syncthreads();
    if (tile_done) write_tile_sum(p, cur, tile_red);
    tile_i += tile_done ? 1 : 0;
    chunk = next_chunk;
    cur = next;
  }
}

}  // namespace kb::custom::conv3x3_pool_patch
