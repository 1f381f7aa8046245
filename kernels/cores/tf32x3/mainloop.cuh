// The 3xTF32 GEMM mainloop: the multi-stage cp.async pipeline that walks one CTA tile's k-tiles
// and accumulates in registers. The one copy behind every 3xTF32 GEMM of the pack: L1_003 and
// L3_025 (dense rows, gemm128.cuh + dense_loader.cuh), the conv2d core (im2col gather), the
// pooled conv2d core (L2_010), the transposed-conv parity GEMMs (2-D and 3-D) and L2_034.
//
// Split as in CUTLASS (collective mainloop / epilogue): the mainloop owns only the pipeline; the
// caller owns the tile geometry, the copies, the per-stage MMA and the epilogue.
//   template <kStages, kStageFloats> mainloop(smem, k_tiles, acc, load_stage, mma_stage)
//   - smem: the kernel's dynamic shared memory; kStages stages of kStageFloats floats each, back
//     to back from smem (the stage's own layout, A then B or otherwise, is the caller's).
//   - acc: float[M][N][4] (one m16n8 accumulator tile per [m][n]); zeroed here, then
//     acc += sum over k-tiles of mma_stage.
//   - load_stage(uint32_t stage_saddr, int k_tile) (concept StageLoad): issues the cp.async
//     copies of k-tile `k_tile` into the stage at shared address stage_saddr; no commit, no wait.
//     Called once per k-tile, k_tile increasing, so a loader may keep a cursor it advances.
//   - mma_stage(const float* stage_smem, Acc& acc) (concept StageMma): acc += the stage's
//     product; reads shared memory only. Called once per k-tile, in k order, so it may keep a
//     count of the K left (dense_mainloop's does, to skip the zero-filled k8 steps past K).
//   - On return: this thread's copies have all completed (cp.async.wait_group 0), but no barrier
//     has passed since the last mma_stage: an epilogue that reuses the stages starts with
//     __syncthreads().
// Schedule: the prologue issues k-tiles 0 .. kStages-2, one commit group each (empty groups past
// k_tiles keep the group count uniform); iteration kt waits for k-tile kt (wait_group
// kStages - 2), passes a barrier (every thread's copies landed; the stage read at kt - 1 is
// free), issues k-tile kt + kStages - 1 into that stage, commits, and runs mma_stage on stage
// kt % kStages. One barrier per k-tile.
//
// Thread safety: a device function; every thread of the CTA must call it with the same k_tiles.
#pragma once

#include <cuda_runtime.h>

#include <concepts>
#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::tf32x3 {

template <class F>
concept StageLoad = std::invocable<F&, uint32_t, int>;
template <class F, class Acc>
concept StageMma = std::invocable<F&, const float*, Acc&>;

template <int kStages, int kStageFloats, class Acc, StageLoad Load, StageMma<Acc> Mma>
__device__ __forceinline__ void mainloop(float* smem, int k_tiles, Acc& acc, Load&& load_stage,
                                         Mma&& mma_stage) {
  static_assert(kStages >= 2, "a pipeline needs a stage to load while another is read");
  static_assert(kStageFloats % 4 == 0, "stages start on 16-byte boundaries (16-byte cp.async)");
  constexpr uint32_t kStageBytes = kStageFloats * 4;
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  zero_accumulators(acc);

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage(smem_base + s * kStageBytes, s);
    cp_async_commit();
  }
  int read_stage = 0, write_stage = kStages - 1;
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();  // k-tile kt has landed (this thread's copies)
    __syncthreads();               // ... everyone's; and write_stage (read at kt - 1) is free
    const int next = kt + kStages - 1;
    if (next < k_tiles) load_stage(smem_base + write_stage * kStageBytes, next);
    cp_async_commit();
    mma_stage(smem + read_stage * kStageFloats, acc);
    read_stage = read_stage == kStages - 1 ? 0 : read_stage + 1;
    write_stage = write_stage == kStages - 1 ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();  // only empty groups can be pending here; keep the exit clean
}

}  // namespace kb::tf32x3
