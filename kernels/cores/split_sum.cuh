// The second step of a split reduction: out[i] = partials[0][i] + partials[1][i] + ... +
// partials[splits - 1][i], added in split order, so every run gives the same sum. Used where a
// kernel splits its reduction dimension (K of a GEMM, input channels of a conv) over CTAs to fill
// the GPU at small sizes: L1_003's split-K tiles, the 3-D conv-transpose patch GEMM.
//   partials: (splits, count) fp32; out: (count) fp32.
//
// Thread safety: a stateless kernel and its launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/status.h"

namespace kb::custom::split_sum {

template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    split_sum_kernel(const float* __restrict__ partials, float* __restrict__ out, int64_t count,
                     int splits) {
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * kThreads) {
    float sum = partials[i];
    for (int s = 1; s < splits; ++s) sum += partials[s * count + i];
    out[i] = sum;
  }
}

inline Status launch_split_sum(const float* partials, float* out, int64_t count, int splits,
                               cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = std::clamp<int64_t>((count + kThreads - 1) / kThreads, 1, 1 << 16);
  split_sum_kernel<kThreads>
      <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(partials, out, count, splits);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

}  // namespace kb::custom::split_sum
