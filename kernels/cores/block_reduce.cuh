// Warp- and block-wide sums in a fixed order (deterministic for a given launch shape): the one
// reduction every custom kernel of the pack uses for its statistics (L1_098, L2_017, L2_021,
// L2_060, L3_013, L3_025, L3_031, the GroupNorm pipeline).
//
// Value types: float, double, float2, double2, float3 (component-wise sums); add another by
// giving it shfl_xor() and plus() below.
//
//   warp_sum(v)                  butterfly over the 32 lanes (offsets 16, 8, 4, 2, 1): every lane
//                                gets the warp's total. Needs all 32 lanes.
//   block_sum<kThreads>(v, ws)   warp_sum, then lane 0 of warp w stores ws[w]; after a
//                                __syncthreads() the warp totals are folded (kFold below). The
//                                total is valid in thread 0; what other threads get is unspecified
//                                (today: T{} or, with Fold::kWarp, the total in warp 0). ws: shared
//                                memory of kThreads / 32 values, which the caller must not touch
//                                until a later __syncthreads() (two calls in a row need two ws).
//   block_sum<kThreads>(v)       the same with its own static shared ws: one call per barrier
//                                interval (thread 0 reads ws after the barrier, while a second
//                                call would already write it).
// blockDim.x must equal kThreads (a multiple of 32, at most 1024); every thread must call.
//
// Thread safety: device functions without state besides the shared scratch described above.
#pragma once

#include <cuda_runtime.h>

namespace kb::cores {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// ---- the value types: one shuffle and one + per component ----

__device__ __forceinline__ float shfl_xor(float v, int off) {
  return __shfl_xor_sync(kFullMask, v, off);
}
__device__ __forceinline__ double shfl_xor(double v, int off) {
  return __shfl_xor_sync(kFullMask, v, off);
}
__device__ __forceinline__ float2 shfl_xor(float2 v, int off) {
  return make_float2(shfl_xor(v.x, off), shfl_xor(v.y, off));
}
__device__ __forceinline__ double2 shfl_xor(double2 v, int off) {
  return make_double2(shfl_xor(v.x, off), shfl_xor(v.y, off));
}
__device__ __forceinline__ float3 shfl_xor(float3 v, int off) {
  return make_float3(shfl_xor(v.x, off), shfl_xor(v.y, off), shfl_xor(v.z, off));
}

__device__ __forceinline__ float plus(float a, float b) {
  return a + b;
}
__device__ __forceinline__ double plus(double a, double b) {
  return a + b;
}
__device__ __forceinline__ float2 plus(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ double2 plus(double2 a, double2 b) {
  return make_double2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ float3 plus(float3 a, float3 b) {
  return make_float3(a.x + b.x, a.y + b.y, a.z + b.z);
}

// ---- warp ----

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int off = kWarpSize / 2; off > 0; off /= 2) v = plus(v, shfl_xor(v, off));
  return v;
}

// ---- block ----

// How the warp totals are folded: kSerial, thread 0 adds them in warp order (0 + w0 + w1 + ...);
// kWarp, warp 0 runs a second butterfly over them (lane w holds w's total, the rest 0).
enum class Fold { kSerial, kWarp };

template <int kThreads, Fold kFold = Fold::kSerial, class T>
__device__ __forceinline__ T block_sum(T v, T* warp_sums) {
  static_assert(kThreads % kWarpSize == 0 && kThreads <= 1024, "whole warps, one block");
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if constexpr (kFold == Fold::kSerial) {
    T total{};
    if (threadIdx.x == 0)
      for (int w = 0; w < kWarps; ++w) total = plus(total, warp_sums[w]);
    return total;
  } else {
    if (warp != 0) return T{};
    return warp_sum(lane < kWarps ? warp_sums[lane] : T{});
  }
}

template <int kThreads, Fold kFold = Fold::kSerial, class T>
__device__ __forceinline__ T block_sum(T v) {
  __shared__ T warp_sums[kThreads / kWarpSize];
  return block_sum<kThreads, kFold>(v, warp_sums);
}

}  // namespace kb::cores
