// The 3x3 convs' patch staging, shared by the mma.sync kernel (conv2d_pool_tf32x3/
// conv3x3_pool_patch.cuh) and the wgmma kernels (conv3x3_wgmma/conv3x3_wgmma.cuh, L2_021's
// wgmma_rows.cuh): a chunk of input channels of a tile's input patch into registers, the one
// contiguous copy of a stage's split weights, and the wgmma kernels' split store of 8-channel
// patches as K-major core-matrix planes (the mma.sync kernel stores its own layout).
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::conv3x3_patch {

// raw[s][c] = x[n][ci0 + c][row0 + pos / kCols][col0 + pos % kCols] for the patch positions
// pos = tid + s * kThreads of thread tid of kThreads (row-major in a patch of kPixels positions,
// kCols wide); 0 outside the image, past C_in or past the patch. x: (N, C_in, H, W); C_in * H * W
// fits int (checked by the hosts).
template <int kCols, int kPixels, int kThreads, int kSlots, int kChannels>
__device__ __forceinline__ void load_patch(const float* x, int n, int c_in, int ci0, int h, int w,
                                           int row0, int col0, unsigned tid,
                                           float (&raw)[kSlots][kChannels]) {
  const int plane = h * w;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int pos = tid + s * kThreads;
    const int ih = row0 + pos / kCols, iw = col0 + pos % kCols;
    const bool inside = pos < kPixels && static_cast<unsigned>(ih) < static_cast<unsigned>(h) &&
                        static_cast<unsigned>(iw) < static_cast<unsigned>(w);
    const float* src = x + (int64_t{n} * c_in + ci0) * plane + (inside ? ih * w + iw : 0);
#pragma unroll
    for (int c = 0; c < kChannels; ++c)
      raw[s][c] = inside && ci0 + c < c_in ? __ldg(src + c * plane) : 0.0f;
  }
}

// The same for thread threadIdx.x of the block.
template <int kCols, int kPixels, int kThreads, int kSlots, int kChannels>
__device__ __forceinline__ void load_patch(const float* x, int n, int c_in, int ci0, int h, int w,
                                           int row0, int col0, float (&raw)[kSlots][kChannels]) {
  load_patch<kCols, kPixels, kThreads>(x, n, c_in, ci0, h, w, row0, col0, threadIdx.x, raw);
}

// The wgmma kernels' patch layout for 8 channels: per part (0 big, 1 small) and 4-channel quad a
// plane of kPitch pixels x 16 bytes, i.e. K-major core matrices of 8 pixels x 4 channels.
template <int kPitch>
__host__ __device__ constexpr int plane_index(int part, int ci, int pixel) {
  return ((part * 2 + ci / 4) * kPitch + pixel) * 4 + ci % 4;
}

// Splits thread tid's raw (positions tid + s * kThreads, 8 channels; see load_patch) into big and
// small TF32 parts and stores each pixel's quads at plane_index<kPitch>.
template <int kPixels, int kPitch, int kThreads, int kSlots>
__device__ __forceinline__ void store_patch_planes(float* patch, unsigned tid,
                                                   const float (&raw)[kSlots][8]) {
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int pos = tid + s * kThreads;
    if (pos >= kPixels) continue;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      float4 big, small;
      ::kb::tf32x3::split_tf32_quad(raw[s] + 4 * q, big, small);
      *reinterpret_cast<float4*>(patch + plane_index<kPitch>(0, 4 * q, pos)) = big;
      *reinterpret_cast<float4*>(patch + plane_index<kPitch>(1, 4 * q, pos)) = small;
    }
  }
}

// Copies kFloats contiguous floats at src (16-byte aligned) to shared memory at byte address
// stage with 16-byte cp.async copies, kThreads threads (the caller commits and waits).
template <int kFloats, int kThreads>
__device__ __forceinline__ void copy_stage(const float* src, uint32_t stage) {
  static_assert(kFloats % (4 * kThreads) == 0, "whole 16-byte copies per thread");
#pragma unroll
  for (int j = 0; j < kFloats / 4 / kThreads; ++j) {
    const int q = threadIdx.x + j * kThreads;
    ::kb::tf32x3::cp_async_16(stage + 16 * q, src + 4 * q);
  }
}

}  // namespace kb::custom::conv3x3_patch
