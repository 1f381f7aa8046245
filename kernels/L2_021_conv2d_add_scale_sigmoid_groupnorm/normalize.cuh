// L2_021's in-place normalize of the pre-norm output with the fold's coefficients (custom.cu's
// design, "N task"): the task kernel, and the flat float4 stream where the output allows it.
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/geometry.cuh"

namespace kb::custom::L2_021 {

// ---- Fast path: normalize in place ----

// Task (n, o, part): out = out * scale + shift over part of a channel plane.
__device__ void normalize_task(const Buffers& b, const Geometry& g, int64_t task) {
  const int64_t part = task % g.parts, o = (task / g.parts) % g.c_out;
  const int64_t n = task / (g.parts * g.c_out);
  const float2 cf = b.coef[n * g.c_out + o];
  float* base = b.out + (n * g.c_out + o) * g.plane();
  const int64_t lo = part * g.part_len, hi = min(g.plane(), lo + g.part_len);
  const bool vec = g.plane() % 4 == 0 && reinterpret_cast<uintptr_t>(b.out) % 16 == 0;
  if (vec) {  // part_len % 4 == 0
    // kInFlight float4 loads per thread issued before their stores: with one, the pass was
    // latency-bound (ncu: 101 cycles per warp on L1TEX per issued instruction, DRAM 63% busy).
    constexpr int kInFlight = 4;
    float4* p4 = reinterpret_cast<float4*>(base);
    const int64_t end = hi / 4;
    for (int64_t i0 = lo / 4 + threadIdx.x; i0 < end; i0 += kInFlight * kThreads) {
      float4 v[kInFlight];
#pragma unroll
      for (int k = 0; k < kInFlight; ++k)
        if (i0 + k * kThreads < end) v[k] = __ldcs(p4 + i0 + k * kThreads);
#pragma unroll
      for (int k = 0; k < kInFlight; ++k)
        if (i0 + k * kThreads < end)
          __stcs(p4 + i0 + k * kThreads,
                 make_float4(fmaf(v[k].x, cf.x, cf.y), fmaf(v[k].y, cf.x, cf.y),
                             fmaf(v[k].z, cf.x, cf.y), fmaf(v[k].w, cf.x, cf.y)));
    }
  } else {
    for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads)
      __stcs(base + i, fmaf(__ldcs(base + i), cf.x, cf.y));
  }
}

// Tasks last sample first: the conv launch's last samples are still in L2.
__global__ void __launch_bounds__(kThreads) normalize_kernel(Buffers b, Geometry g) {
  const int64_t tasks = g.batch * g.c_out * g.parts;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) normalize_task(b, g, tasks - 1 - t);
}

// The same pass over the whole of `out` as float4s (plane % 4 == 0, out 16-byte aligned, fewer
// than 2^32 float4s), persistent blocks striding over it, last float4 first: each thread keeps
// kInFlight loads in flight the whole pass, where a task of 16 K elements (normalize_kernel) ends
// after 4 rounds and leaves its SM's share of the DRAM queue to the next block's start-up.
__global__ void __launch_bounds__(kThreads)
    normalize_flat_kernel(Buffers b, uint32_t total4, uint32_t plane4) {
  constexpr int kInFlight = 4;
  float4* p4 = reinterpret_cast<float4*>(b.out);
  const uint32_t stride = gridDim.x * kThreads;
  for (uint32_t i0 = blockIdx.x * kThreads + threadIdx.x; i0 < total4; i0 += kInFlight * stride) {
    float4 v[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k)
      if (i0 + k * stride < total4) v[k] = __ldcs(p4 + (total4 - 1 - (i0 + k * stride)));
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      if (i0 + k * stride >= total4) continue;
      const uint32_t i = total4 - 1 - (i0 + k * stride);
      const float2 cf = b.coef[i / plane4];  // (n, channel) of this float4
      __stcs(p4 + i, make_float4(fmaf(v[k].x, cf.x, cf.y), fmaf(v[k].y, cf.x, cf.y),
                                 fmaf(v[k].z, cf.x, cf.y), fmaf(v[k].w, cf.x, cf.y)));
    }
  }
}

}  // namespace kb::custom::L2_021
