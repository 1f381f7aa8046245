// kernels/cores/gelu.cuh against gelu in double: the error bound its header states over
// [-20, 20], and the non-finite values the erf formula gives.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/cores/gelu.cuh"

namespace kb {
namespace {

__global__ void gelu_kernel(const float* v, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = custom::gelu_erf_fast(v[i]);
}

std::vector<float> run_gelu(const std::vector<float>& v) {
  const int n = static_cast<int>(v.size());
  const size_t bytes = v.size() * sizeof(float);
  float *d_v = nullptr, *d_out = nullptr;
  EXPECT_EQ(cudaMalloc(&d_v, bytes), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&d_out, bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d_v, v.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  gelu_kernel<<<(n + 255) / 256, 256>>>(d_v, d_out, n);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<float> out(v.size());
  EXPECT_EQ(cudaMemcpy(out.data(), d_out, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  KB_CUDA_WARN(cudaFree(d_v));
  KB_CUDA_WARN(cudaFree(d_out));
  return out;
}

double gelu_exact(double v) {
  return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
}

TEST(GeluErfFast, WithinItsStatedBoundOfGeluInDouble) {
  std::vector<float> v;
  for (int i = -400000; i <= 400000; ++i) v.push_back(20.0f * static_cast<float>(i) / 400000.0f);
  const std::vector<float> r = run_gelu(v);
  // The header's bound (9.6e-7; 5e-7 for v < 0) and ~1 ulp for the device's approximate
  // reciprocal.
  constexpr double bound = 1.2e-6;
  double worst = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double err = std::fabs(r[i] - gelu_exact(v[i]));
    EXPECT_LE(err, bound) << "gelu_erf_fast(" << v[i] << ")";
    worst = std::max(worst, err);
  }
  // Far inside the 1e-4 + 1e-4 |r| of the problems that use it.
  EXPECT_LE(worst, bound);
}

TEST(GeluErfFast, NonFiniteValuesAsTheErfFormulaGivesThem) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> r = run_gelu({inf, -inf, nan, 0.0f, 1e30f, -1e30f});
  EXPECT_EQ(r[0], inf);           // inf (1 + 1) / 2
  EXPECT_TRUE(std::isnan(r[1]));  // -inf * 0
  EXPECT_TRUE(std::isnan(r[2]));
  EXPECT_EQ(r[3], 0.0f);
  EXPECT_EQ(r[4], 1e30f);
  EXPECT_EQ(r[5], 0.0f);  // -1e30 * erfc(...) underflows to -0 in double too
}

}  // namespace
}  // namespace kb
