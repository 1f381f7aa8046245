// The sweep's verdict: 0.9x the reference at every shape, 1.2x at large ones, and a wrong answer
// misses the goal whatever its speed.
#include "cli/sweep_report.h"

#include <gtest/gtest.h>

namespace kb::cli {
namespace {

JobResult ok_result(double speedup) {
  JobResult r;
  r.status = JobStatus::kOk;
  r.speedup.speedup = speedup;
  return r;
}

TEST(SweepReportTest, TheGoalNeedsPointNineEverywhereAndOnePointTwoOnLargeShapes) {
  const auto row = [](const char* id, double share, double speedup) {
    SweepRow r{id, "N=1", {}, ok_result(speedup)};
    r.shape.flop_share = share;
    return r;
  };
  std::vector<SweepRow> rows = {row("A", 0.01, 0.95), row("A", 0.5, 1.3),  // met
                                row("B", 0.01, 0.85), row("B", 0.5, 2.0),  // slow small shape
                                row("C", 0.01, 1.5),  row("C", 0.3, 1.1),  // large not 1.2x
                                row("D", 0.01, 1.5)};
  rows.push_back(row("D", 0.5, 3.0));
  rows.back().result.status = JobStatus::kMismatch;  // a wrong answer misses whatever its speed
  const std::vector<SweepVerdict> v = sweep_verdicts(rows);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_TRUE(v[0].meets_goal);
  EXPECT_FALSE(v[1].meets_goal);
  EXPECT_DOUBLE_EQ(v[1].worst, 0.85);
  EXPECT_FALSE(v[2].meets_goal);
  EXPECT_DOUBLE_EQ(v[2].worst_large, 1.1);
  EXPECT_FALSE(v[3].meets_goal);
  EXPECT_EQ(v[3].failed, 1);
  EXPECT_NE(sweep_text(rows).find("1 of 4 problems meet the sweep goal"), std::string::npos);
}

}  // namespace
}  // namespace kb::cli
