// The launch trace's host-side arithmetic (launch_tracer.h): a call's GPU busy time is the union of
// its activities' intervals, so overlapping kernels count once and idle gaps not at all.
#include "executor/launch_tracer.h"

#include <gtest/gtest.h>

namespace kb {
namespace {

TEST(LaunchTracer, BusyTimeIsTheUnionOfTheIntervals) {
  EXPECT_EQ(interval_union_length({}), 0u);
  EXPECT_EQ(interval_union_length({{10, 20}}), 10u);
  // A gap (the GPU waiting for the host's next launch) is not busy time.
  EXPECT_EQ(interval_union_length({{10, 20}, {30, 35}}), 15u);
  // Overlap (a dependent launch starting before its predecessor ends) counts once, in any order.
  EXPECT_EQ(interval_union_length({{30, 50}, {10, 40}}), 40u);
  EXPECT_EQ(interval_union_length({{10, 100}, {20, 30}, {40, 50}}), 90u);
  EXPECT_EQ(interval_union_length({{10, 10}, {5, 7}}), 2u);
}

}  // namespace
}  // namespace kb
