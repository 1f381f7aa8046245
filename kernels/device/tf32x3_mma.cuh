// Device primitives of the error-compensated TF32 ("3xTF32") kernels: operand splitting, the
// m16n8k8 TF32 tensor-core MMA, and cp.async. Shared by every 3xTF32 kernel of the pack
// (L1_003's GEMM, the conv2d / transposed-conv / ShuffleNet / attention cores).
//
// 3xTF32: x = big + small + r with big = tf32(x), small = tf32(x - big) (x - big is exact), both
// rounded to nearest (never truncated: truncation's bias accumulates over long sums); a product is
// small*big + big*small + big*big in fp32 accumulators (small*small dropped), ~fp32 accuracy.
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
static_assert(tf32_rna_bits(0x3f800fffu) == 0x3f800000u && tf32_rna_bits(0x3f801000u) == 0x3f802000u &&
                  tf32_rna_bits(0xbf801000u) == 0xbf802000u && tf32_rna_bits(0x3fffffffu) == 0x40000000u,
              "round to nearest, ties away from zero, carry into the exponent");

struct SplitTf32 {
  uint32_t big, small;  // x = big + small + r, |r| <= 2^-22 |x|; both exact TF32 values
};
__device__ __forceinline__ SplitTf32 split_tf32(float x) {
  const uint32_t big = tf32_rna_bits(__float_as_uint(x));
  return {big, tf32_rna_bits(__float_as_uint(x - __uint_as_float(big)))};  // x - big is exact
}

// d += a * b on one m16n8k8 tile; a: 4 tf32 (a0..a3), b: 2 tf32 (b0, b1), d: 4 fp32.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
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
