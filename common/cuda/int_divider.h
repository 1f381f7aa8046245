// Divider<I>: integer division by a divisor fixed at launch, built on the host and passed to a
// kernel by value. Divider<uint32_t> replaces the division by a multiply-high, an add and a shift
// (Granlund-Montgomery, as ATen's IntDivider): a runtime 32-bit division costs ~20 instructions
// and a 64-bit one a call of ~70, which made index decoding most of the work of small kernels
// (the generic transposed-conv gather executed 8 M warp instructions where cuDNN's kernel executed
// 0.44 M, session 27). Divider<uint64_t> is the plain division, for indices past 32 bits.
//
// Contract: Divider<uint32_t>(d) needs 1 <= d < 2^31 and div / mod are exact for n < 2^31 (the sum
// umulhi(n, magic) + n then fits in 32 bits); Divider<uint64_t> needs d >= 1. Both run on the host
// too (KB_HD), so that tests check them there (tests/unit/common/int_divider_test.cpp).
//
// Thread safety: values; const members only after construction.
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace kb {

template <typename I>
struct Divider;

template <>
struct Divider<uint32_t> {
  uint32_t divisor = 1, magic = 1, shift = 0;

  Divider() = default;
  // shift = ceil(log2 d); magic = floor(2^32 (2^shift - d) / d) + 1, so that
  // floor(n / d) = (floor(n magic / 2^32) + n) >> shift for every n < 2^31.
  explicit Divider(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint32_t{1} << shift) < d) ++shift;
    const uint64_t one = 1;
    magic = static_cast<uint32_t>(((one << 32) * ((one << shift) - d)) / d + 1);
  }

  KB_HD uint32_t div(uint32_t n) const { return (mul_high(n, magic) + n) >> shift; }
  KB_HD uint32_t mod(uint32_t n) const { return n - div(n) * divisor; }

 private:
  KB_HD static uint32_t mul_high(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return static_cast<uint32_t>((uint64_t{a} * b) >> 32);
#endif
  }
};

template <>
struct Divider<uint64_t> {
  uint64_t divisor = 1;

  Divider() = default;
  explicit Divider(uint64_t d) : divisor(d) {}

  KB_HD uint64_t div(uint64_t n) const { return n / divisor; }
  KB_HD uint64_t mod(uint64_t n) const { return n % divisor; }
};

}  // namespace kb
