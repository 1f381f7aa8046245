// Device primitives of the error-compensated TF32 ("3xTF32") kernels: operand splitting, the
// m16n8k8 TF32 tensor-core MMA, accumulator zeroing, and cp.async. Shared by every 3xTF32 kernel
// of the pack (L1_003's GEMM, the conv2d / transposed-conv / ShuffleNet / attention cores); the
// pipeline that drives them is mainloop.cuh.
//
// 3xTF32: x = big + small + r with big = tf32(x), small = tf32(x - big) (x - big is exact), both
// rounded to nearest (never truncated: truncation's bias accumulates over long sums); a product is
// small*big + big*small + big*big in fp32 accumulators (small*small dropped), ~fp32 accuracy
// when the accumulation is promoted out of the MMA accumulator often enough (mma3_k8_promoted).
//
// Thread safety: device functions without state.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kb::tf32x3 {

// Round to TF32 (10 mantissa bits), to nearest with ties away from zero, as an fp32 bit pattern
// with the 13 low bits cleared: the value cvt.rna.tf32.f32 gives for every finite input and +-inf,
// in 2 instructions instead of ~3, and the MMA gets clean TF32 operands. Caveat: a NaN whose
// mantissa is >= 0x7ff000 (e.g. the GPU's 0x7fffffff) carries into the sign and becomes -0.
__host__ __device__ constexpr uint32_t tf32_rna_bits(uint32_t fp32_bits) {
  return (fp32_bits + 0x1000u) & 0xffffe000u;
}
static_assert(tf32_rna_bits(0x3f800fffu) == 0x3f800000u &&
                  tf32_rna_bits(0x3f801000u) == 0x3f802000u &&
                  tf32_rna_bits(0xbf801000u) == 0xbf802000u &&
                  tf32_rna_bits(0x3fffffffu) == 0x40000000u,
              "round to nearest, ties away from zero, carry into the exponent");

struct SplitTf32 {
  uint32_t big, small;  // x = big + small + r, |r| <= 2^-22 |x|; both exact TF32 values
};
__device__ __forceinline__ SplitTf32 split_tf32(float x) {
  const uint32_t big = tf32_rna_bits(__float_as_uint(x));
  return {big, tf32_rna_bits(__float_as_uint(x - __uint_as_float(big)))};  // x - big is exact
}

// An A fragment (a0..a3 of one m16 tile and k8 step) split into its big and small TF32 parts.
__device__ __forceinline__ void split_tf32_frag(const float (&src)[4], uint32_t (&big)[4],
                                                uint32_t (&small)[4]) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const SplitTf32 x = split_tf32(src[e]);
    big[e] = x.big, small[e] = x.small;
  }
}

// Four consecutive values split into their big and small parts, as two float4s (for 16-byte
// shared-memory stores of operand tiles).
__device__ __forceinline__ void split_tf32_quad(const float* src, float4& big, float4& small) {
  float b[4], s[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const SplitTf32 x = split_tf32(src[e]);
    b[e] = __uint_as_float(x.big), s[e] = __uint_as_float(x.small);
  }
  big = make_float4(b[0], b[1], b[2], b[3]);
  small = make_float4(s[0], s[1], s[2], s[3]);
}

// b_i (i = 0: b0, 1: b1) of four n8 tiles, held as one float4 (component nt: n-tile nt), split
// into their big and small parts.
__device__ __forceinline__ void split_tf32_b_quad(const float4& v, int i, uint32_t (&big)[4][2],
                                                  uint32_t (&small)[4][2]) {
  const float comp[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int nt = 0; nt < 4; ++nt) {
    const SplitTf32 x = split_tf32(comp[nt]);
    big[nt][i] = x.big, small[nt][i] = x.small;
  }
}

// (a_half, a_{half + 2}) of an A fragment (one row at logical k = t and t + 4, held as one float2)
// split into their big and small parts.
__device__ __forceinline__ void split_tf32_a_pair(const float2& v, int half, uint32_t (&big)[4],
                                                  uint32_t (&small)[4]) {
  const SplitTf32 x = split_tf32(v.x), y = split_tf32(v.y);
  big[half] = x.big, small[half] = x.small;
  big[half + 2] = y.big, small[half + 2] = y.small;
}

// d += a * b on one m16n8k8 tile; a: 4 tf32 (a0..a3), b: 2 tf32 (b0, b1), d: 4 fp32.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = a * b on one m16n8k8 tile, the accumulator input zero: opens a promotion period.
__device__ __forceinline__ void mma_tf32_zero(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                              uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%10,%10,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}

// acc[nt] += the 3xTF32 product of one k8 step (one m16 tile x kNT n8 tiles), summed in the MMA
// accumulators: the two small products first, then big * big, with kNT independent tiles between
// two MMAs on the same accumulator. kFromZero: acc's input is taken as zero (acc = the product),
// the first step of a promotion period that spans several k8 steps.
template <int kNT, bool kFromZero = false>
__device__ __forceinline__ void mma3_k8(float (&acc)[kNT][4], const uint32_t (&a_big)[4],
                                        const uint32_t (&a_small)[4],
                                        const uint32_t (&b_big)[kNT][2],
                                        const uint32_t (&b_small)[kNT][2]) {
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
    if constexpr (kFromZero)
      mma_tf32_zero(acc[nt], a_small, b_big[nt][0], b_big[nt][1]);
    else
      mma_tf32(acc[nt], a_small, b_big[nt][0], b_big[nt][1]);
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) mma_tf32(acc[nt], a_big, b_small[nt][0], b_small[nt][1]);
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) mma_tf32(acc[nt], a_big, b_big[nt][0], b_big[nt][1]);
}

// acc[nt] += the 3xTF32 product of one k8 step (one m16 tile x kNT n8 tiles), with the
// accumulation promoted every k8 step: the step's three MMAs (small terms first, then big x big)
// sum into a fresh MMA accumulator, which then goes into acc by ordinary FADD. Why: the tensor
// core aligns the addends to the largest exponent and rounds toward zero (Fasi, Higham, Mikaitis,
// Pranesh 2021, "Numerical behavior of NVIDIA tensor cores"), so a long sum kept in the MMA
// accumulator loses up to an ulp of the running sum per MMA, always toward zero: its error grows
// ~linearly with the number of MMAs (K = 1,296 -> 486 MMAs: ~14-20x the fp32-FMA error in the
// scratch model of such an MMA, and the robustness trials' shifted / scaled inputs flagged it).
// Promoted, each MMA truncates only against its k8 partial sum, and the running sum rounds to
// nearest once per step (~sqrt(steps) growth): 0.3-0.5x the fp32-FMA error in the same model.
// Cost: 4 FADD per tile and step (4 per 3 MMAs, on the FMA pipe, not the tensor pipe) and 4 kNT
// registers for the step's partial sums; the accumulator's dependency chain gets shorter (the
// next step's MMAs no longer wait for this step's).
// d = a * b + 0 * after (+-0 unless `after` is inf or NaN): the zero-start MMA, made to wait for
// `after`, so that ptxas keeps the steps in order as with one accumulator (kChained below).
__device__ __forceinline__ void mma_tf32_zero_after(float (&d)[4], const uint32_t (&a)[4],
                                                    uint32_t b0, uint32_t b1, float after) {
  float z;
  asm("mul.rn.f32 %0, %1, 0f00000000;" : "=f"(z) : "f"(after));
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%10,%10,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
}

template <int kNT, int kGroup = kNT, bool kChained = false>
__device__ __forceinline__ void mma3_k8_promoted(float (&acc)[kNT][4], const uint32_t (&a_big)[4],
                                                 const uint32_t (&a_small)[4],
                                                 const uint32_t (&b_big)[kNT][2],
                                                 const uint32_t (&b_small)[kNT][2]) {
  static_assert(kNT % kGroup == 0, "whole groups of n8 tiles");
#pragma unroll
  for (int n0 = 0; n0 < kNT; n0 += kGroup) {
    float part[kGroup][4];
#pragma unroll
    for (int i = 0; i < kGroup; ++i)
      if constexpr (kChained)
        mma_tf32_zero_after(part[i], a_small, b_big[n0 + i][0], b_big[n0 + i][1], acc[n0 + i][3]);
      else
        mma_tf32_zero(part[i], a_small, b_big[n0 + i][0], b_big[n0 + i][1]);
#pragma unroll
    for (int i = 0; i < kGroup; ++i)
      mma_tf32(part[i], a_big, b_small[n0 + i][0], b_small[n0 + i][1]);
#pragma unroll
    for (int i = 0; i < kGroup; ++i) mma_tf32(part[i], a_big, b_big[n0 + i][0], b_big[n0 + i][1]);
#pragma unroll
    for (int i = 0; i < kGroup; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[n0 + i][e] += part[i][e];
  }
}

// acc = 0 for kM x kN m16n8 accumulator tiles.
template <int kM, int kN>
__device__ __forceinline__ void zero_accumulators(float (&acc)[kM][kN][4]) {
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int n = 0; n < kN; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[m][n][e] = 0.0f;
}

// 16- and 4-byte asynchronous copies global -> shared; `valid` false zero-fills the destination.
__device__ __forceinline__ void cp_async_16(uint32_t smem, const float* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_16(uint32_t smem, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(src) : "memory");
}
// A 16-byte copy of which only the first src_bytes (0 .. 16) are read; the rest is zero-filled.
__device__ __forceinline__ void cp_async_16_part(uint32_t smem, const float* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_4(uint32_t smem, const float* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(smem), "l"(src),
               "r"(valid ? 4 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

}  // namespace kb::tf32x3
