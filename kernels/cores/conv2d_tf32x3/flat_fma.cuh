// The conv2d core's flat tile: an implicit GEMM in plain fp32 FMA whose pixel tiles run over the
// pixels of every image, q = n * Ho*Wo + pixel, for layers of small planes.
//
// Why: the 3xTF32 tile and the thread-a-pixel kernels work within one image, so a layer of many
// small planes leaves them mostly idle or latency-bound. At L2_017's thin planes (N 53, C_in 62,
// C_out 63, 77 x 3: 75 pixels an image) the few-channel kernel took 40.0 us in 424 CTAs of which
// 75 of 128 threads work, against cuDNN's 24.7 us for an implicit GEMM of 32 x 32 tiles over the
// pixels of all images (250 CTAs of 64 threads, 2.2 cycles a warp instruction; ncu, H100, session
// 42). This is that GEMM: Y (C_out x N Ho Wo) = W (C_out x K) @ X (K x N Ho Wo), X's column q the
// im2col patch of pixel q, gathered through the core's tap table (conv_args.cuh).
//
// Tile: kCo channels x kPix pixels, (kCo / 4) x (kPix / 4) threads of 4 x 4 outputs (4
// consecutive channels x 4 consecutive pixels), K in steps of kK = 16 through kStages cp.async
// stages (tf32x3::mainloop): per k a float4 of weights and a float4 of x from shared memory feed
// 16 FMAs. Copies are 4-byte (any K, any alignment; zero-filled past K, C_out and the pixels):
// weights W(co, k) transposed to a[k][co] (rows padded by 4 floats), thread t copying k = t % 16
// of channels t / 16, t / 16 + T / 16, ...; x as b[k][pixel], thread t keeping pixel t % kPix
// for every stage (its origin decoded once) and copying k = t / kPix, t / kPix + T / kPix, ....
// The tap table goes to shared memory behind the stages when p.table_in_smem says so.
// Epilogue: y[n][co][pixel] = epi(epi.row(co), sum) for the outputs in range, n and pixel from q.
// No tile statistics: an epilogue's kStats is not honoured here (Conv2dTf32x3::stats_tiles() has
// no slots for this kernel; the caller forms its statistics from y).
// Accuracy: strict fp32, one FMA chain per output, k ascending (as the narrow kernels).
// Measured (H100, session 50): L2_017's thin planes above 0.048 -> 0.032 ms (reference 0.040),
// conv + normalize; which layers take it, and the measurements behind that: conv2d_core.cuh's
// flat_tile_of.
//
// Thread safety: device code without state; launch_flat is stateless.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/conv2d_tf32x3/conv_args.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::conv2d_tf32x3::flat {

constexpr int kPer = 4;     // 4 x 4 outputs a thread (a float4 of each operand)
constexpr int kK = 16;      // K per stage
constexpr int kStages = 3;  // cp.async stages
constexpr int kPadA = 4;    // a[k] rows padded: float4-aligned, rows 4 banks apart
static_assert(kPer == 4, "the operands are float4s; Acc is the mainloop's [M][N][4]");
static_assert(kBK % kK == 0, "the tap table's K_pad (a multiple of kBK) covers every k-tile");

template <int kCo, int kPix>
struct Tile {
  static_assert(kCo % (4 * kPer) == 0 && kPix % (4 * kPer) == 0, "whole float4 groups");
  static constexpr int kThreads = (kCo / kPer) * (kPix / kPer);
  static constexpr int kRowFloatsA = kCo + kPadA;
  static constexpr int kStageFloatsA = kK * kRowFloatsA;
  static constexpr int kStageFloats = kStageFloatsA + kK * kPix;
  static constexpr int kStageBytes = kStages * kStageFloats * 4;
  static constexpr int kCopiesA = kCo * kK / kThreads;   // weights, 4-byte
  static constexpr int kCopiesB = kPix * kK / kThreads;  // x, 4-byte
  static constexpr int kRowStepA = kThreads / kK;        // channels between a thread's A copies
  static constexpr int kKStepB = kThreads / kPix;        // k between a thread's B copies
  static_assert(kThreads % kK == 0 && kThreads % kPix == 0 && kCopiesA <= 32, "copy grid");
  static_assert(kStageFloats % 4 == 0, "16-byte aligned stages");
};

// Shared-memory index of a[k][co] and b[k][pixel] within a stage (__host__ for tests).
template <int kCo, int kPix>
__host__ __device__ constexpr int a_index(int k, int co) {
  return k * Tile<kCo, kPix>::kRowFloatsA + co;
}
template <int kCo, int kPix>
__host__ __device__ constexpr int b_index(int k, int pixel) {
  return Tile<kCo, kPix>::kStageFloatsA + k * kPix + pixel;
}

// Copy i of thread t: A (weights) k = t % kK of tile channel t / kK + kRowStepA i; B (x) tile
// pixel t % kPix at k = t / kPix + kKStepB i (k within the k-tile).
struct Slot {
  int k, col;  // col: the tile channel (A) or pixel (B)
};
template <int kCo, int kPix>
__host__ __device__ constexpr Slot a_copy(int t, int i) {
  return {t % kK, t / kK + Tile<kCo, kPix>::kRowStepA * i};
}
template <int kCo, int kPix>
__host__ __device__ constexpr Slot b_copy(int t, int i) {
  return {t / kPix + Tile<kCo, kPix>::kKStepB * i, t % kPix};
}
// Thread t's outputs: tile channels kPer ty .. + 3 x tile pixels kPer tx .. + 3.
template <int kCo, int kPix>
__host__ __device__ constexpr int out_tx(int t) {
  return t % (kPix / kPer);
}
template <int kCo, int kPix>
__host__ __device__ constexpr int out_ty(int t) {
  return t / (kPix / kPer);
}
// The receptive field of flat pixel q (of p.n * p.hw_out; ok false past them, q read as 0).
__host__ __device__ inline PixelOrigin flat_origin(const ConvArgs& p, int q) {
  const bool ok = q < p.n * p.hw_out;
  const int q_in = ok ? q : 0, n = q_in / p.hw_out;
  PixelOrigin o = pixel_origin(n * p.x_image, q_in - n * p.hw_out, p.hw_out, p.wo, p.w_in, p.sh,
                               p.sw, p.ph, p.pw);
  o.ok = ok;
  return o;
}

// acc[i][0][j]: channel 4 ty + i, pixel 4 tx + j of the tile (tf32x3::mainloop's [M][N][4]
// accumulator shape).
using Acc = float[kPer][1][kPer];

template <int kCo, int kPix, bool kPadded, class Epi>
__global__ void __launch_bounds__(Tile<kCo, kPix>::kThreads)
    conv2d_flat_kernel(const ConvArgs p, const Epi epi) {
  using T = Tile<kCo, kPix>;
  extern __shared__ __align__(16) float smem[];
  const int t = static_cast<int>(threadIdx.x);
  const int tx = out_tx<kCo, kPix>(t), ty = out_ty<kCo, kPix>(t);
  const int co0 = static_cast<int>(blockIdx.x) % p.co_tiles * kCo;
  const int q0 = static_cast<int>(blockIdx.x) / p.co_tiles * kPix;
  const int pixels = p.n * p.hw_out;  // fits int: Conv2dTf32x3 routes nothing larger here
  const int* table = staged_tap_table<T::kThreads>(p, smem + kStages * T::kStageFloats);

  const Slot a0 = a_copy<kCo, kPix>(t, 0);
  const float* a_src = p.w + int64_t{co0 + a0.col} * p.k + a0.k;
  uint32_t rows_ok = 0;
#pragma unroll
  for (int i = 0; i < T::kCopiesA; ++i)
    rows_ok |= (co0 + a_copy<kCo, kPix>(t, i).col < p.c_out ? 1u : 0u) << i;
  const Slot b0 = b_copy<kCo, kPix>(t, 0);
  const PixelOrigin origin = flat_origin(p, q0 + b0.col);
  const float* x_pix = p.x + origin.x_off;  // with padding possibly outside x (rel brings it in)
  const int2* taps_hw = reinterpret_cast<const int2*>(table + p.k_pad);

  Acc acc;
  tf32x3::mainloop<kStages, T::kStageFloats>(
      smem, (p.k + kK - 1) / kK, acc,
      [&](uint32_t stage, int kt) {
        const int k0 = kt * kK;
        const bool k_ok = k0 + a0.k < p.k;
#pragma unroll
        for (int i = 0; i < T::kCopiesA; ++i) {
          const bool ok = k_ok && ((rows_ok >> i) & 1u);
          const Slot s = a_copy<kCo, kPix>(t, i);
          tf32x3::cp_async_4(stage + 4 * a_index<kCo, kPix>(s.k, s.col),
                             ok ? a_src + int64_t{T::kRowStepA} * i * p.k : p.w, ok);
        }
        a_src += kK;
#pragma unroll
        for (int i = 0; i < T::kCopiesB; ++i) {
          const Slot s = b_copy<kCo, kPix>(t, i);
          const int k = k0 + s.k;  // < K_pad: the table covers it
          const int2 hw = kPadded ? taps_hw[k] : make_int2(0, 0);
          const GatherSource src =
              gather_source<kPadded>(origin, k, p.k, table[k], hw.x, hw.y, p.h, p.w_in);
          tf32x3::cp_async_4(stage + 4 * b_index<kCo, kPix>(s.k, s.col), x_pix + src.rel, src.ok);
        }
      },
      [&](const float* stage, Acc& c) {
#pragma unroll
        for (int kk = 0; kk < kK; ++kk) {
          const float4 a =
              *reinterpret_cast<const float4*>(stage + a_index<kCo, kPix>(kk, kPer * ty));
          const float4 b =
              *reinterpret_cast<const float4*>(stage + b_index<kCo, kPix>(kk, kPer * tx));
          const float av[kPer] = {a.x, a.y, a.z, a.w}, bv[kPer] = {b.x, b.y, b.z, b.w};
#pragma unroll
          for (int i = 0; i < kPer; ++i)
#pragma unroll
            for (int j = 0; j < kPer; ++j) c[i][0][j] = fmaf(av[i], bv[j], c[i][0][j]);
        }
      });

  // y[n][co][pixel] for the thread's 4 pixels (n and pixel carried from the first) x 4 channels.
  typename Epi::Row rows[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) rows[i] = epi.row(min(co0 + kPer * ty + i, p.c_out - 1));
  const int q_first = q0 + kPer * tx;
  int img = q_first / p.hw_out, pixel = q_first - img * p.hw_out;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (q_first + j >= pixels) break;
    float* y_pixel = p.y + int64_t{img} * p.c_out * p.hw_out + pixel;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int co = co0 + kPer * ty + i;
      if (co < p.c_out) y_pixel[int64_t{co} * p.hw_out] = epi(rows[i], acc[i][0][j]);
    }
    if (++pixel == p.hw_out) pixel = 0, ++img;
  }
}

// ---- host side ----

// The flat tile's shapes (channels x pixels); kNone: the layer does not take the flat tile.
enum class FlatTile { kNone, k64x32, k32x64 };

inline int flat_tile_channels(FlatTile s) {
  return s == FlatTile::k64x32 ? 64 : 32;
}
inline int flat_tile_pixels(FlatTile s) {
  return s == FlatTile::k64x32 ? 32 : 64;
}

// y = epi(conv) over the layer a describes (a.pix_tiles, a.co_tiles: the flat tile's, a.n *
// a.hw_out pixels in int range), on `stream`.
template <class Epi>
inline cudaError_t launch_flat(const ConvArgs& a, FlatTile s, bool padded, const Epi& epi,
                               cudaStream_t stream) {
  const auto run = [&](auto kernel, int threads, int stage_bytes) {
    const int smem = stage_bytes + (a.table_in_smem ? a.table_ints * 4 : 0);
    const dim3 grid(static_cast<unsigned>(int64_t{a.pix_tiles} * a.co_tiles));
    kernel<<<grid, threads, smem, stream>>>(a, epi);
    return cudaGetLastError();
  };
  const auto pick = [&]<int kCo, int kPix>() {
    using T = Tile<kCo, kPix>;
    return padded ? run(conv2d_flat_kernel<kCo, kPix, true, Epi>, T::kThreads, T::kStageBytes)
                  : run(conv2d_flat_kernel<kCo, kPix, false, Epi>, T::kThreads, T::kStageBytes);
  };
  switch (s) {
    case FlatTile::k64x32:
      return pick.template operator()<64, 32>();
    case FlatTile::k32x64:
      return pick.template operator()<32, 64>();
    case FlatTile::kNone:
      break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace kb::custom::conv2d_tf32x3::flat
