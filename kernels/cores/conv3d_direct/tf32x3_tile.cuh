// The 3xTF32 tile of the few-input-channel Conv3d (direct.cuh's Conv3d picks it when it fits):
// an implicit GEMM on the tensor cores whose A operand is read straight from a shared-memory
// input patch, never im2col'd.
//
//   y[n, co, d, h, w] = sum_k A[(n, d, h, w), k] B[k, co],  k = ((c KD + kd) KH + kh) KW + kw,
//   A = x[n, c, d + kd - pd, h + kh - ph, w + kw - pw] (0 outside x), B = w[co, k];
//   K = C_in KD KH KW (81 / 315 / 216 for L1_054 / L1_060 / L2_007), padded to Kp = 8 ceil(K/8).
//   A tail of 1 or 2 k past a multiple of 8 (k_mma) runs on FMAs instead of a padded k8 step
//   (L1_054: 80 on the tensor cores, 1 on FMAs; a padded step would be 1/11 of its MMAs).
//
// Tile: 4 output rows x 64 output columns of one (n, d) x kBN channels (Conv3d instantiates kBN =
// 64 and takes this tile only for C_out > 32). 8 warps = 4 rows x 2 channel halves; a warp owns one
// output row (4 m16 tiles) x kBN / 2 channels. Persistent blocks: grid.y = the channel block,
// grid.x strides over the spatial tiles.
//
// Shared memory, per block:
//   bs    [Kp][kBN + 8] fp32 weights of the channel block, staged once (0 past K and C_out); the
//         row stride is 8 mod 32 banks, so a B fragment load (lanes: 4 k rows x 8 columns) is
//         conflict-free. B is split into TF32 big + small at each fragment load.
//   koff  [Kp] int: the patch offset of k, (c KD + kd) kPlane + kh kRowStride + kw; k >= K points
//         at an all-zero plane (a padded k then multiplies 0 by 0, never by a stray inf or NaN).
//   raw   the next tile's input patch as fp32, filled by cp.async (zeros outside x) while this
//         tile computes: planes (c, kd) of kRowsIn rows x (64 + KW - 1) columns.
//   patch the current tile's patch split once into float2 (big, small) TF32 pairs, plus the zero
//         plane: every A value is read as one 8-byte load with no conversion in the K loop.
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
// Thread safety: stateless device code; Conv3d (direct.cuh) owns the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

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
  static_assert((kPlane - (KH - 1) * kRowStride - (KW - 1)) % 4 == 1 && kPlane >= kPlaneMin,
                "plane stride");
};

struct Params {
  const float* x;  // (N, C_in, D, H, W)
  const float* w;  // (C_out, C_in, KD, KH, KW) as given
  float* y;        // (N, C_out, D', H', W')
  int batch, cin, cout;
  int in_d, in_h, in_w, out_d, out_h, out_w, pad_d, pad_h, pad_w;
  int k, kp;                 // K and K padded to a multiple of 8
  int k_mma;                 // k below k_mma go to the tensor cores, the rest (<= 2) to FMAs
  int row_tiles, col_tiles;  // ceil(H' / 4), ceil(W' / 64)
  int64_t tiles;             // N D' row_tiles col_tiles
};

template <int KD, int KH, int KW, int kBN>
struct Layout {
  using P = Patch<KD, KH, KW>;
  static constexpr int kBStride = kBN + 8;
  static __host__ __device__ int planes(const Params& p) { return p.cin * KD; }
  static __host__ __device__ size_t b_bytes(const Params& p) {
    return sizeof(float) * size_t(p.kp) * kBStride;
  }
  static __host__ __device__ size_t koff_bytes(const Params& p) { return sizeof(int) * p.kp; }
  static __host__ __device__ size_t raw_bytes(const Params& p) {
    return sizeof(float) * size_t(planes(p)) * P::kPlane;
  }
  static __host__ __device__ size_t patch_bytes(const Params& p) {  // + the zero plane
    return sizeof(float2) * size_t(planes(p) + 1) * P::kPlane;
  }
  static __host__ __device__ size_t smem_bytes(const Params& p) {
    return patch_bytes(p) + b_bytes(p) + raw_bytes(p) + koff_bytes(p);
  }
};

struct Tile {
  int n, d, h0, w0;
};

__device__ __forceinline__ Tile tile_at(const Params& p, int64_t t) {
  Tile r;
  r.w0 = static_cast<int>(t % p.col_tiles) * kTileCols;
  t /= p.col_tiles;
  r.h0 = static_cast<int>(t % p.row_tiles) * kTileRows;
  t /= p.row_tiles;
  r.d = static_cast<int>(t % p.out_d);
  r.n = static_cast<int>(t / p.out_d);
  return r;
}

// raw[plane][r][col] = x[n, c, d + kd - pd, h0 + r - ph, w0 + col - pw] by 4-byte cp.async (zero
// outside x); a warp per staged row, lanes along the columns.
template <int KD, int KH, int KW>
__device__ void stage_patch(const Params& p, const Tile& t, uint32_t raw, int warp, int lane) {
  using P = Patch<KD, KH, KW>;
  const int rows = p.cin * KD * P::kRowsIn;
  for (int r = warp; r < rows; r += kThreads / 32) {
    const int row = r % P::kRowsIn, plane = r / P::kRowsIn, c = plane / KD, kd = plane % KD;
    const int gd = t.d + kd - p.pad_d, gh = t.h0 + row - p.pad_h;
    const bool row_in = gd >= 0 && gd < p.in_d && gh >= 0 && gh < p.in_h;
    const float* src =
        row_in ? p.x + ((int64_t{t.n} * p.cin + c) * p.in_d + gd) * int64_t{p.in_h} * p.in_w +
                     int64_t{gh} * p.in_w
               : p.x;
    const uint32_t dst = raw + 4u * static_cast<uint32_t>(plane * P::kPlane + row * P::kRowStride);
    for (int col = lane; col < P::kColsIn; col += 32) {
      const int gw = t.w0 + col - p.pad_w;
      const bool ok = row_in && gw >= 0 && gw < p.in_w;
      tf32x3::cp_async_4(dst + 4u * col, ok ? src + gw : p.x, ok);
    }
  }
}

// One k8 step's B fragments of the warp's kNT n8 tiles, split into big and small TF32.
template <int kNT, int kBStride>
__device__ __forceinline__ void load_b(const float* bs, int s, int t, int col0,
                                       uint32_t (&big)[kNT][2], uint32_t (&small)[kNT][2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float* row = bs + (8 * s + t + 4 * i) * kBStride + col0;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const tf32x3::SplitTf32 v = tf32x3::split_tf32(row[8 * nt]);
      big[nt][i] = v.big;
      small[nt][i] = v.small;
    }
  }
}

// The tile kernel. Epilogue: direct.cuh's concept, epilogue.channel(co)(value).
template <int KD, int KH, int KW, int kBN, class Epilogue>
__global__ void __launch_bounds__(kThreads) conv3d_tf32x3_kernel(Params p, Epilogue epilogue) {
  using P = Patch<KD, KH, KW>;
  using L = Layout<KD, KH, KW, kBN>;
  constexpr int kNT = kBN / kWarpsN / 8;  // n8 tiles per warp
  extern __shared__ __align__(16) unsigned char smem[];
  float2* patch = reinterpret_cast<float2*>(smem);
  float* bs = reinterpret_cast<float*>(smem + L::patch_bytes(p));
  float* raw = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(bs) + L::b_bytes(p));
  int* koff = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(raw) + L::raw_bytes(p));
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(raw));

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wr = warp / kWarpsN, wn = warp % kWarpsN;  // output row in the tile, channel half
  const int co0 = static_cast<int>(blockIdx.y) * kBN;
  const int planes = L::planes(p);

  int64_t tile = blockIdx.x;
  if (tile < p.tiles) stage_patch<KD, KH, KW>(p, tile_at(p, tile), raw_addr, warp, lane);
  tf32x3::cp_async_commit();

  // Once per block: the weights of the channel block, the k offsets, the zero plane.
  for (int e = tid; e < p.kp * kBN; e += kThreads) {
    const int k = e % p.kp, n = e / p.kp, co = co0 + n;  // k fastest: coalesced reads of w
    bs[k * L::kBStride + n] = k < p.k && co < p.cout ? p.w[int64_t{co} * p.k + k] : 0.0f;
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
    patch[planes * P::kPlane + e] = make_float2(0.0f, 0.0f);

  const float* b_warp = bs + wn * (kBN / kWarpsN) + g;
  const int a_base = wr * P::kRowStride + 4 * g;
  for (; tile < p.tiles; tile += gridDim.x) {
    tf32x3::cp_async_wait<0>();
    __syncthreads();  // raw holds this tile; every warp is done with the previous patch
    for (int e = tid; e < planes * P::kPlane; e += kThreads) {
      const tf32x3::SplitTf32 v = tf32x3::split_tf32(raw[e]);
      patch[e] = make_float2(__uint_as_float(v.big), __uint_as_float(v.small));
    }
    __syncthreads();  // patch is ready and raw is free
    const int64_t next = tile + gridDim.x;
    if (next < p.tiles) stage_patch<KD, KH, KW>(p, tile_at(p, next), raw_addr, warp, lane);
    tf32x3::cp_async_commit();

    // A warp whose output row is past H' (the last row tile of L1_054's 62 rows) or whose
    // channels are past C_out has nothing to store: it skips to the next tile's barrier and leaves
    // the tensor cores to the other warps (no barrier until then).
    const Tile tl = tile_at(p, tile);
    const int h = tl.h0 + wr;
    if (h >= p.out_h || co0 + wn * (kBN / kWarpsN) >= p.cout) continue;

    float acc[4][kNT][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][nt][e] = 0.0f;

#pragma unroll 1
    for (int s = 0; s < p.k_mma / 8; ++s) {
      uint32_t b_big[kNT][2], b_small[kNT][2];
      load_b<kNT, L::kBStride>(b_warp, s, t, 0, b_big, b_small);
      const float2* a_lo = patch + a_base + koff[8 * s + t];      // k = t
      const float2* a_hi = patch + a_base + koff[8 * s + t + 4];  // k = t + 4
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        // rows g (half 0: column 4 g + j) and g + 8 (half 1: column 32 + 4 g + j)
        const float2 v0 = a_lo[j], v1 = a_lo[32 + j], v2 = a_hi[j], v3 = a_hi[32 + j];
        const uint32_t a_big[4] = {__float_as_uint(v0.x), __float_as_uint(v1.x),
                                   __float_as_uint(v2.x), __float_as_uint(v3.x)};
        const uint32_t a_small[4] = {__float_as_uint(v0.y), __float_as_uint(v1.y),
                                     __float_as_uint(v2.y), __float_as_uint(v3.y)};
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

    // The K tail on the FMA pipe (K = 8 q + 1 or 2: L1_054's 81): a padded k8 step would be
    // 48 MMAs per warp for one or two real k; these are 64 FMAs per k with the accumulator
    // layout's own operands: rows g / g + 8 of m16 tile j (patch, big + small, which is what
    // 3xTF32 multiplies) and columns 2 t, 2 t + 1 of each n8 tile (the fp32 weights).
    for (int k = p.k_mma; k < p.k; ++k) {
      const float2* a_k = patch + a_base + koff[k];
      const float* b_k = bs + k * L::kBStride + wn * (kBN / kWarpsN) + 2 * t;
      float a[4][2], b[kNT][2];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 lo = a_k[j], hi = a_k[32 + j];
        a[j][0] = lo.x + lo.y;
        a[j][1] = hi.x + hi.y;
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

    // Epilogue: thread (g, t) holds, per n8 tile, channel parity e and half, the outputs at
    // columns 32 half + 4 g + {0, 1, 2, 3} of row wr: c0/c1 (half 0) and c2/c3 (half 1).
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int co = co0 + wn * (kBN / kWarpsN) + 8 * nt + 2 * t + e;
        if (co >= p.cout) continue;
        const auto f = epilogue.channel(co);
        float* row = p.y + ((int64_t{tl.n} * p.cout + co) * p.out_d + tl.d) * p.out_h * p.out_w +
                     int64_t{h} * p.out_w;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int w = tl.w0 + 32 * half + 4 * g;
          const float v[4] = {f(acc[0][nt][2 * half + e]), f(acc[1][nt][2 * half + e]),
                              f(acc[2][nt][2 * half + e]), f(acc[3][nt][2 * half + e])};
          float* dst = row + w;
          const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
          if (w + 3 < p.out_w && (addr & 15) == 0) {
            __stcs(reinterpret_cast<float4*>(dst), make_float4(v[0], v[1], v[2], v[3]));
          } else if (w + 3 < p.out_w && (addr & 7) == 0) {
            __stcs(reinterpret_cast<float2*>(dst), make_float2(v[0], v[1]));
            __stcs(reinterpret_cast<float2*>(dst + 2), make_float2(v[2], v[3]));
          } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
              if (w + q < p.out_w) __stcs(dst + q, v[q]);
          }
        }
      }
  }
  tf32x3::cp_async_wait<0>();  // nothing in flight at exit
}

}  // namespace kb::custom::conv3d_direct::tf32
