// The conv2d core's epilogue contract and tile statistics, shared by its kernels (the 3xTF32
// tile of tensor_tile.cuh, narrow_fma.cuh, few_channels.cuh, the wgmma kernel's WgmmaStore in
// conv2d_core.cuh; the flat tile of flat_fma.cuh applies epilogues but keeps no statistics).
//
// An epilogue Epi provides: `static constexpr bool kStats` (reduce per-(n, co) tile statistics of
// the values it returns into ConvArgs::stats), `static constexpr bool kPromotedSums` (on the
// wgmma kernel, sum each 8-channel stage afresh and add the stages in fp32, at 2-row tiles: for
// outputs that keep small values of large sums, e.g. a ReLU's near 0, where the tensor core's
// truncating sums would show), `Row row(int co)` (per-channel constants) and
// `float operator()(const Row&, float conv)` (conv = the raw sum, no conv bias).
//
// Statistics (kStats) never form raw sums of v and v^2: with a plane mean far from zero (inputs
// in [100, 101)) E[v^2] - mean^2 in fp32 loses every digit. A thread sums v - pilot and
// (v - pilot)^2 over its 8 columns of a row (pilot = its first value there), turns them into
// (mean, M2 = sum (v - mean)^2), and threads, warps and tiles merge (count, mean, M2) with Chan's
// update; the counts follow from the tile geometry. Same stores, shuffles and shared memory as
// raw sums: only how partials are formed and merged changes.
//
// Thread safety: stateless device functions.
#pragma once

#include <cuda_runtime.h>

namespace kb::custom::conv2d_tf32x3 {

// Chan et al.'s merge of two (count, mean, M2) partials; m = (mean, M2).
__device__ __forceinline__ float2 merge_moments(float na, float2 a, float nb, float2 b) {
  if (nb == 0.0f) return a;
  if (na == 0.0f) return b;
  const float wb = nb / (na + nb), d = b.x - a.x;
  return make_float2(fmaf(d, wb, a.x), a.y + b.y + d * d * (na * wb));
}

// (count, mean, M2) merged over the 4 lanes that share an accumulator row (lane % 4, the MMA
// fragments' column groups): every one of them ends with the row's whole, in a fixed order.
__device__ __forceinline__ float2 merge_over_quad(float n, float2 m) {
#pragma unroll
  for (int off = 1; off < 4; off *= 2) {
    const float n_b = __shfl_xor_sync(0xffffffffu, n, off);
    const float2 m_b =
        make_float2(__shfl_xor_sync(0xffffffffu, m.x, off), __shfl_xor_sync(0xffffffffu, m.y, off));
    m = merge_moments(n, m, n_b, m_b);
    n += n_b;
  }
  return m;
}

}  // namespace kb::custom::conv2d_tf32x3
