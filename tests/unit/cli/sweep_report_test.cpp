// The sweep's verdict: 0.9x the reference at every shape, 1.2x at large ones, and a wrong answer
// misses the goal whatever its speed; the sweep's JSON both ways (a real sweep of the H200
// included) and two sweeps side by side.
#include "cli/sweep_report.h"

#include <gtest/gtest.h>

#include <fstream>

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

// The line of `text` that starts with problem `id` (after a newline), or "".
std::string line_of(const std::string& text, const std::string& id) {
  const size_t at = text.find("\n" + id + " ");
  return at == std::string::npos ? std::string()
                                 : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

SweepRow shape_row(const char* id, const char* dims, double share, double speedup) {
  SweepRow r{id, dims, {}, ok_result(speedup)};
  r.shape.flop_share = share;
  return r;
}

TEST(SweepReportTest, RowsSurviveTheirJsonAndBadRowsAreNamed) {
  std::vector<SweepRow> rows = {shape_row("L1_003", "batch=3,M=5,K=7,N=9", 0.01, 0.8),
                                shape_row("L2_060", "N=2,C_in=3,C_out=8,D=5,H=7,W=9", 0.4, 1.5)};
  rows[1].result.status = JobStatus::kMismatch;
  rows[1].shape.large = true;
  const Result<std::vector<SweepRow>> back = sweep_rows_from_json(sweep_rows_to_json(rows));
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  const std::vector<SweepRow>& got = back.value();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].problem_id, "L2_060");
  EXPECT_EQ(got[1].dims, "N=2,C_in=3,C_out=8,D=5,H=7,W=9");
  EXPECT_EQ(got[1].shape.dims.at("C_out"), 8);
  EXPECT_DOUBLE_EQ(got[1].shape.flop_share, 0.4);
  EXPECT_TRUE(got[1].shape.large);
  EXPECT_EQ(got[1].result.status, JobStatus::kMismatch);
  EXPECT_DOUBLE_EQ(got[0].result.speedup.speedup, 0.8);

  nlohmann::json no_dims = sweep_rows_to_json(rows);
  no_dims[1].erase("dims");
  EXPECT_NE(sweep_rows_from_json(no_dims).status().message().find("sweep row 1"),
            std::string::npos);
  nlohmann::json bad_dims = sweep_rows_to_json(rows);
  bad_dims[0]["dims"] = "batch=three";
  EXPECT_FALSE(sweep_rows_from_json(bad_dims).is_ok());
  EXPECT_FALSE(sweep_rows_from_json(nlohmann::json::object()).is_ok());
}

// Session 27's seed-77 sweep on the H200, as stored in docs/: every row reads back, and the
// verdicts are the ones its section reports (21 of 22 met; L1_073's 5 x 7 x 9 layer at 0.75x).
TEST(SweepReportTest, ReadsARealSweepOfTheH200) {
  std::ifstream in(std::string(KB_SOURCE_DIR) + "/docs/sweep-h200-2026-12-05-s27-seed77.json");
  ASSERT_TRUE(in.is_open());
  const nlohmann::json j = nlohmann::json::parse(in);
  const Result<std::vector<SweepRow>> rows = sweep_rows_from_json(j.at("rows"));
  ASSERT_TRUE(rows.is_ok()) << rows.status().message();
  EXPECT_EQ(rows.value().size(), 88u);
  const std::vector<SweepVerdict> v = sweep_verdicts(rows.value());
  ASSERT_EQ(v.size(), 22u);
  int met = 0;
  for (const SweepVerdict& p : v) {
    met += p.meets_goal;
    if (p.problem_id == "L1_073") {
      EXPECT_FALSE(p.meets_goal);
      EXPECT_NEAR(p.worst, 0.752, 0.001);
      EXPECT_EQ(p.worst_dims, "N=3,C_in=4,C_out=7,D=5,H=7,W=9");
    }
  }
  EXPECT_EQ(met, 21);
}

TEST(SweepReportTest, ComparesTwoSweepsPerProblemAndSaysWhetherTheyDrewTheSameShapes) {
  const std::vector<SweepRow> before = {shape_row("A", "N=1", 0.01, 0.8),
                                        shape_row("A", "N=9", 0.5, 1.3),
                                        shape_row("B", "N=2", 0.01, 1.4)};
  const std::vector<SweepRow> after = {
      shape_row("A", "N=1", 0.01, 0.95), shape_row("A", "N=9", 0.5, 1.25),
      shape_row("B", "N=3", 0.01, 1.5), shape_row("C", "N=4", 0.3, 1.1)};
  const std::string text = sweep_comparison_text(before, after);
  const std::string a = line_of(text, "A"), b = line_of(text, "B"), c = line_of(text, "C");
  EXPECT_NE(a.find("0.800x -> 0.950x"), std::string::npos) << a;
  EXPECT_NE(a.find("1.300x -> 1.250x"), std::string::npos) << a;
  EXPECT_NE(a.find("MISS -> met"), std::string::npos) << a;
  EXPECT_NE(a.find("the same"), std::string::npos) << a;
  EXPECT_NE(b.find("different"), std::string::npos) << b;
  EXPECT_NE(c.find("- -> MISS"), std::string::npos) << c;  // new in `after`, large at 1.1x
  EXPECT_NE(text.find("1 -> 2 of 3 problems meet the sweep goal"), std::string::npos) << text;
}

SweepRow timed_row(const char* id, const char* dims, double ref_ms, double cust_ms) {
  SweepRow r = shape_row(id, dims, 0.01, ref_ms / cust_ms);
  r.result.reference.summary.median = ref_ms;
  r.result.custom.summary.median = cust_ms;
  return r;
}

// A flipped goal names its deciding shape and which median moved; goals that hold, or flip over
// other shapes, add nothing.
TEST(SweepReportTest, AFlippedGoalSaysWhetherTheReferenceOrTheCustomMoved) {
  const std::vector<SweepRow> before = {
      timed_row("A", "N=1", 0.0226, 0.0113), timed_row("A", "N=9", 1.0, 0.5),  // met
      timed_row("B", "N=2", 0.040, 0.050),                                     // MISS: 0.8x
      timed_row("C", "N=3", 0.030, 0.020),   timed_row("D", "N=4", 1.0, 0.5),
      timed_row("E", "N=5", 0.040, 0.030),   timed_row("F", "N=7", 0.040, 0.030)};
  const std::vector<SweepRow> after = {
      timed_row("A", "N=1", 0.0092, 0.0112), timed_row("A", "N=9", 1.0, 0.5),  // reference faster
      timed_row("B", "N=2", 0.041, 0.030),                                     // custom faster
      timed_row("C", "N=3", 0.020, 0.030),                                     // both moved 1.5x
      timed_row("D", "N=4", 1.0, 0.5),       // unchanged: met both times
      timed_row("E", "N=6", 0.040, 0.050),   // MISS over another shape: not explained
      timed_row("F", "N=7", 0.040, 0.010)};  // a wrong answer, fast: the failure decides
  std::vector<SweepRow> after_failed = after;
  after_failed.back().result.status = JobStatus::kMismatch;
  const std::string text = sweep_comparison_text(before, after_failed);
  const size_t at = text.find("Goals that flipped");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string flips = text.substr(at);
  const std::string a = line_of(flips, "A"), b = line_of(flips, "B"), c = line_of(flips, "C");
  EXPECT_NE(line_of(flips, "F").find("met -> MISS: 1 shape(s) did not end ok"), std::string::npos)
      << flips;
  EXPECT_NE(a.find("met -> MISS at N=1"), std::string::npos) << a;
  EXPECT_NE(a.find("reference 0.0226 -> 0.0092 ms"), std::string::npos) << a;
  EXPECT_NE(a.find("the reference moved"), std::string::npos) << a;
  EXPECT_NE(b.find("MISS -> met at N=2"), std::string::npos) << b;
  EXPECT_NE(b.find("the custom moved"), std::string::npos) << b;
  EXPECT_NE(c.find("both moved"), std::string::npos) << c;
  EXPECT_EQ(line_of(flips, "D"), "");
  EXPECT_EQ(line_of(flips, "E"), "");
  EXPECT_EQ(sweep_comparison_text(before, before).find("Goals that flipped"), std::string::npos);
}

// Sessions 35 and 36 ran main's unchanged kernels through the seed-77 sweep on an H100 and got 21
// and 18 of 22: each of the three flips is the reference's.
TEST(SweepReportTest, TheH100SweepsOfOneCodeFlipOnlyWhereTheReferenceMoved) {
  const auto read = [](const char* name) {
    std::ifstream in(std::string(KB_SOURCE_DIR) + "/docs/" + name);
    EXPECT_TRUE(in.is_open()) << name;
    return sweep_rows_from_json(nlohmann::json::parse(in).at("rows")).value();
  };
  const std::string text = sweep_comparison_text(read("sweep-h100-2026-12-06-s35-seed77.json"),
                                                 read("sweep-h100-2026-12-06-s36-seed77.json"));
  const size_t at = text.find("Goals that flipped");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string flips = text.substr(at);
  for (const char* id : {"L1_054", "L2_001", "L2_017"}) {
    const std::string line = line_of(flips, id);
    EXPECT_NE(line.find("met -> MISS"), std::string::npos) << id << "\n" << flips;
    EXPECT_NE(line.find("the reference moved"), std::string::npos) << line;
  }
  EXPECT_NE(text.find("21 -> 18 of 22 problems meet the sweep goal"), std::string::npos) << text;
}

}  // namespace
}  // namespace kb::cli
