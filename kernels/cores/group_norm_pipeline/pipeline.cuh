// Building blocks of fused "producer -> GroupNorm" kernels (L2_021, L2_060): fast sigmoid pieces,
// the GroupNorm coefficients from double sums (block and warp sums: ../block_reduce.cuh), the
// middle step of the two-launch
// form (per-task partial sums -> per-(sample, channel) (scale, shift)), and the partial sums of a
// materialized tensor for the generic paths.
//
// Two-launch form (replaces the one-launch ticket pipeline of commit 8015303, measured on the
// H200 at 2.2x / 3.8x its prediction: N tasks spin-waiting on S tasks, per-task serial latency):
//   launch 1 (statistics): persistent grid-stride over (sample, task); each task writes its
//            partial sums to its own slot, no atomics and no inter-block waits;
//   coefficients_kernel: one warp per (sample, group) folds the parts in a fixed order;
//   launch 2 (normalize): grid-stride over tasks, reads coef[n][o].
// Stream order is the only synchronization. Results are deterministic for a given device.
//
// Thread safety: device helpers and stateless host launchers.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda/device_query.h"
#include "common/status.h"
#include "kernels/cores/block_reduce.cuh"

namespace kb::gn_pipeline {

constexpr int kWarp = 32;

// ---- Elementwise and reduction helpers ----

// 2^v and 1/v, one MUFU instruction each (relative error ~2^-22, denormals flushed).
__device__ __forceinline__ float ex2_approx(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

__device__ __forceinline__ float rcp_approx(float v) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}

constexpr float kNegLog2e = -1.4426950408889634f;

// (scale, shift) with out = v * scale + shift = (v - mean) * rstd * gamma + beta, from the sums
// of v and v^2 over `count` values (biased variance, like GroupNorm).
__device__ inline float2 group_norm_coefficients(double2 sums, double count, float gamma,
                                                 float beta, float eps) {
  const double mean = sums.x / count;
  const double var = fmax(sums.y / count - mean * mean, 0.0);
  const double scale = static_cast<double>(gamma) / sqrt(var + static_cast<double>(eps));
  return make_float2(static_cast<float>(scale), static_cast<float>(beta - mean * scale));
}

// ---- Statistics from per-task partial sums (two-launch form) ----
//
// The statistics launch writes one (sum v, sum v^2) per (sample, task, group) to
// partials[(n * parts + p) * groups + k], or one per (sample, task, channel) to
// partials[(n * parts + p) * channels + o] (width = cpg entries per group: the channels of group k
// are k cpg .. k cpg + cpg - 1): no atomics, no fences, every slot written every run.
// coefficients_kernel then folds a group's parts in a fixed order (deterministic) and writes
// coef[n * channels + o] = (scale, shift) for the normalize launch.

// Entries first, first + step, ... of (sample n, group grp)'s parts x width partials, summed in
// a fixed order.
__device__ __forceinline__ double2 group_partial_sum(const double2* partials, int64_t n,
                                                     int64_t parts, int64_t groups, int64_t grp,
                                                     int64_t width, int64_t first, int64_t step) {
  double2 sum = make_double2(0.0, 0.0);
#pragma unroll 4
  for (int64_t e = first; e < parts * width; e += step) {
    const int64_t p = e / width, c = e % width;
    const double2 v = partials[((n * parts + p) * groups + grp) * width + c];
    sum.x += v.x;
    sum.y += v.y;
  }
  return sum;
}

// One warp per (n, group); blockDim.x == kThreads. width: entries per (part, group), 1 or cpg.
template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    coefficients_kernel(const double2* partials, int64_t samples, int64_t parts, int64_t groups,
                        int64_t cpg, int64_t width, double count, const float* gamma,
                        const float* beta, float eps, float2* coef) {
  static_assert(kThreads % kWarp == 0, "whole warps");
  const int64_t pair = int64_t{blockIdx.x} * (kThreads / kWarp) + threadIdx.x / kWarp;
  if (pair >= samples * groups) return;  // warp-uniform
  const int64_t n = pair / groups, grp = pair % groups;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const double2 sum =
      cores::warp_sum(group_partial_sum(partials, n, parts, groups, grp, width, lane, kWarp));
  for (int64_t o = grp * cpg + lane; o < (grp + 1) * cpg; o += kWarp)
    coef[n * groups * cpg + o] = group_norm_coefficients(sum, count, gamma[o], beta[o], eps);
}

// One block per (n, group), for many partials per group (L2_021's tensor path: 4,064): a warp
// each was latency-bound there (86 us for 66 MB under ncu).
template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    coefficients_block_kernel(const double2* partials, int64_t parts, int64_t groups, int64_t cpg,
                              int64_t width, double count, const float* gamma, const float* beta,
                              float eps, float2* coef) {
  const int64_t n = blockIdx.x / groups, grp = blockIdx.x % groups;
  const double2 sum = cores::block_sum<kThreads, cores::Fold::kWarp>(
      group_partial_sum(partials, n, parts, groups, grp, width, threadIdx.x, kThreads));
  if (threadIdx.x >= kWarp) return;  // warp 0 holds the total
  for (int64_t o = grp * cpg + threadIdx.x; o < (grp + 1) * cpg; o += kWarp)
    coef[n * groups * cpg + o] = group_norm_coefficients(sum, count, gamma[o], beta[o], eps);
}

// Launches the fold on `stream` (width: see above): a warp per (n, group), or a block per
// (n, group) from kBlockFoldEntries partials each; the caller checks cudaGetLastError(). A warp
// walking its entries is latency-bound well before 2,048 (ncu, H200, session 18: L2_060's 504
// entries per (n, group), 512 pairs: 14.1 us by warps against 4.3 us for 63 entries).
constexpr int64_t kBlockFoldEntries = 256;
inline void launch_coefficients(const double2* partials, int64_t samples, int64_t parts,
                                int64_t groups, int64_t cpg, double count, const float* gamma,
                                const float* beta, float eps, float2* coef, cudaStream_t stream,
                                int64_t width = 1) {
  constexpr int kThreads = 256;
  if (parts * width >= kBlockFoldEntries) {
    coefficients_block_kernel<kThreads>
        <<<static_cast<unsigned>(samples * groups), kThreads, 0, stream>>>(
            partials, parts, groups, cpg, width, count, gamma, beta, eps, coef);
    return;
  }
  const int64_t warps = kThreads / kWarp;
  const auto blocks = static_cast<unsigned>((samples * groups + warps - 1) / warps);
  coefficients_kernel<kThreads><<<blocks, kThreads, 0, stream>>>(
      partials, samples, parts, groups, cpg, width, count, gamma, beta, eps, coef);
}

// ---- Statistics of a materialized tensor (the generic paths) ----
//
// v: (samples, groups, group_len) contiguous, as a GroupNorm input in NCHW/NCDHW is. `parts`
// blocks per (sample, group) each sum a contiguous chunk in double and write
// partials[(n * parts + p) * groups + grp], the layout coefficients_kernel folds.

template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    group_partials_kernel(const float* v, int64_t groups, int64_t group_len, int64_t parts,
                          double2* partials) {
  const int64_t p = blockIdx.x % parts, pair = blockIdx.x / parts;
  const int64_t chunk = (group_len + parts - 1) / parts;
  const int64_t end = min(group_len, (p + 1) * chunk);
  const float* src = v + pair * group_len;
  double2 m = make_double2(0.0, 0.0);
  for (int64_t e = p * chunk + threadIdx.x; e < end; e += kThreads) {
    const double x = __ldcg(&src[e]);
    m.x += x;
    m.y += x * x;
  }
  m = cores::block_sum<kThreads>(m);  // in thread 0, fixed order
  if (threadIdx.x == 0) partials[(pair / groups * parts + p) * groups + pair % groups] = m;
}

// Blocks per (sample, group) for group_partials_kernel: about 4 blocks per SM over the whole
// launch, none with fewer than 2,048 values.
inline int64_t group_partial_parts(int64_t samples, int64_t groups, int64_t group_len, int sms) {
  const int64_t pairs = std::max<int64_t>(samples * groups, 1);
  return std::clamp<int64_t>((4 * int64_t{sms} + pairs - 1) / pairs, 1,
                             std::max<int64_t>(1, group_len / 2048));
}

// Launches group_partials_kernel on `stream`; the caller checks cudaGetLastError().
inline void launch_group_partials(const float* v, int64_t samples, int64_t groups,
                                  int64_t group_len, int64_t parts, double2* partials,
                                  cudaStream_t stream) {
  constexpr int kThreads = 256;
  group_partials_kernel<kThreads>
      <<<static_cast<unsigned>(samples * groups * parts), kThreads, 0, stream>>>(
          v, groups, group_len, parts, partials);
}

// Blocks for a persistent grid-stride launch of `kernel` (its dynamic shared-memory limit already
// raised to `smem`): every block resident at once, never more than `tasks`.
inline Result<int> persistent_blocks(const void* kernel, int threads, size_t smem, int64_t tasks) {
  KB_ASSIGN_OR_RETURN(const int64_t resident, cuda::resident_blocks(kernel, threads, smem));
  return static_cast<int>(std::clamp<int64_t>(tasks, 1, resident));
}
}  // namespace kb::gn_pipeline
