// L2_021's activation, one definition for all of its kernels (custom.cu, wgmma_rows.cuh).
// Thread safety: a pure device function.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cores/group_norm_pipeline/pipeline.cuh"

namespace kb::custom::L2_021 {

// 1 / d for d >= 1 (or NaN), rounded as the IEEE division rounds it: the hardware reciprocal and
// one Newton step, the division's own fast path, without its branch to the slow path (taken only
// for extreme exponents). d is first clamped to 2^126 (NaN kept: min.NaN), so the Newton step
// never meets inf * 0. For 1 <= d < 2^126 the result is the division's bit for bit; above it is
// 2^-126 where the division gives a subnormal or 0 (sigmoid arguments below -87).
__device__ __forceinline__ float reciprocal_from_one(float d) {
  float r;
  asm("min.NaN.f32 %0, %0, 0f7E800000;" : "+f"(d));  // 2^126
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return fmaf(r, fmaf(-d, r, 1.0f), r);
}

// sigmoid((y + bias) * scale), rounded as the reference rounds it (fp32 add, mul, then
// 1 / (1 + expf(-t)): the accurate expf and the IEEE division's rounding). GroupNorm divides by
// the group's standard deviation, which is tiny for small groups (the odd fixture has one channel
// of 35 values per group): the approximate ex2/rcp pair and a -log2(e) folded into the scale cost
// 4x the tolerance there.
__device__ __forceinline__ float activation(float y, float bias, float scale) {
  const float t = (y + bias) * scale;
  return reciprocal_from_one(1.0f + expf(-t));
}

// The statistics' sigmoid argument -log2(e) ((y + conv_bias) + bias) scale as one FMA of the
// conv's raw sum y: fmaf(y, slope, offset).
struct SigmoidExponent {
  float slope, offset;
};
__host__ __device__ inline SigmoidExponent sigmoid_exponent(float conv_bias, float bias,
                                                            float scale) {
  const float slope = scale * gn_pipeline::kNegLog2e;
  return {slope, (conv_bias + bias) * slope};
}

// sigmoid(((y + conv_bias) + bias) * scale) for the statistics only: the argument as one FMA
// (sigmoid_exponent), then 2^x and 1 / (1 + 2^x) by one MUFU instruction each (ex2.approx,
// rcp.approx): 4 instructions against activation()'s ~20. Its values differ from activation()'s
// by ~2^-21.7 relatively for g >= 0.01 and by ~2e-8 absolutely below (t's rounding); used where a
// group holds many values (the wgmma path's statistics pass), whose mean and variance average the
// differences, while the stored values stay activation()'s.
__device__ __forceinline__ float statistics_activation(float y, SigmoidExponent x) {
  return gn_pipeline::rcp_approx(1.0f + gn_pipeline::ex2_approx(fmaf(y, x.slope, x.offset)));
}

// sigmoid(((y + conv_bias) + bias) * scale) for the stored values of the wgmma path: the
// statistics' argument (one FMA, sigmoid_exponent) and 2^x by ex2.approx, then the rounded
// division 1 / (1 + 2^x) (reciprocal_from_one). Against activation(): ~2^-21 relatively where
// 2^x is near 1, more where the argument is large (its rounding is relative to |t| log2(e)),
// which GroupNorm divides by the group's standard deviation. So it is used only where a group
// holds many values (custom.cu's kMinGroupChannels gate). Session 52's H100 test against a
// double golden (3 x 96 groups, nominal): worst error 0.128x -> 0.165x the tolerance; the
// robustness verdicts at the robust and wgmma presets as activation()'s (H100, session 53). The
// store pass's sm_90a code: 3,152 -> 2,648 instructions, spills 68 -> 8 bytes.
__device__ __forceinline__ float store_activation(float y, SigmoidExponent x) {
  return reciprocal_from_one(1.0f + gn_pipeline::ex2_approx(fmaf(y, x.slope, x.offset)));
}

}  // namespace kb::custom::L2_021
