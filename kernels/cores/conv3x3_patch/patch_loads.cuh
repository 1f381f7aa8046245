// The global-memory side of the 3x3 convs' patch staging, shared by the mma.sync kernel
// (conv2d_pool_tf32x3/conv3x3_pool_patch.cuh) and the wgmma kernel (conv3x3_wgmma/
// conv3x3_wgmma.cuh): a chunk of input channels of a tile's input patch into registers, and the
// one contiguous copy of a stage's split weights. Each kernel splits and stores the patch in its
// own shared-memory layout.
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::conv3x3_patch {

// raw[s][c] = x[n][ci0 + c][row0 + pos / kCols][col0 + pos % kCols] for this thread's patch
// positions pos = threadIdx.x + s * kThreads (row-major in a patch of kPixels positions, kCols
// wide); 0 outside the image, past C_in or past the patch. x: (N, C_in, H, W); C_in * H * W fits
// int (checked by the hosts).
template <int kCols, int kPixels, int kThreads, int kSlots, int kChannels>
__device__ __forceinline__ void load_patch(const float* x, int n, int c_in, int ci0, int h, int w,
                                           int row0, int col0, float (&raw)[kSlots][kChannels]) {
  const int plane = h * w;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int pos = threadIdx.x + s * kThreads;
    const int ih = row0 + pos / kCols, iw = col0 + pos % kCols;
    const bool inside = pos < kPixels && static_cast<unsigned>(ih) < static_cast<unsigned>(h) &&
                        static_cast<unsigned>(iw) < static_cast<unsigned>(w);
    const float* src = x + (int64_t{n} * c_in + ci0) * plane + (inside ? ih * w + iw : 0);
#pragma unroll
    for (int c = 0; c < kChannels; ++c)
      raw[s][c] = inside && ci0 + c < c_in ? __ldg(src + c * plane) : 0.0f;
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
