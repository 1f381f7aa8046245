// The 128 x 128 x 32 3xTF32 GEMM tile: its geometry, the shared-memory swizzles, every index map
// (global -> shared -> fragment -> C, __host__ __device__ constexpr: one CTA tile is emulated
// through them on the host by tests/host_cuda/gemm128_maps_test.cu) and the per-stage MMA
// (mma_stage), for the mainloop of mainloop.cuh. Users: L1_003 and L3_025 (with dense_loader.cuh),
// the conv2d core (its im2col gather), and the 64-row CTA of the pooled conv2d core, which shares
// the stage layout, fragment maps and mma_stage (a warp tile of 64 x 32 over 32 k x 128 columns per
// stage; its own copy slots for 4 warps). Loaders and epilogues stay with their kernels.
//
// Precision (error-compensated TF32, "3xTF32"): each operand x is split into
//   big = tf32_rna(x)  (round to nearest, ties away: the value of cvt.rna.tf32.f32, computed with
//   two integer ops, see tf32_rna_bits),  small = tf32_rna(x - big)
// (x - big is exact in fp32), so x = big + small + r with |r| <= 2^-22 |x|. The product is
// a_big*b_small + a_small*b_big + a_big*b_big (small*small, <= 2^-22 |ab|, dropped), the two
// small products first. Tensor-core products of TF32 values are exact; sums are fp32.
// Error estimate for L1_003, K = 1024, A, B ~ U[0, 1) (outputs ~256, allowed 1e-4 + 1e-4 * 256
// ~ 0.026):
//  - operand split + dropped term: <= ~3 * 2^-22 relative per product, random sign: ~3e-6 rms
//    per output (worst-case same-sign bound 1024 * 0.25 * 7e-7 = 2e-4);
//  - fp32 accumulation: 3 MMAs per k8 step = 384 accumulations into one fp32 accumulator
//    (ulp 1.5e-5 .. 3e-5 near the end). With round-to-nearest sums ~1e-4; even if the tensor core
//    truncates its sums (biased, as measured on V100/A100) the bound is 384 * ~1.5e-5 = 6e-3.
//  Host emulation of this tile (index maps, splits, m16n8k8 fragments; K = 1024, 256 x 256
//  outputs, U[0, 1)): max |err| 3.3e-4 with round-to-nearest MMA sums (1.2% of the budget),
//  2.5e-3 with truncating MMA sums (9%); an fp32 loop gives 5.3e-4, plain TF32-RN 1.2e-2 (47%).
//
// Tiling: CTA tile 128 x 128, K step 32, 3-stage cp.async pipeline (96 KB shared memory, two
// CTAs per SM), 8 warps as 2 (M) x 4 (N), warp tile 64 x 32 = 4 x 4 m16n8 tiles.
//  - Shared A stage: [128 rows][32 k], 16-byte chunks XOR-swizzled by row (chunk ^ 2*(row & 3)).
//    Fragments: for k8 step s the MMA's logical k = t and t + 4 take physical k = 8s + 2t and
//    8s + 2t + 1, so (a0, a2) and (a1, a3) are one 8-byte load each, conflict-free.
//  - Shared B stage: [32 k][128 n], chunks swizzled by k (chunk ^ 2*((k >> 1) & 3)). Within a
//    warp's 32 columns the MMA's logical column j of n-tile nt is physical column 4j + nt, so a
//    thread's B values for the 4 n-tiles are one 16-byte load, and its C values are 8 adjacent
//    columns (two 16-byte stores per row).
//  - Out-of-range rows, columns and k are zero-filled by cp.async (src-size 0), stores guarded.
//    Vector path: 16-byte copies (needs K % 4 == 0, N % 4 == 0 and 16-byte aligned pointers);
//    scalar path: 4-byte copies and scalar stores, for any shape.
//
// Thread safety: constexpr maps and device functions; no state.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::gemm128 {

constexpr int kBM = 128;       // CTA tile rows (M)
constexpr int kBN = 128;       // CTA tile columns (N)
constexpr int kBK = 32;        // K per pipeline stage
constexpr int kStages = 3;     // cp.async stages in flight
constexpr int kThreads = 256;  // 8 warps
constexpr int kWarpsM = 2;
constexpr int kWarpsN = 4;
constexpr int kWarpTileM = kBM / kWarpsM;    // 64
constexpr int kWarpTileN = kBN / kWarpsN;    // 32
constexpr int kMmaTilesM = kWarpTileM / 16;  // 4 m16 tiles per warp
constexpr int kMmaTilesN = kWarpTileN / 8;   // 4 n8 tiles per warp
constexpr int kKSteps = kBK / 8;             // 4 k8 steps per stage
constexpr int kStageFloatsA = kBM * kBK;
constexpr int kStageFloatsB = kBK * kBN;
constexpr int kSmemBytes = kStages * (kStageFloatsA + kStageFloatsB) * 4;  // 98,304

static_assert(kWarpsM * kWarpsN * 32 == kThreads, "one warp per warp tile");
static_assert(kMmaTilesN == 4, "a thread's B values for its n-tiles are one float4");
static_assert(kBK == 32 && kBN == 128 && kBM == 128, "the swizzles below assume 32 x 128 tiles");
static_assert(kBM * kBK / 4 == 4 * kThreads && kBK * kBN / 4 == 4 * kThreads,
              "vector path: each thread copies 4 chunks of A and 4 of B per stage");
static_assert(kBM * kBK == 16 * kThreads && kBK * kBN == 16 * kThreads,
              "scalar path: each thread copies 16 floats of A and 16 of B per stage");
static_assert(kSmemBytes * 2 <= 227 * 1024, "two CTAs per SM");

// ---- shared-memory layouts (element index within one stage) ----

// A(row, k), row < 128, k < 32: 8 chunks of 4 floats per row, chunk ^= 2 * (row & 3).
__host__ __device__ constexpr int a_smem_index(int row, int k) {
  return row * kBK + ((((k >> 2) ^ ((row & 3) << 1))) << 2) + (k & 3);
}
// B(k, n), k < 32, n < 128: 32 chunks per row, chunk ^= 2 * ((k >> 1) & 3) (stays in its 8-group).
__host__ __device__ constexpr int b_smem_index(int k, int n) {
  return k * kBN + ((((n >> 2) ^ (((k >> 1) & 3) << 1))) << 2) + (n & 3);
}

// ---- global -> shared copy slots ----

struct CopySlot {
  int row;   // row within the tile (A: m, B: k)
  int col;   // first column within the tile (A: k, B: n)
  int smem;  // element index in the stage
};
// Vector path: chunk j (< 4) of thread tid; 8 lanes cover one 128-byte row segment.
__host__ __device__ constexpr CopySlot a_copy_vec(int tid, int j) {
  return {(tid >> 3) + 32 * j, (tid & 7) * 4, a_smem_index((tid >> 3) + 32 * j, (tid & 7) * 4)};
}
__host__ __device__ constexpr CopySlot b_copy_vec(int tid, int j) {
  return {(tid >> 5) + 8 * j, (tid & 31) * 4, b_smem_index((tid >> 5) + 8 * j, (tid & 31) * 4)};
}
// Scalar path: element j (< 16) of thread tid; a warp covers 32 consecutive columns of a row.
__host__ __device__ constexpr CopySlot a_copy_scalar(int tid, int j) {
  return {(tid >> 5) + 8 * j, tid & 31, a_smem_index((tid >> 5) + 8 * j, tid & 31)};
}
__host__ __device__ constexpr CopySlot b_copy_scalar(int tid, int j) {
  return {(tid >> 7) + 2 * j, tid & 127, b_smem_index((tid >> 7) + 2 * j, tid & 127)};
}

// ---- shared -> fragment maps (lane: g = lane / 4, t = lane % 4) ----

// The float2 at this index holds (a0, a2) for half 0 or (a1, a3) for half 1 of m-tile mt in
// k8 step s: A(row = 64 warp_m + 16 mt + 8 half + g, k = 8 s + 2 t + {0, 1}).
__host__ __device__ constexpr int a_frag_index(int warp_m, int lane, int s, int mt, int half) {
  return a_smem_index(warp_m * kWarpTileM + mt * 16 + half * 8 + (lane >> 2),
                      8 * s + 2 * (lane & 3));
}
// The float4 at this index holds b_i (i = 0: b0, 1: b1) of the 4 n-tiles in k8 step s:
// B(k = 8 s + 2 t + i, n = 32 warp_n + 4 g + {0, 1, 2, 3}); component nt belongs to n-tile nt.
__host__ __device__ constexpr int b_frag_index(int warp_n, int lane, int s, int i) {
  return b_smem_index(8 * s + 2 * (lane & 3) + i, warp_n * kWarpTileN + 4 * (lane >> 2));
}
// Row and first column (within the CTA tile) of the two float4s a thread stores for m-tile mt,
// row half `half` (0: c0/c1 rows, 1: c2/c3 rows); vec 0 holds c_{2 half} of n-tiles 0..3, vec 1
// holds c_{2 half + 1}.
__host__ __device__ constexpr int c_row(int warp_m, int lane, int mt, int half) {
  return warp_m * kWarpTileM + mt * 16 + half * 8 + (lane >> 2);
}
__host__ __device__ constexpr int c_col(int warp_n, int lane, int vec) {
  return warp_n * kWarpTileN + 8 * (lane & 3) + 4 * vec;
}

// ---- the same maps as one per-thread base plus compile-time constants (what the kernel uses) ----

// k8 step s only flips bits 3-4 of the A index (the swizzled chunk); m-tile and half add rows.
__host__ __device__ constexpr int a_frag_fast(int base, int s, int mt, int half) {
  return (base ^ (8 * s)) + (mt * 16 + half * 8) * kBK;
}
__host__ __device__ constexpr int b_frag_fast(int base, int s, int i) {
  return base + (8 * s + i) * kBN;
}
__host__ __device__ constexpr int a_copy_vec_fast(int base, int j) {
  return base + 32 * j * kBK;
}
__host__ __device__ constexpr int b_copy_vec_fast(int base, int j) {
  return base + 8 * j * kBN;
}
__host__ __device__ constexpr int a_copy_scalar_fast(int base, int j) {
  return base + 8 * j * kBK;
}
// Copy j's row 2j + (tid >> 7) has (k >> 1) & 3 == j & 3: its swizzle flips bits 3-4 by j & 3.
__host__ __device__ constexpr int b_copy_scalar_fast(int base, int j) {
  return (base ^ ((j & 3) << 3)) + 2 * j * kBN;
}

constexpr bool fast_maps_match() {
  for (int lane = 0; lane < 32; ++lane)
    for (int w = 0; w < 4; ++w)
      for (int s = 0; s < kKSteps; ++s) {
        for (int i = 0; i < 2; ++i)
          if (b_frag_fast(b_frag_index(w, lane, 0, 0), s, i) != b_frag_index(w, lane, s, i))
            return false;
        for (int mt = 0; mt < kMmaTilesM; ++mt)
          for (int half = 0; half < 2 && w < kWarpsM; ++half)
            if (a_frag_fast(a_frag_index(w, lane, 0, 0, 0), s, mt, half) !=
                a_frag_index(w, lane, s, mt, half))
              return false;
      }
  for (int tid = 0; tid < kThreads; ++tid) {
    for (int j = 0; j < 4; ++j)
      if (a_copy_vec_fast(a_copy_vec(tid, 0).smem, j) != a_copy_vec(tid, j).smem ||
          b_copy_vec_fast(b_copy_vec(tid, 0).smem, j) != b_copy_vec(tid, j).smem)
        return false;
    for (int j = 0; j < 16; ++j)
      if (a_copy_scalar_fast(a_copy_scalar(tid, 0).smem, j) != a_copy_scalar(tid, j).smem ||
          b_copy_scalar_fast(b_copy_scalar(tid, 0).smem, j) != b_copy_scalar(tid, j).smem)
        return false;
  }
  return true;
}
static_assert(fast_maps_match(), "per-thread base + constant offsets must equal the index maps");

// ---- device primitives ----

// This thread's lane and warp coordinates in the kWarpsM x kWarpsN warp grid (warp_m fastest).
struct WarpPos {
  int lane, warp_m, warp_n;
};
__device__ __forceinline__ WarpPos warp_pos() {
  const int warp = threadIdx.x >> 5;
  return {static_cast<int>(threadIdx.x & 31), warp % kWarpsM, warp / kWarpsM};
}

// 3xTF32 and cp.async primitives: kernels/cores/tf32x3/mma.cuh.
using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::mma3_k8;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::SplitTf32;
using ::kb::tf32x3::tf32_rna_bits;

// The k8 steps of a stage that hold any of the k_left multiplications still to do: 4, or fewer
// in the stage where K ends (the steps past it are zero-filled, their products zero).
__host__ __device__ constexpr int stage_k_steps(int k_left) {
  return k_left >= kBK ? kKSteps : (k_left + 7) / 8;
}
static_assert(stage_k_steps(240 - 7 * kBK) == 2 && stage_k_steps(33) == kKSteps &&
                  stage_k_steps(1) == 1,
              "K = 240 ends after 2 k8 steps of its eighth stage");

// acc += the 3xTF32 product of one shared stage (its first k_steps k8 steps, at most 4: a K
// that ends inside the stage skips the zero-filled steps past it). B is split once per k8 step
// and kept; A is split one m-tile at a time (register pressure: two CTAs per SM leave 128 per
// thread). a_base = a_frag_index(warp_m, lane, 0, 0, 0); b_base = (floats of the A stage) +
// b_frag_index(warp_n, lane, 0, 0): nothing here depends on the CTA's row count.
__device__ __forceinline__ void mma_stage(const float* stage, int a_base, int b_base,
                                          float (&acc)[kMmaTilesM][kMmaTilesN][4],
                                          int k_steps = kKSteps) {
#pragma unroll 1  // unrolled, ptxas hoists the next step's loads and exceeds 128 registers
  for (int s = 0; s < k_steps; ++s) {
    uint32_t b_big[kMmaTilesN][2], b_small[kMmaTilesN][2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tf32x3::split_tf32_b_quad(*reinterpret_cast<const float4*>(stage + b_frag_fast(b_base, s, i)),
                                i, b_big, b_small);
    }
#pragma unroll
    for (int mt = 0; mt < kMmaTilesM; ++mt) {
      uint32_t a_big[4], a_small[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        tf32x3::split_tf32_a_pair(
            *reinterpret_cast<const float2*>(stage + a_frag_fast(a_base, s, mt, half)), half, a_big,
            a_small);
      }
      mma3_k8(acc[mt], a_big, a_small, b_big, b_small);  // small terms first
    }
  }
}

}  // namespace kb::custom::gemm128
