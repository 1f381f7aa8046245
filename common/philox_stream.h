// The element formulas of kbfleet's deterministic generator, shared by host and device code.
//
// Element i of a tensor stream is a pure function of (key, i): Philox4x32-10 (Random123) with
// key = {seed_lo, seed_hi} and counter = {block_lo, block_hi, stream, trial}. Everything after the
// random words uses only correctly rounded IEEE operations (add, mul, div, sqrt, fma, exact bit
// manipulation), never a library transcendental, and never a multiply-add the compiler could
// contract: on the device every step is an explicit __*_rn intrinsic, on the host a plain
// operation in a translation unit compiled with -ffp-contract=off. So the host and the device
// produce bit-identical floats. The transcendentals (log, exp, sin/cos) are our own polynomial
// evaluations in double, accurate to a few ulp of double, which is far below fp32's resolution.
//
// Thread safety: pure functions.
#pragma once

#include <Random123/philox.h>

#include <cstdint>
#include <cstring>

#include "common/host_device.h"

namespace kb::philox {

struct StreamKey {
  uint32_t seed_lo = 0;
  uint32_t seed_hi = 0;
  uint32_t stream = 0;  // tensor_stream_id(problem, tensor)
  uint32_t trial = 0;
};

// --- IEEE operations that no compiler may fuse --------------------------------------------------
KB_HD double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
KB_HD double dsub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
KB_HD double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
KB_HD double ddiv(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
KB_HD double dsqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return __builtin_sqrt(a);
#endif
}
KB_HD double dfma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return __builtin_fma(a, b, c);
#endif
}
KB_HD float fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
KB_HD float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
KB_HD float fsub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

KB_HD uint64_t double_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
KB_HD double bits_double(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// --- random words ---------------------------------------------------------------------------------
KB_HD r123::Philox4x32::ctr_type block(const StreamKey& k, uint64_t index) {
  r123::Philox4x32 rng;
  r123::Philox4x32::ctr_type ctr = {{static_cast<uint32_t>(index),
                                     static_cast<uint32_t>(index >> 32), k.stream, k.trial}};
  r123::Philox4x32::key_type key = {{k.seed_lo, k.seed_hi}};
  return rng(ctr, key);
}

// Word i of the stream: words 4b..4b+3 come from block b.
KB_HD uint32_t word(const StreamKey& k, uint64_t i) { return block(k, i >> 2)[i & 3]; }

// torch.rand's distribution: U[0, 1) with 24 random bits, exact in fp32.
KB_HD float uniform_from_word(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }
KB_HD float uniform(const StreamKey& k, uint64_t i) { return uniform_from_word(word(k, i)); }

// U(-bound, bound): 2u - 1 is exact in fp32, so the only rounding is the final product.
KB_HD float symmetric_uniform(const StreamKey& k, uint64_t i, float bound) {
  float u = uniform(k, i);
  return fmul(bound, fsub(fmul(2.0f, u), 1.0f));
}

// A robustness distribution's move of a drawn value: scale * x + shift, two roundings (never fused).
KB_HD float affine(float x, float scale, float shift) { return fadd(fmul(scale, x), shift); }

// --- deterministic transcendentals in double ------------------------------------------------------
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln 2 split so that k*kLn2Hi is exact
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kPiOver2Hi = 1.57079632673412561417e+00;  // pi/2 split likewise
constexpr double kPiOver2Lo = 6.07710050650619224932e-11;
constexpr double kTwoPi = 6.28318530717958647692;

// 1/n! for n = 0..count-1. Each factorial is exact in double (n <= 22) and each quotient is one
// correctly rounded division, so host and device get the same coefficients.
KB_HD void inverse_factorials(double* out, int count) {
  double fact = 1.0;
  for (int n = 0; n < count; ++n) {
    if (n > 0) fact = dmul(fact, static_cast<double>(n));
    out[n] = ddiv(1.0, fact);
  }
}

// ln(x) for x > 0 (normal numbers): x = m * 2^e with m in [sqrt(1/2), sqrt(2)),
// ln m = 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.172, by its odd series to s^25.
KB_HD double log_positive(double x) {
  uint64_t bits = double_bits(x);
  int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  double m = bits_double((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  if (m > 1.4142135623730951) {
    m = dmul(m, 0.5);
    e += 1;
  }
  double s = ddiv(dsub(m, 1.0), dadd(m, 1.0));
  double s2 = dmul(s, s);
  double p = ddiv(1.0, 25.0);
  for (int n = 23; n >= 1; n -= 2) p = dfma(p, s2, ddiv(1.0, static_cast<double>(n)));
  double ln_m = dmul(2.0, dmul(s, p));
  double de = static_cast<double>(e);
  return dadd(dfma(de, kLn2Hi, ln_m), dmul(de, kLn2Lo));
}

// e^x for x in [-700, 700]: x = k ln2 + r, |r| <= ln2/2, Taylor to r^16, scaled by 2^k exactly.
KB_HD double exp_bounded(double x) {
  double k = static_cast<double>(
      static_cast<int64_t>(dadd(dmul(x, 1.4426950408889634), x >= 0 ? 0.5 : -0.5)));
  double r = dsub(dsub(x, dmul(k, kLn2Hi)), dmul(k, kLn2Lo));
  double c[17];
  inverse_factorials(c, 17);
  double p = c[16];
  for (int n = 15; n >= 0; --n) p = dfma(p, r, c[n]);
  uint64_t scale = static_cast<uint64_t>(static_cast<int64_t>(k) + 1023) << 52;
  return dmul(p, bits_double(scale));
}

// sin and cos of r for |r| <= pi/4: sin r = r * sum_j (-1)^j r^2j/(2j+1)!, j <= 8;
// cos r = sum_j (-1)^j r^2j/(2j)!, j <= 9.
KB_HD void sincos_reduced(double r, double* s, double* c) {
  double inv[19];
  inverse_factorials(inv, 19);
  double r2 = dmul(r, r);
  double ps = inv[17];  // j = 8: sign +
  for (int j = 7; j >= 0; --j) ps = dfma(ps, r2, (j % 2 ? -inv[2 * j + 1] : inv[2 * j + 1]));
  double pc = -inv[18];  // j = 9: sign -
  for (int j = 8; j >= 0; --j) pc = dfma(pc, r2, (j % 2 ? -inv[2 * j] : inv[2 * j]));
  *s = dmul(r, ps);
  *c = pc;
}

// cos(theta) for theta in [0, 2 pi).
KB_HD double cos_of_angle(double theta) {
  double k = static_cast<double>(static_cast<int64_t>(dadd(dmul(theta, 0.6366197723675814), 0.5)));
  double r = dsub(dsub(theta, dmul(k, kPiOver2Hi)), dmul(k, kPiOver2Lo));
  double s, c;
  sincos_reduced(r, &s, &c);
  switch (static_cast<int>(k) & 3) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
  }
}

// torch.randn's distribution by Box-Muller on block i's first two words:
// u1 in (0, 1], u2 in [0, 1) with 32 bits each; z = sqrt(-2 ln u1) cos(2 pi u2).
KB_HD float normal(const StreamKey& k, uint64_t i) {
  r123::Philox4x32::ctr_type w = block(k, i);
  double u1 = dmul(static_cast<double>(w[0]) + 1.0, 0x1p-32);
  double u2 = dmul(static_cast<double>(w[1]), 0x1p-32);
  double radius = dsqrt(dmul(-2.0, log_positive(u1)));
  return static_cast<float>(dmul(radius, cos_of_angle(dmul(kTwoPi, u2))));
}

}  // namespace kb::philox

namespace kb::philox {

// Softmax rows (the KL problem's inputs): x_j = u_j * scale in fp32 (u_j = uniform(k, row*len+j);
// scale = 1 gives the unscaled form exactly), p_j = e_j / sum_j e_j with e_j = exp(x_j - max x)
// in double, summed sequentially in j, rounded to fp32 once.
struct SoftmaxRowStats {
  float max = 0;
  double sum = 0;
};

KB_HD float scaled_uniform(const StreamKey& k, uint64_t i, float scale) {
  return fmul(uniform(k, i), scale);
}

KB_HD SoftmaxRowStats softmax_row_stats(const StreamKey& k, uint64_t row, uint64_t len, float scale) {
  SoftmaxRowStats st;
  st.max = scaled_uniform(k, row * len, scale);
  for (uint64_t j = 1; j < len; ++j) {
    float x = scaled_uniform(k, row * len + j, scale);
    st.max = x > st.max ? x : st.max;
  }
  for (uint64_t j = 0; j < len; ++j) {
    double x = static_cast<double>(scaled_uniform(k, row * len + j, scale));
    st.sum = dadd(st.sum, exp_bounded(dsub(x, static_cast<double>(st.max))));
  }
  return st;
}

KB_HD float softmax_element(const StreamKey& k, uint64_t row, uint64_t len, uint64_t j, float scale,
                            const SoftmaxRowStats& st) {
  double x = static_cast<double>(scaled_uniform(k, row * len + j, scale));
  return static_cast<float>(ddiv(exp_bounded(dsub(x, static_cast<double>(st.max))), st.sum));
}

}  // namespace kb::philox
