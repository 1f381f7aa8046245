// Building blocks of fused "producer -> GroupNorm" kernels (L2_021, L2_060): fast sigmoid pieces,
// the GroupNorm coefficients from double sums, a block sum, and a two-phase per-sample pipeline.
//
// The pipeline runs in one kernel launch, for "statistics, then normalize" problems whose
// statistics are per sample (GroupNorm, InstanceNorm): phase S of sample n produces partial
// statistics (and, for some users, a pre-norm tensor); phase N of sample n needs all of sample n's
// S tasks finished. Launched as two kernels, the compute-bound S pass and the memory-bound N pass
// run one after the other; here a single grid takes tickets in an order that interleaves S tasks
// of sample j with N tasks of sample j - lag, so both run at the same time on every SM.
//
// Ticket order: phase j = 0 .. samples + lag - 1 holds s_tasks slots for S(j) (empty when
// j >= samples) and n_tasks slots for N(j - lag) (empty when j < lag), alternating S, N while both
// last. Tickets are taken at run time (atomicAdd), so a block that waits in N(n) holds a ticket
// above every S(n) ticket, and each of those belongs to a block that is running or done: no
// deadlock whatever the grid size. S tasks never wait.
//
// Protocol (per sample n, counter done[n] zeroed before the launch):
//   S task: write its results; all threads __threadfence(); __syncthreads(); thread 0 then
//           signal_done(&done[n]).
//   N task: thread 0 wait_done(&done[n], s_tasks); __syncthreads(); read results with __ldcg
//           (L1 is not coherent: never serve another block's writes from it).
//
// Thread safety: device helpers; the plan is a value.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

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

// The block's sum of v (blockDim.x a multiple of 32, at most 1024), valid in thread 0.
__device__ inline double2 block_sum(double2 v) {
  __shared__ double2 warp_sums[32];
  for (int off = kWarp / 2; off > 0; off /= 2) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, off);
    v.y += __shfl_xor_sync(0xffffffffu, v.y, off);
  }
  if (threadIdx.x % kWarp == 0) warp_sums[threadIdx.x / kWarp] = v;
  __syncthreads();
  v = make_double2(0.0, 0.0);
  if (threadIdx.x == 0) {
    for (unsigned k = 0; k < blockDim.x / kWarp; ++k)
      v = make_double2(v.x + warp_sums[k].x, v.y + warp_sums[k].y);
  }
  return v;
}

// ---- The two-phase pipeline ----

enum class TaskKind { kNone, kStats, kNormalize };

struct Task {
  TaskKind kind = TaskKind::kNone;
  int64_t sample = 0;
  int64_t index = 0;  // tile index within the sample
};

struct Plan {
  int64_t samples = 1;
  int64_t s_tasks = 1;  // S tasks per sample
  int64_t n_tasks = 1;  // N tasks per sample
  int64_t lag = 1;      // phases between S(n) and N(n)

  __host__ __device__ int64_t phase_size() const { return s_tasks + n_tasks; }
  __host__ __device__ int64_t tickets() const { return (samples + lag) * phase_size(); }

  __device__ Task decode(int64_t ticket) const {
    const int64_t phase = ticket / phase_size(), k = ticket % phase_size();
    const int64_t pairs = s_tasks < n_tasks ? s_tasks : n_tasks;
    bool stats = false;
    int64_t index = 0;
    if (k < 2 * pairs) {
      stats = k % 2 == 0;
      index = k / 2;
    } else {
      stats = s_tasks > n_tasks;
      index = pairs + (k - 2 * pairs);
    }
    Task t;
    t.index = index;
    t.sample = stats ? phase : phase - lag;
    if (t.sample >= 0 && t.sample < samples)
      t.kind = stats ? TaskKind::kStats : TaskKind::kNormalize;
    return t;
  }
};

// The lag that keeps N tasks from waiting: the S tasks of sample n should be at least ~1.5 grids
// of tickets behind the N tasks that read them.
inline int64_t choose_lag(int64_t resident_blocks, int64_t s_tasks, int64_t n_tasks,
                          int64_t samples) {
  const int64_t phase = std::max<int64_t>(s_tasks + n_tasks, 1);
  const int64_t lag = (3 * resident_blocks + 2 * phase - 1) / (2 * phase) + 1;
  return std::clamp<int64_t>(lag, 1, std::max<int64_t>(samples, 1));
}

// The block's next ticket (all threads get the same value). `slot` is a __shared__ int64_t.
__device__ inline int64_t take_ticket(unsigned long long* counter, int64_t* slot) {
  __syncthreads();  // the previous task's readers of *slot are done
  if (threadIdx.x == 0) *slot = static_cast<int64_t>(atomicAdd(counter, 1ull));
  __syncthreads();
  return *slot;
}

// Thread 0 only, after the block's writes were fenced and the block synchronized.
__device__ inline void signal_done(unsigned int* done) {
  __threadfence();
  atomicAdd(done, 1u);
}

// Thread 0 only; the caller synchronizes the block afterwards.
__device__ inline void wait_done(const unsigned int* done, unsigned int expected) {
  for (;;) {
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(done) : "memory");
    if (v >= expected) break;
    __nanosleep(256);
  }
}

}  // namespace kb::gn_pipeline
