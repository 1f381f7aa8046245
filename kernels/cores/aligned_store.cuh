// A run of floats written with 16-byte stores in its aligned middle, scalar stores at its up to
// 3 + 3 edge elements: the store of an output row whose start is not 16-byte aligned (a row of
// odd length in a row-major tensor), for kernels that stage the row first (in shared memory, at
// the same alignment as the destination, so the middle's loads are 16-byte too).
// Users: the gather transposed convolutions (kernels/cores/conv_transpose_gather), L1_003's thin-K
// kernel.
//
// Thread safety: device code without state.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace kb::custom {

// Writes dst[o] for o in [0, len): chunk(o) gives elements o..o+3 where dst + o is 16-byte aligned,
// single(o) one element (the up to 3 + 3 at the edges). Thread `rank` of `count` sharing the run.
template <class Chunk, class Single>
__device__ __forceinline__ void store_run(float* dst, int len, int rank, int count, Chunk chunk,
                                          Single single) {
  const int misaligned = static_cast<int>((reinterpret_cast<uintptr_t>(dst) >> 2) & 3);
  const int head = std::min(len, (4 - misaligned) & 3);
  const int chunks = (len - head) >> 2;
  const int tail = head + 4 * chunks;
  for (int k = rank; k < chunks; k += count) {
    const int o = head + 4 * k;
    *reinterpret_cast<float4*>(dst + o) = chunk(o);
  }
  const int edges = head + (len - tail);
  for (int e = rank; e < edges; e += count) {
    const int o = e < head ? e : tail + (e - head);
    dst[o] = single(o);
  }
}

__device__ __forceinline__ void store_zeros(float* dst, int len, int rank, int count) {
  store_run(
      dst, len, rank, count, [](int) { return make_float4(0.f, 0.f, 0.f, 0.f); },
      [](int) { return 0.f; });
}

}  // namespace kb::custom
