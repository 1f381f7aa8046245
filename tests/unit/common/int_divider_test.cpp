#include "common/cuda/int_divider.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace kb {
namespace {

// The numerators a kernel meets most (small ones, multiples of d and their neighbours, the top of
// the range) and random ones, all below 2^31 (the contract).
std::vector<uint32_t> numerators(uint32_t d, std::mt19937& rng) {
  constexpr uint32_t kTop = 0x7fffffffu;
  std::vector<uint32_t> n = {d - 1, d, d + 1, kTop, kTop - 1, kTop - kTop % d, kTop - kTop % d - 1};
  for (uint32_t i = 0; i < 2048; ++i) n.push_back(i);
  for (uint64_t m = 1, step = kTop / d / 64 + 1; m < 64 && uint64_t{d} * m * step < kTop; ++m) {
    n.push_back(static_cast<uint32_t>(uint64_t{d} * m * step));
    n.push_back(static_cast<uint32_t>(uint64_t{d} * m * step - 1));
  }
  std::uniform_int_distribution<uint32_t> any(0, kTop);
  for (int i = 0; i < 256; ++i) n.push_back(any(rng));
  std::erase_if(n, [](uint32_t v) { return v > kTop; });
  return n;
}

// Whether `divider` gives the hardware's quotient and remainder by d on every numerator above.
bool exact(const Divider<uint32_t>& divider, uint32_t d, std::mt19937& rng) {
  for (const uint32_t n : numerators(d, rng)) {
    if (divider.div(n) != n / d || divider.mod(n) != n % d) {
      ADD_FAILURE() << n << " / " << d;
      return false;
    }
  }
  return true;
}

TEST(IntDivider, ExactForEveryNumeratorBelow2To31) {
  std::mt19937 rng(27);
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (int k = 12; k < 31; ++k) {  // powers of two and their neighbours
    for (const uint32_t d : {(1u << k) - 1, 1u << k, (1u << k) + 1}) divisors.push_back(d);
  }
  divisors.push_back(0x7fffffffu);  // the largest divisor allowed
  std::uniform_int_distribution<uint32_t> any(4097, 0x7ffffffeu);
  for (int i = 0; i < 2000; ++i) divisors.push_back(any(rng));
  for (const uint32_t d : divisors) ASSERT_TRUE(exact(Divider<uint32_t>(d), d, rng));
}

// The check above catches a magic number without its + 1 (wrong at n = d already) and a shift
// one short. (A magic number one too large stays exact below 2^31: the bound has slack.)
TEST(IntDivider, AWrongDividerIsCaught) {
  std::mt19937 rng(27);
  for (const uint32_t d : {3u, 7u, 10u, 641u, 65537u}) {
    Divider<uint32_t> low(d), short_shift(d);
    low.magic -= 1;
    short_shift.shift -= 1;
    testing::ScopedTrace trace(__FILE__, __LINE__, d);
    EXPECT_NONFATAL_FAILURE(exact(low, d, rng), "/");
    EXPECT_NONFATAL_FAILURE(exact(short_shift, d, rng), "/");
  }
}

TEST(IntDivider, SixtyFourBitIsPlainDivision) {
  const Divider<uint64_t> d(uint64_t{3} << 40);
  EXPECT_EQ(d.div((uint64_t{3} << 41) + 5), 2u);
  EXPECT_EQ(d.mod((uint64_t{3} << 41) + 5), 5u);
}

}  // namespace
}  // namespace kb
