// The 3xTF32 tile of the few-input-channel Conv3d (direct.cuh's Conv3d picks it when it fits;
// L2_021 runs it at D = 1 as a 2-D conv): an implicit GEMM on the tensor cores whose A operand is
// read straight from a shared-memory input patch, never im2col'd.
//
//   y[n, co, d, h, w] = sum_k A[(n, d, h, w), k] B[k, co],  k = ((c KD + kd) KH + kh) KW + kw,
//   A = x[n, c, d + kd - pd, h + kh - ph, w + kw - pw] (0 outside x), B = w[co, k];
//   K = C_in KD KH KW (81 / 315 / 216 for L1_054 / L1_060 / L2_007).
//   Channel chunks: K runs in chunks of cin_chunk input channels, one patch of the tile per chunk
//   (plan_launch picks the largest chunk that lets kMinBlocks blocks share a multiprocessor:
//   L2_007's C_in 8 as two chunks of 4, 98 KB of shared memory, against 155 KB whole and one block
//   per SM; L1_054, L1_060 and L2_021's preset run whole). A chunk's k (cin_chunk KD KH KW of them)
//   is padded to Kp = 8 ceil(k/8); a tail of 1 or 2 k past a multiple of 8 (k_mma) runs on FMAs
//   instead of a padded k8 step (L1_054: 80 on the tensor cores, 1 on FMAs; a padded step would
//   be 1/11 of its MMAs).
//
// Tile: 4 output rows x 64 output columns of one (n, d) x kBN channels (Conv3d: kBN = 64 for
// C_out > 32, 32 for 16 < C_out <= 32; L2_021 kBN = 32). 8 warps = 4 rows x 2 channel halves; a
// warp owns one output row (4 m16 tiles) x kBN / 2 channels. Persistent blocks: grid.y = the
// channel block, grid.x strides over the spatial tiles.
//
// Shared memory, per block:
//   bs    [chunks][Kp][kBN + 8] fp32 weights of the channel block, staged once (0 past a chunk's
//         k, C_in and C_out); the row stride is 8 mod 32 banks, so a B fragment load (lanes: 4 k
//         rows x 8 columns) is conflict-free. B is split into TF32 big + small at each fragment
//         load.
//   koff  [Kp] int: the patch offset of a chunk's k, (c KD + kd) kPlane + kh kRowStride + kw (c
//         counted in the chunk; the same for every chunk); k >= the chunk's k points at an
//         all-zero plane (a padded k then multiplies 0 by 0, never by a stray inf or NaN).
//   raw   the next stage's input patch (this tile's next chunk, or the next tile's first) as
//         fp32, filled by cp.async (zeros outside x) while this stage computes: planes (c, kd)
//         of kRowsIn rows x (64 + KW - 1) columns, rows padded to 16 bytes (kRawStride) so that
//         aligned rows copy 16 bytes at a time.
//   patch the current stage's patch split once into TF32 big and small halves (planes of
//         channels past C_in zero), two arrays of
//         (planes + the zero plane) x kPlane: an A fragment is 4 loads from each straight into
//         the registers the MMA takes (float2 pairs cost 8 register moves per fragment: ncu,
//         L2_021's tile), with no conversion in the K loop.
// A's m index is permuted so that a warp's fragment loads are conflict-free: m16 tile j of a warp
// holds the output columns {32 half + 4 g + j} (g = lane / 4: fragment rows g and g + 8 are
// half 0 and 1), and the patch strides are chosen so that consecutive k always step the offset
// by 1 mod 4 (kRowStride = KW mod 4, kPlane chosen likewise): the four k of a fragment land in
// four different residues mod 4 while 4 g covers the other bits. The same permutation gives each
// thread 4 consecutive output columns per (channel, half): 16- or 8-byte stores when aligned.
//
// Accuracy: 3xTF32 (small x big + big x small + big x big, small x small dropped) ~ fp32 per
// product; the tensor core truncates each MMA's sum toward zero, which over the Kp / 8 k8 steps
// (11 / 40 / 27 here, 3 MMAs each) costs at most a few ulp of the output beyond fp32 FMA, far
// inside 1e-4 (kernels/cores/tf32x3/mma.cuh explains the truncation; promotion is not needed at
// these K).
//
// Epilogues: per element (direct.cuh's concept, stored by store_fragment) or per warp fragment
// (FragmentEpilogue: stores and more, e.g. L2_021's GroupNorm sums).
// Thread safety: stateless device code; plan_launch sets a function attribute (call it from the
// thread that sets up, as Implementation::setup does).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/status.h"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::conv3d_direct::tf32 {

constexpr int kThreads = 256;
constexpr int kTileRows = 4;   // output rows per tile: one per warp row
constexpr int kTileCols = 64;  // output columns per tile
constexpr int kWarpsN = 2;     // warps across the channel block

// The patch geometry of a KD x KH x KW kernel (all compile-time).
template <int KD, int KH, int KW>
struct Patch {
  static constexpr int kRowsIn = kTileRows + KH - 1;
  static constexpr int kColsIn = kTileCols + KW - 1;
  // The smallest row stride >= kColsIn with kRowStride == KW (mod 4): a kh step moves the offset
  // by kRowStride - (KW - 1) == 1 (mod 4).
  static constexpr int kRowStride = kColsIn + ((KW - kColsIn) % 4 + 4) % 4;
  // The smallest plane stride >= kRowsIn kRowStride whose plane step, kPlane - (KH - 1)
  // kRowStride - (KW - 1), is 1 (mod 4).
  static constexpr int kPlaneMin = kRowsIn * kRowStride;
  static constexpr int kPlaneResidue = (((KH - 1) * kRowStride + KW) % 4 + 4) % 4;
  static constexpr int kPlane = kPlaneMin + ((kPlaneResidue - kPlaneMin) % 4 + 4) % 4;
  static_assert(kRowStride % 4 == KW % 4 && kRowStride >= kColsIn, "row stride");
  // raw's layout: rows of whole 16-byte chunks.
  static constexpr int kRawChunks = (kColsIn + 3) / 4;
  static constexpr int kRawStride = 4 * kRawChunks;
  static constexpr int kRawPlane = kRowsIn * kRawStride;
  static_assert((kPlane - (KH - 1) * kRowStride - (KW - 1)) % 4 == 1 && kPlane >= kPlaneMin,
                "plane stride");
};

struct Params {
  const float* x;  // (N, C_in, D, H, W)
  const float* w;  // (C_out, C_in, KD, KH, KW) as given
  float* y;        // (N, C_out, D', H', W')
  int batch, cin, cout;
  int in_d, in_h, in_w, out_d, out_h, out_w, pad_d, pad_h, pad_w;
  int cin_chunk, chunks;     // input channels per chunk (the last may hold fewer), chunks
  int k, kp;                 // k of one chunk (cin_chunk KD KH KW), padded to a multiple of 8
  int k_mma;                 // k below k_mma go to the tensor cores, the rest (<= 2) to FMAs
  int row_tiles, col_tiles;  // ceil(H' / 4), ceil(W' / 64)
  int64_t tiles;             // N D' row_tiles col_tiles
};

template <int KD, int KH, int KW, int kBN>
struct Layout {
  using P = Patch<KD, KH, KW>;
  static constexpr int kBStride = kBN + 8;
  static __host__ __device__ int planes(const Params& p) { return p.cin_chunk * KD; }
  static __host__ __device__ size_t b_bytes(const Params& p) {
    return sizeof(float) * size_t(p.chunks) * p.kp * kBStride;
  }
  static __host__ __device__ size_t koff_bytes(const Params& p) { return sizeof(int) * p.kp; }
  static __host__ __device__ size_t raw_bytes(const Params& p) {
    return sizeof(float) * size_t(planes(p)) * P::kRawPlane;
  }
  static __host__ __device__ size_t half_floats(const Params& p) {  // one half, + the zero plane
    return size_t(planes(p) + 1) * P::kPlane;
  }
  static __host__ __device__ size_t patch_bytes(const Params& p) {  // rounded: raw is 16-aligned
    return (2 * sizeof(float) * half_floats(p) + 15) / 16 * 16;
  }
  static __host__ __device__ size_t smem_bytes(const Params& p) {
    return patch_bytes(p) + b_bytes(p) + raw_bytes(p) + koff_bytes(p);
  }
};

struct Tile {
  int n, d, h0, w0;
};

// 32-bit index math (plan_launch refuses more than INT_MAX tiles): three 64-bit divisions per call
// were a few hundred instructions per tile.
__device__ __forceinline__ Tile tile_at(const Params& p, int t) {
  Tile r;
  const unsigned u = static_cast<unsigned>(t), cols = static_cast<unsigned>(p.col_tiles);
  const unsigned rows = static_cast<unsigned>(p.row_tiles), depth = static_cast<unsigned>(p.out_d);
  const unsigned a = u / cols, b = a / rows;
  r.w0 = static_cast<int>(u - a * cols) * kTileCols;
  r.h0 = static_cast<int>(a - b * rows) * kTileRows;
  r.d = static_cast<int>(b % depth);
  r.n = static_cast<int>(b / depth);
  return r;
}

// raw[plane][r][col] = x[n, c0 + c, d + kd - pd, h0 + r - ph, w0 + col - pw] (zero outside x) for
// the channels of chunk `chunk` (c0 = chunk cin_chunk, plane = c KD + kd), by cp.async. vec (W % 4
// == 0, pad_w % 4 == 0, x 16-byte aligned: every 16-byte chunk of a row is wholly inside or outside
// x): 16-byte copies, the block's threads over (row, chunk); else 4-byte copies, a warp per staged
// row, lanes along the columns.
template <int KD, int KH, int KW>
__device__ void stage_patch(const Params& p, const Tile& t, int chunk, uint32_t raw, bool vec,
                            int warp, int lane) {
  using P = Patch<KD, KH, KW>;
  const int c0 = chunk * p.cin_chunk;
  const int rows = min(p.cin_chunk, p.cin - c0) * KD * P::kRowsIn;
  const auto row_source = [&](int r, bool* row_in) {
    const int row = r % P::kRowsIn, plane = r / P::kRowsIn, c = c0 + plane / KD, kd = plane % KD;
    const int gd = t.d + kd - p.pad_d, gh = t.h0 + row - p.pad_h;
    *row_in = gd >= 0 && gd < p.in_d && gh >= 0 && gh < p.in_h;
    return *row_in ? p.x + ((int64_t{t.n} * p.cin + c) * p.in_d + gd) * int64_t{p.in_h} * p.in_w +
                         int64_t{gh} * p.in_w
                   : p.x;
  };
  if (vec) {
    for (int e = warp * 32 + lane; e < rows * P::kRawChunks; e += kThreads) {
      const int r = e / P::kRawChunks, chunk = e % P::kRawChunks;
      bool row_in;
      const float* src = row_source(r, &row_in);
      const int gw = t.w0 + 4 * chunk - p.pad_w;
      const bool ok = row_in && gw >= 0 && gw < p.in_w;
      tf32x3::cp_async_16(raw + 4u * static_cast<uint32_t>(r * P::kRawStride + 4 * chunk),
                          ok ? src + gw : p.x, ok);
    }
    return;
  }
  for (int r = warp; r < rows; r += kThreads / 32) {
    bool row_in;
    const float* src = row_source(r, &row_in);
    const uint32_t dst = raw + 4u * static_cast<uint32_t>(r * P::kRawStride);
    for (int col = lane; col < P::kColsIn; col += 32) {
      const int gw = t.w0 + col - p.pad_w;
      const bool ok = row_in && gw >= 0 && gw < p.in_w;
      tf32x3::cp_async_4(dst + 4u * col, ok ? src + gw : p.x, ok);
    }
  }
}

// One k8 step's B fragments of the warp's kNT n8 tiles, split into big and small TF32.
template <int kNT, int kBStride>
__device__ __forceinline__ void load_b(const float* bs, int s, int t, uint32_t (&big)[kNT][2],
                                       uint32_t (&small)[kNT][2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float* row = bs + (8 * s + t + 4 * i) * kBStride;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const tf32x3::SplitTf32 v = tf32x3::split_tf32(row[8 * nt]);
      big[nt][i] = v.big;
      small[nt][i] = v.small;
    }
  }
}

// What a warp's accumulators acc[j][nt][e] hold after the K loop: output row h of tile `tile`,
// channels co + 8 nt + 2 t + (e & 1) (g = lane / 4, t = lane % 4), columns
// tile.w0 + 32 (e >> 1) + 4 g + j. Columns past W' and channels past C_out hold garbage.
struct WarpFragment {
  Tile tile;
  int h, co, g, t;
};

// Stores 4 consecutive outputs of channel co, row f.h, columns f.tile.w0 + 32 half + 4 f.g + q
// (q < 4, those past W' dropped): one 16- or 8-byte store when aligned. kStreaming: evict-first
// (__stcs), for outputs nothing reads soon; else plain stores, which stay in L2 for a pass that
// follows.
template <bool kStreaming = true>
__device__ __forceinline__ void store_quad(const Params& p, const WarpFragment& f, int co, int half,
                                           const float (&v)[4]) {
  const auto put = [](auto* dst, auto value) {
    if constexpr (kStreaming) {
      __stcs(dst, value);
    } else {
      *dst = value;
    }
  };
  const Tile& tl = f.tile;
  float* row = p.y + ((int64_t{tl.n} * p.cout + co) * p.out_d + tl.d) * p.out_h * p.out_w +
               int64_t{f.h} * p.out_w;
  const int w = tl.w0 + 32 * half + 4 * f.g;
  float* dst = row + w;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
  if (w + 3 < p.out_w && (addr & 15) == 0) {
    put(reinterpret_cast<float4*>(dst), make_float4(v[0], v[1], v[2], v[3]));
  } else if (w + 3 < p.out_w && (addr & 7) == 0) {
    put(reinterpret_cast<float2*>(dst), make_float2(v[0], v[1]));
    put(reinterpret_cast<float2*>(dst + 2), make_float2(v[2], v[3]));
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (w + q < p.out_w) put(dst + q, v[q]);
  }
}

// An epilogue that takes the whole fragment (stores and anything else, e.g. statistics) declares
// `static constexpr bool kFragment = true` and a member
// `template <int kNT> __device__ void fragment(const Params&, const WarpFragment&,
// const float (&acc)[4][kNT][4])`. Any other epilogue follows direct.cuh's per-element concept,
// epilogue.channel(co)(value), and store_fragment writes it.
template <class E>
concept FragmentEpilogue = requires {
  requires E::kFragment;
};

// Writes a fragment through a per-element epilogue: thread (g, t) holds, per n8 tile, channel
// parity e and half, the outputs at columns 32 half + 4 g + {0, 1, 2, 3} of row h: c0/c1 (half 0)
// and c2/c3 (half 1), stored 16 or 8 bytes at a time when aligned.
template <int kNT, class Epilogue>
__device__ __forceinline__ void store_fragment(const Params& p, const WarpFragment& f,
                                               const float (&acc)[4][kNT][4],
                                               const Epilogue& epilogue) {
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int co = f.co + 8 * nt + 2 * f.t + e;
      if (co >= p.cout) continue;
      const auto fn = epilogue.channel(co);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float v[4] = {fn(acc[0][nt][2 * half + e]), fn(acc[1][nt][2 * half + e]),
                            fn(acc[2][nt][2 * half + e]), fn(acc[3][nt][2 * half + e])};
        store_quad(p, f, co, half, v);
      }
    }
}

// The tile kernel. Epilogue: a FragmentEpilogue, or direct.cuh's per-element concept.
// kMinBlocks: blocks per multiprocessor that the register allocation must allow (<= 128 registers
// for 2; a bound of 1 lets ptxas take ~130 for L1_054's tile, one block per SM and 2-5% slower).
template <int KD, int KH, int KW, int kBN, class Epilogue, int kMinBlocks = 2>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    conv3d_tf32x3_kernel(Params p, Epilogue epilogue) {
  using P = Patch<KD, KH, KW>;
  using L = Layout<KD, KH, KW, kBN>;
  constexpr int kNT = kBN / kWarpsN / 8;  // n8 tiles per warp
  extern __shared__ __align__(16) unsigned char smem[];
  float* big = reinterpret_cast<float*>(smem);  // the patch's TF32 big halves, then the small
  float* small = big + L::half_floats(p);
  float* bs = reinterpret_cast<float*>(smem + L::patch_bytes(p));
  float* raw = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(bs) + L::b_bytes(p));
  int* koff = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(raw) + L::raw_bytes(p));
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(raw));

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wr = warp / kWarpsN, wn = warp % kWarpsN;  // output row in the tile, channel half
  const int co0 = static_cast<int>(blockIdx.y) * kBN;
  const int planes = L::planes(p);
  const bool vec = p.in_w % 4 == 0 && p.pad_w % 4 == 0 &&
                   (reinterpret_cast<uintptr_t>(p.x) & 15) == 0;  // tile w0 % 64 == 0

  // The block's stages: (tile, chunk), chunk fastest; raw is filled one stage ahead.
  const int tiles = static_cast<int>(p.tiles);
  int tile = static_cast<int>(blockIdx.x), chunk = 0;
  if (tile < tiles) stage_patch<KD, KH, KW>(p, tile_at(p, tile), 0, raw_addr, vec, warp, lane);
  tf32x3::cp_async_commit();

  // Once per block: the weights of the channel block (every chunk), the k offsets, the zero plane.
  const int k_total = p.cin * KD * KH * KW, kp_all = p.chunks * p.kp;
  for (int e = tid; e < kp_all * kBN; e += kThreads) {
    const int ka = e % kp_all, n = e / kp_all, co = co0 + n;  // k fastest: coalesced reads of w
    const int kk = ka % p.kp, kx = ka / p.kp * p.k + kk;      // kx: the k of w
    bs[ka * L::kBStride + n] =
        kk < p.k && kx < k_total && co < p.cout ? p.w[int64_t{co} * k_total + kx] : 0.0f;
  }
  for (int k = tid; k < p.kp; k += kThreads) {
    int off = planes * P::kPlane;  // the zero plane
    if (k < p.k) {
      const int kw = k % KW, kh = (k / KW) % KH, plane = k / (KW * KH);
      off = plane * P::kPlane + kh * P::kRowStride + kw;
    }
    koff[k] = off;
  }
  for (int e = tid; e < P::kPlane; e += kThreads)
    big[planes * P::kPlane + e] = small[planes * P::kPlane + e] = 0.0f;

  const int a_base = wr * P::kRowStride + 4 * g;
  float acc[4][kNT][4];  // the tile's sums, over its chunks
  while (tile < tiles) {
    tf32x3::cp_async_wait<0>();
    __syncthreads();  // raw holds this stage; every warp is done with the previous patch
    // raw (rows of kRawStride) -> big / small (rows of kRowStride), a 16-byte chunk per step;
    // the planes of channels past C_in (a short last chunk) are zeros, never stale values.
    const int staged_rows = min(p.cin_chunk, p.cin - chunk * p.cin_chunk) * KD * P::kRowsIn;
    for (int e = tid; e < planes * P::kRowsIn * P::kRawChunks; e += kThreads) {
      const int r = e / P::kRawChunks, col = 4 * (e % P::kRawChunks);  // r = plane kRowsIn + row
      const float4 v = r < staged_rows ? reinterpret_cast<const float4*>(raw)[e]
                                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const float vals[4] = {v.x, v.y, v.z, v.w};
      const int dst = (r / P::kRowsIn) * P::kPlane + (r % P::kRowsIn) * P::kRowStride + col;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (col + i >= P::kColsIn) break;  // the chunk's padding
        const tf32x3::SplitTf32 sv = tf32x3::split_tf32(vals[i]);
        big[dst + i] = __uint_as_float(sv.big);
        small[dst + i] = __uint_as_float(sv.small);
      }
    }
    __syncthreads();  // patch is ready and raw is free
    const int this_tile = tile, this_chunk = chunk;
    if (++chunk == p.chunks) chunk = 0, tile += static_cast<int>(gridDim.x);
    if (tile < tiles)
      stage_patch<KD, KH, KW>(p, tile_at(p, tile), chunk, raw_addr, vec, warp, lane);
    tf32x3::cp_async_commit();

    // A warp whose output row is past H' (the last row tile of L1_054's 62 rows) or whose
    // channels are past C_out has nothing to store: it skips to the next stage's barrier and
    // leaves the tensor cores to the other warps (no barrier until then).
    const Tile tl = tile_at(p, this_tile);
    const int h = tl.h0 + wr;
    if (h >= p.out_h || co0 + wn * (kBN / kWarpsN) >= p.cout) continue;

    if (this_chunk == 0) {
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[j][nt][e] = 0.0f;
    }

    const float* bs_chunk = bs + this_chunk * p.kp * L::kBStride;
    const float* b_warp = bs_chunk + wn * (kBN / kWarpsN) + g;
    // (Loading the next step's k offsets and B values one step ahead measured slower: L2_007
    // 3.03 -> 3.12 ms, L1_060 2.43 -> 2.57 ms, session 13.)
#pragma unroll 1
    for (int s = 0; s < p.k_mma / 8; ++s) {
      uint32_t b_big[kNT][2], b_small[kNT][2];
      load_b<kNT, L::kBStride>(b_warp, s, t, b_big, b_small);
      const int lo = a_base + koff[8 * s + t];      // k = t
      const int hi = a_base + koff[8 * s + t + 4];  // k = t + 4
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        // rows g (half 0: column 4 g + j) and g + 8 (half 1: column 32 + 4 g + j)
        const uint32_t a_big[4] = {__float_as_uint(big[lo + j]), __float_as_uint(big[lo + 32 + j]),
                                   __float_as_uint(big[hi + j]), __float_as_uint(big[hi + 32 + j])};
        const uint32_t a_small[4] = {
            __float_as_uint(small[lo + j]), __float_as_uint(small[lo + 32 + j]),
            __float_as_uint(small[hi + j]), __float_as_uint(small[hi + 32 + j])};
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
          tf32x3::mma_tf32(acc[j][nt], a_small, b_big[nt][0], b_big[nt][1]);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
          tf32x3::mma_tf32(acc[j][nt], a_big, b_small[nt][0], b_small[nt][1]);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
          tf32x3::mma_tf32(acc[j][nt], a_big, b_big[nt][0], b_big[nt][1]);
      }
    }

    // The K tail on the FMA pipe (a chunk's k = 8 q + 1 or 2: L1_054's 81): a padded k8 step
    // would be 48 MMAs per warp for one or two real k; these are 64 FMAs per k with the
    // accumulator layout's own operands: rows g / g + 8 of m16 tile j (patch, big + small, which
    // is what 3xTF32 multiplies) and columns 2 t, 2 t + 1 of each n8 tile (the fp32 weights).
    for (int k = p.k_mma; k < p.k; ++k) {
      const int a_k = a_base + koff[k];
      const float* b_k = bs_chunk + k * L::kBStride + wn * (kBN / kWarpsN) + 2 * t;
      float a[4][2], b[kNT][2];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        a[j][0] = big[a_k + j] + small[a_k + j];
        a[j][1] = big[a_k + 32 + j] + small[a_k + 32 + j];
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) b[nt][0] = b_k[8 * nt], b[nt][1] = b_k[8 * nt + 1];
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            acc[j][nt][e] = fmaf(a[j][e >> 1], b[nt][e & 1], acc[j][nt][e]);
    }
    if (this_chunk != p.chunks - 1) continue;

    const WarpFragment frag{tl, h, co0 + wn * (kBN / kWarpsN), g, t};
    if constexpr (FragmentEpilogue<Epilogue>) {
      epilogue.fragment(p, frag, acc);
    } else {
      store_fragment(p, frag, acc, epilogue);
    }
  }
  tf32x3::cp_async_wait<0>();  // nothing in flight at exit
}

// ---- Host side: the launch of a geometry ----

// Sets p's channel chunks to `cin_chunk` input channels each, with their k, kp and k_mma.
template <int KD, int KH, int KW>
void set_chunks(Params& p, int cin_chunk) {
  p.cin_chunk = cin_chunk;
  p.chunks = (p.cin + cin_chunk - 1) / cin_chunk;
  p.k = cin_chunk * KD * KH * KW;
  p.kp = (p.k + 7) / 8 * 8;
  // A tail of 1 or 2 runs on FMAs; a longer one as a padded k8 step.
  p.k_mma = p.k % 8 <= 2 ? p.k / 8 * 8 : p.kp;
}

// Fills p's derived fields (one chunk of all C_in, row_tiles, col_tiles, tiles) from its sizes;
// plan_launch may split C_in into chunks.
template <int KD, int KH, int KW>
void derive_params(Params& p) {
  set_chunks<KD, KH, KW>(p, p.cin);
  p.row_tiles = (p.out_h + kTileRows - 1) / kTileRows;
  p.col_tiles = (p.out_w + kTileCols - 1) / kTileCols;
  p.tiles = int64_t{p.batch} * p.out_d * p.row_tiles * p.col_tiles;
}

struct Launch {
  dim3 grid;    // (persistent spatial blocks, channel blocks of kBN)
  size_t smem;  // dynamic shared memory per block
};

// The persistent launch of conv3d_tf32x3_kernel<KD, KH, KW, kBN, Epilogue, kMinBlocks> for p
// (derive_params done): every block resident at once, the kernel's shared-memory limit raised.
// Chunks C_in (p's chunk fields) when the whole patch would keep kMinBlocks blocks from sharing a
// multiprocessor and a smaller chunk lets them. nullopt when the patch and weights do not fit in
// one block's shared memory, or past INT_MAX tiles.
template <int KD, int KH, int KW, int kBN, class Epilogue, int kMinBlocks = 2>
Result<std::optional<Launch>> plan_launch(Params& p) {
  using L = Layout<KD, KH, KW, kBN>;
  // The kernel's tile index is an int, and tile + gridDim.x (a few hundred blocks) must not wrap.
  if (p.tiles > std::numeric_limits<int>::max() - 65536) return std::optional<Launch>();
  KB_ASSIGN_OR_RETURN(const int optin,
                      cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
  KB_ASSIGN_OR_RETURN(const int per_sm,
                      cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  KB_ASSIGN_OR_RETURN(const int reserved,
                      cuda::device_attribute(cudaDevAttrReservedSharedMemoryPerBlock));
  const size_t shared_budget = static_cast<size_t>(per_sm / kMinBlocks - reserved);
  if (L::smem_bytes(p) > shared_budget) {
    for (int c = p.cin - 1; c >= 1; --c) {  // the largest chunk that fits, if any
      Params chunked = p;
      set_chunks<KD, KH, KW>(chunked, c);
      if (L::smem_bytes(chunked) <= shared_budget) {
        p = chunked;
        break;
      }
    }
  }
  const size_t smem = L::smem_bytes(p);
  if (smem > static_cast<size_t>(optin)) return std::optional<Launch>();
  const void* kernel =
      reinterpret_cast<const void*>(conv3d_tf32x3_kernel<KD, KH, KW, kBN, Epilogue, kMinBlocks>);
  KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem)));
  KB_ASSIGN_OR_RETURN(const int64_t resident, cuda::resident_blocks(kernel, kThreads, smem));
  const int co_blocks = (p.cout + kBN - 1) / kBN;
  const int64_t per_block = std::max<int64_t>(1, resident / co_blocks);
  return std::optional<Launch>(
      Launch{dim3(static_cast<unsigned>(std::min<int64_t>(p.tiles, per_block)),
                  static_cast<unsigned>(co_blocks)),
             smem});
}

}  // namespace kb::custom::conv3d_direct::tf32
