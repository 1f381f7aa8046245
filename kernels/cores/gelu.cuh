// GELU in its erf form (F.gelu's default, gelu(v) = v (1 + erf(v / sqrt 2)) / 2) on the FMA pipe
// with one reciprocal, for the epilogues of L2_034 and L2_093 (L2_007 used it until session 21,
// when its whole sigmoid(gelu(r)) became one cubic table: kernels/cores/cubic_table).
//
// erf(x) = 1 - P(x)^-16 for x >= 0 (Abramowitz & Stegun 7.1.28, |error| <= 3e-7), P a degree-6
// polynomial with 1 / sqrt 2 folded into its coefficients, so q = P(|v|)^-16 = erfc(|v| / sqrt 2)
// and gelu(v) = v (1 - q / 2) for v > 0, v q / 2 otherwise (no cancellation on either side).
// Cost: 6 FFMA, 4 FMUL and MUFU.RCP, ~16 instructions; CUDA's accurate erff is ~30 with both of
// its polynomial ranges evaluated and selected. Error against gelu in double (the same steps in
// fp32, 400,001 points each side): <= 9.6e-7 on [0, 20] (the fp32 rounding of gelu near 16),
// <= 5e-7 on [-20, 0); tests/gpu/gelu_test.cu holds the device to 1.2e-6. P^16 overflows to inf
// past |v| ~ 12: q = 0 there (gelu = v or 0). Non-finite v as the erf formula gives them:
// gelu(+inf) = +inf, gelu(-inf) = -inf * 0 = NaN, NaN stays NaN.
//
// Thread safety: a pure device function.
#pragma once

#include <cuda_runtime.h>

namespace kb::custom {

// erfc(a / sqrt 2) = P(a)^-16 for a >= 0; 0 once P^16 overflows (a past ~12).
__device__ __forceinline__ float erfc_over_sqrt2_fast(float a) {
  float p = fmaf(a, 5.382975e-06f, 4.889064e-05f);  // a6 / 2^3, a5 / 2^2.5
  p = fmaf(p, a, 3.800357e-05f);                    // a4 / 2^2
  p = fmaf(p, a, 3.277626e-03f);                    // a3 / 2^1.5
  p = fmaf(p, a, 2.114101e-02f);                    // a2 / 2
  p = fmaf(p, a, 4.986735e-02f);                    // a1 / 2^0.5
  p = fmaf(p, a, 1.0f);
  p *= p;  // P^2
  p *= p;  // P^4
  p *= p;  // P^8
  p *= p;  // P^16
  return __fdividef(1.0f, p);
}

// gelu(v) for any v: v (1 - q / 2), not v - v q / 2, so that +inf stays +inf (not inf - inf * 0).
__device__ __forceinline__ float gelu_erf_fast(float v) {
  const float q = erfc_over_sqrt2_fast(fabsf(v));
  return v > 0.f ? v * fmaf(-0.5f, q, 1.0f) : 0.5f * v * q;
}

}  // namespace kb::custom
