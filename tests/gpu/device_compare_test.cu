// compare_on_device (executor/device_buffers.cuh) must give exactly what the host rule
// (executor/verification.cpp) gives: the executor now compares outputs on the GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "executor/device_buffers.cuh"
#include "executor/verification.h"
#include "tests/support/assert_ok.h"

namespace kb {
namespace {

ErrorStats on_device(const std::vector<float>& ref, const std::vector<float>& custom, Tolerance t) {
  float *d_ref = nullptr, *d_custom = nullptr;
  const size_t bytes = ref.size() * sizeof(float);
  EXPECT_EQ(cudaMalloc(&d_ref, bytes + 4), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&d_custom, bytes + 4), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d_ref, ref.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d_custom, custom.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  DeviceCompareScratch scratch;
  KB_EXPECT_OK(scratch.allocate());
  Result<ErrorStats> e = compare_on_device(d_ref, d_custom, static_cast<int64_t>(ref.size()), t.atol,
                                           t.rtol, scratch, nullptr);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  cudaFree(d_ref);
  cudaFree(d_custom);
  return e.is_ok() ? e.value() : ErrorStats{};
}

void expect_same(const ErrorStats& host, const ErrorStats& device) {
  EXPECT_EQ(host.max_abs_error, device.max_abs_error);
  EXPECT_EQ(host.max_rel_error, device.max_rel_error);
  EXPECT_EQ(host.mismatches, device.mismatches);
  EXPECT_EQ(host.non_finite, device.non_finite);
  EXPECT_EQ(host.first_mismatch_index, device.first_mismatch_index);
}

TEST(DeviceCompare, MatchesTheHostRuleOnNoiseNansInfsAndZeros) {
  const Tolerance t{1e-4, 1e-4};
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const int64_t n : {int64_t{1}, int64_t{31}, int64_t{1000}, int64_t{3'000'001}}) {
    std::vector<float> ref(static_cast<size_t>(n)), custom(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      ref[i] = normal(random);
      custom[i] = ref[i] * (1 + 2e-5f * normal(random));  // mostly inside the tolerance
    }
    // Plant every kind of element past the first quarter, the earliest mismatch among them.
    if (n >= 1000) {
      const int64_t q = n / 4;
      custom[q + 7] = ref[q + 7] + 1.f;                                     // mismatch (first)
      ref[q + 9] = std::numeric_limits<float>::quiet_NaN();                 // NaN matched by NaN
      custom[q + 9] = std::numeric_limits<float>::quiet_NaN();
      ref[q + 11] = std::numeric_limits<float>::infinity();                 // inf vs finite: bad
      custom[q + 13] = std::numeric_limits<float>::infinity();              // non-finite custom
      ref[q + 15] = 0.f;                                                    // no relative error
      custom[q + 15] = 5e-5f;
      custom[n - 1] = ref[n - 1] - 3.f;                                     // last mismatch
    }
    const ErrorStats host = compare_outputs(ref.data(), custom.data(), n, t);
    expect_same(host, on_device(ref, custom, t));
    if (n >= 1000) {
      EXPECT_EQ(host.first_mismatch_index, n / 4 + 7);
      EXPECT_EQ(host.non_finite, 1);
      EXPECT_GE(host.mismatches, 4);
    }
  }
}

TEST(DeviceCompare, EqualOutputsAreExactlyZeroError) {
  std::vector<float> ref(4097, 0.25f);
  const ErrorStats e = on_device(ref, ref, Tolerance{1e-4, 1e-4});
  EXPECT_EQ(e.max_abs_error, 0.0);
  EXPECT_EQ(e.mismatches, 0);
  EXPECT_EQ(e.first_mismatch_index, -1);
}

}  // namespace
}  // namespace kb
