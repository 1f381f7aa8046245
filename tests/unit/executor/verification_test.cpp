// Output verification: the tolerance edge, non-finite values on either side, the first mismatch,
// and how the trials' errors are folded together.
#include "executor/verification.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kb {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

ErrorStats compare(const std::vector<float>& reference, const std::vector<float>& custom,
                   Tolerance tolerance = {}) {
  return compare_outputs(reference.data(), custom.data(), static_cast<int64_t>(reference.size()),
                         tolerance);
}

TEST(CompareOutputs, IdenticalOutputsPass) {
  std::vector<float> r = {1, -2, 0, 3.5f};
  ErrorStats e = compare(r, r);
  EXPECT_EQ(e.mismatches, 0);
  EXPECT_EQ(e.first_mismatch_index, -1);
  EXPECT_EQ(e.max_abs_error, 0);
  EXPECT_EQ(verdict_of(e), JobStatus::kOk);
}

// Powers of two make the bound exact: 0.25 + 0.5 * |1| = 0.75.
TEST(CompareOutputs, ExactlyAtTheBoundPassesAndOneUlpAboveFails) {
  const Tolerance t{.atol = 0.25, .rtol = 0.5};
  EXPECT_EQ(compare({1.0f}, {1.75f}, t).mismatches, 0);
  EXPECT_EQ(compare({1.0f}, {0.25f}, t).mismatches, 0);
  EXPECT_EQ(compare({1.0f}, {std::nextafter(1.75f, 2.0f)}, t).mismatches, 1);
  EXPECT_EQ(compare({1.0f}, {std::nextafter(0.25f, 0.0f)}, t).mismatches, 1);
  // The bound scales with |r|, not |c|, and with |r| for a negative reference.
  EXPECT_EQ(compare({-2.0f}, {-3.25f}, t).mismatches, 0);
  EXPECT_EQ(compare({-2.0f}, {std::nextafter(-3.25f, -4.0f)}, t).mismatches, 1);
}

TEST(CompareOutputs, DefaultToleranceEdge) {
  // The largest float c with c - 1 <= 1e-4 + 1e-4 * 1 passes; the next float up fails.
  const double bound = 2e-4;
  float c = 1.0f;
  while (static_cast<double>(std::nextafter(c, 2.0f)) - 1.0 <= bound) c = std::nextafter(c, 2.0f);
  EXPECT_EQ(compare({1.0f}, {c}).mismatches, 0);
  EXPECT_EQ(compare({1.0f}, {std::nextafter(c, 2.0f)}).mismatches, 1);
}

TEST(CompareOutputs, ZeroReferenceUsesAtolAlone) {
  EXPECT_EQ(compare({0.0f}, {5e-5f}).mismatches, 0);
  ErrorStats e = compare({0.0f}, {2e-4f});
  EXPECT_EQ(e.mismatches, 1);
  EXPECT_EQ(e.max_rel_error, 0);  // undefined at r == 0, so not counted
  EXPECT_NEAR(e.max_abs_error, 2e-4, 1e-9);
}

TEST(CompareOutputs, RecordsMaxAbsAndRelError) {
  ErrorStats e = compare({1.0f, 4.0f, -8.0f}, {1.5f, 4.0f, -7.0f});
  EXPECT_DOUBLE_EQ(e.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(e.max_rel_error, 0.5);
  EXPECT_EQ(e.mismatches, 2);
  EXPECT_EQ(e.first_mismatch_index, 0);
}

TEST(CompareOutputs, NaNWhereTheReferenceIsFiniteIsNonFinite) {
  ErrorStats e = compare({1, 2, 3}, {1, kNaN, 3});
  EXPECT_EQ(e.non_finite, 1);
  EXPECT_EQ(e.mismatches, 1);
  EXPECT_EQ(e.first_mismatch_index, 1);
  EXPECT_EQ(verdict_of(e), JobStatus::kNonFinite);
}

TEST(CompareOutputs, InfinityWhereTheReferenceIsFiniteIsNonFinite) {
  ErrorStats e = compare({1, 2}, {1, -kInf});
  EXPECT_EQ(e.non_finite, 1);
  EXPECT_EQ(verdict_of(e), JobStatus::kNonFinite);
}

TEST(CompareOutputs, MatchingNonFiniteReferenceValuesPass) {
  ErrorStats e = compare({kNaN, kInf, -kInf, 1}, {kNaN, kInf, -kInf, 1});
  EXPECT_EQ(e.mismatches, 0);
  EXPECT_EQ(e.non_finite, 0);
  EXPECT_EQ(verdict_of(e), JobStatus::kOk);
}

TEST(CompareOutputs, TheOtherInfinityFails) {
  ErrorStats e = compare({1, kInf}, {1, -kInf});
  EXPECT_EQ(e.mismatches, 1);
  EXPECT_EQ(e.first_mismatch_index, 1);
  EXPECT_EQ(e.non_finite, 0);  // non_finite counts only where the reference is finite
  EXPECT_EQ(verdict_of(e), JobStatus::kMismatch);
}

TEST(CompareOutputs, FiniteOrNaNWhereTheReferenceIsNonFiniteFails) {
  EXPECT_EQ(compare({kNaN}, {0.0f}).mismatches, 1);
  EXPECT_EQ(compare({kInf}, {3e38f}).mismatches, 1);
  EXPECT_EQ(compare({kInf}, {kNaN}).mismatches, 1);
  EXPECT_EQ(compare({kNaN}, {kInf}).mismatches, 1);
}

TEST(CompareOutputs, FirstMismatchIndexIsTheEarliest) {
  std::vector<float> r(100, 1.0f), c(100, 1.0f);
  c[42] = 2.0f;
  c[17] = 0.0f;
  c[99] = kNaN;
  ErrorStats e = compare(r, c);
  EXPECT_EQ(e.first_mismatch_index, 17);
  EXPECT_EQ(e.mismatches, 3);
  EXPECT_EQ(e.non_finite, 1);
}

TEST(MergeErrors, KeepsTheWorstAndTheEarliestTrialsFirstIndex) {
  ErrorStats worst;
  merge_errors(worst, ErrorStats{.max_abs_error = 0.1,
                                 .max_rel_error = 0.01,
                                 .mismatches = 0,
                                 .first_mismatch_index = -1,
                                 .non_finite = 0});
  EXPECT_EQ(worst.first_mismatch_index, -1);
  EXPECT_DOUBLE_EQ(worst.max_abs_error, 0.1);

  merge_errors(worst, ErrorStats{.max_abs_error = 0.05,
                                 .max_rel_error = 0.2,
                                 .mismatches = 3,
                                 .first_mismatch_index = 30,
                                 .non_finite = 1});
  merge_errors(worst, ErrorStats{.max_abs_error = 0.5,
                                 .max_rel_error = 0.02,
                                 .mismatches = 2,
                                 .first_mismatch_index = 5,
                                 .non_finite = 0});
  EXPECT_DOUBLE_EQ(worst.max_abs_error, 0.5);
  EXPECT_DOUBLE_EQ(worst.max_rel_error, 0.2);
  EXPECT_EQ(worst.mismatches, 5);
  EXPECT_EQ(worst.non_finite, 1);
  EXPECT_EQ(worst.first_mismatch_index, 30);  // the earliest trial's, not the smallest index
  EXPECT_EQ(verdict_of(worst), JobStatus::kNonFinite);
}

TEST(VerdictOf, NonFiniteOutranksMismatch) {
  EXPECT_EQ(verdict_of(ErrorStats{}), JobStatus::kOk);
  EXPECT_EQ(verdict_of(ErrorStats{.mismatches = 1}), JobStatus::kMismatch);
  EXPECT_EQ(verdict_of(ErrorStats{.mismatches = 2, .non_finite = 1}), JobStatus::kNonFinite);
}

}  // namespace
}  // namespace kb
