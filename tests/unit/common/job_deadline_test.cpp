#include "common/job_deadline.h"

#include <gtest/gtest.h>

namespace kb {
namespace {

TEST(JobDeadline, LeaseBudgetCoversThreePredictionsAndTwoTimeCapsAndAtLeastAMinute) {
  EXPECT_EQ(lease_budget(10'000, 15).count(), 3 * 10'000 + 2 * 15'000 + 30'000);
  EXPECT_EQ(lease_budget(1, 0).count(), 60'000);
  EXPECT_EQ(lease_budget(10'000, 15, /*job_timeout_s=*/20).count(), 30'000);
}

TEST(JobDeadline, ChildTimeoutIsTheLeaseBudgetLessFiveSecondsAtLeastTen) {
  EXPECT_DOUBLE_EQ(child_timeout_s(12000), 10.0);
  EXPECT_DOUBLE_EQ(child_timeout_s(90000), 85.0);
  EXPECT_DOUBLE_EQ(child_timeout_s(0), 600.0);
  // A submitter's per-job limit: the child is killed 5 s before the lease ends.
  EXPECT_DOUBLE_EQ(child_timeout_s(lease_budget(1000, 3, /*job_timeout_s=*/120).count()), 125.0);
}

}  // namespace
}  // namespace kb
