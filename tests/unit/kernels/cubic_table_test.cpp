// kernels/cores/cubic_table/fit.h: the fitted tables' error over their whole range, evaluated in
// the device's fp32 steps, against the function in double.
#include "kernels/cores/cubic_table/fit.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kb::custom::cubic_table {
namespace {

// L2_007's epilogue: sigmoid(gelu(r)), r >= 0 (its table: segments of 1/8 on [0, 16]).
double sigmoid_gelu(double r) {
  return 1.0 / (1.0 + std::exp(-0.5 * r * (1.0 + std::erf(r / std::sqrt(2.0)))));
}

double worst_error(const std::vector<Segment>& table, int inv_step, double end,
                   double (*f)(double)) {
  double worst = 0;
  constexpr int kPoints = 2000000;
  for (int k = 0; k <= kPoints; ++k) {
    const float r = static_cast<float>(end * k / kPoints);
    worst = std::max(worst, std::fabs(evaluate(table, inv_step, r) - f(r)));
  }
  return worst;
}

TEST(CubicTable, SigmoidGeluWithinTwoTenthsOfAMillionthEverywhereOnItsRange) {
  const std::vector<Segment> table = fit(sigmoid_gelu, 8, 128);
  ASSERT_EQ(table.size(), 129u);
  // 1.5e-7 measured (~2.5 ulp of values in [0.5, 1)); L2_007 allows 1e-4 + 1e-4 |out|.
  EXPECT_LE(worst_error(table, 8, 16.0, sigmoid_gelu), 2e-7);
}

TEST(CubicTable, TheCentreOfEverySegmentIsTheFunctionThereRounded) {
  const std::vector<Segment> table = fit(sigmoid_gelu, 8, 128);
  EXPECT_EQ(evaluate(table, 8, 0.0f), 0.5f);  // sigmoid(gelu(0)) exactly: relu's zeros
  for (int i = 0; i <= 128; ++i) {
    const float r = static_cast<float>(i) / 8;
    EXPECT_EQ(evaluate(table, 8, r), static_cast<float>(sigmoid_gelu(r))) << "r = " << r;
  }
}

TEST(CubicTable, ACubicIsReproducedToRounding) {
  const auto cubic = [](double r) { return 0.25 - 1.5 * r + 0.75 * r * r - 0.125 * r * r * r; };
  const std::vector<Segment> table = fit(cubic, 4, 16);
  for (int k = 0; k <= 4000; ++k) {
    const float r = 4.0f * static_cast<float>(k) / 4000;
    EXPECT_NEAR(evaluate(table, 4, r), cubic(r), 4e-6 * (1 + std::fabs(cubic(r)))) << r;
  }
}

}  // namespace
}  // namespace kb::custom::cubic_table
