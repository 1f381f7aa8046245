// `kb compare`'s table on synthetic samples: a known 5% slowdown is "slower", an A/A pair is
// "same", a status change is listed first, one-sided problems are added/removed, and the q-values
// are Benjamini–Hochberg over the tested pairs.
#include "cli/compare_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kb::cli {
namespace {

HistoryPoint point(const std::string& problem, double ms, std::mt19937_64& rng,
                   const std::string& status = "ok", const std::string& gpu = "H200") {
  std::normal_distribution<double> noise(0, 0.01);
  HistoryPoint p;
  p.problem = problem;
  p.gpu_model = gpu;
  p.preset = "full";
  p.status = status;
  for (int i = 0; i < 100; ++i) p.samples_ms.push_back(ms * std::exp(noise(rng)));
  p.median_ms = ms;
  return p;
}

TEST(CompareTable, VerdictsAndOrder) {
  std::mt19937_64 rng(3);
  std::vector<HistoryPoint> base = {point("A_same", 1.0, rng), point("B_slow", 1.0, rng),
                                    point("C_fast", 1.0, rng), point("D_broke", 1.0, rng),
                                    point("E_gone", 1.0, rng)};
  std::vector<HistoryPoint> head = {point("A_same", 1.0, rng), point("B_slow", 1.05, rng),
                                    point("C_fast", 0.9, rng),
                                    point("D_broke", 1.0, rng, "mismatch"),
                                    point("F_new", 1.0, rng)};
  const std::vector<CompareRow> rows = compare_results(base, head, CompareOptions{});
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].problem, "D_broke");
  EXPECT_EQ(rows[0].verdict, "status");
  EXPECT_EQ(rows[0].head_status, "mismatch");
  EXPECT_EQ(rows[1].verdict, "removed");  // E_gone
  EXPECT_EQ(rows[2].verdict, "added");    // F_new
  EXPECT_EQ(rows[3].problem, "A_same");
  EXPECT_EQ(rows[3].verdict, "same");
  EXPECT_EQ(rows[4].verdict, "slower");
  EXPECT_NEAR(rows[4].change.ratio, 1.05, 0.005);
  EXPECT_LT(rows[4].change.ci_low, 1.05);
  EXPECT_GT(rows[4].change.ci_high, 1.05);
  EXPECT_EQ(rows[5].verdict, "faster");
  // BH over the three tested pairs never lowers a p-value.
  for (int i = 3; i < 6; ++i) EXPECT_GE(rows[i].q_value, rows[i].p_value * (1 - 1e-12));
}

TEST(CompareTable, GpuModelsAtOneCommitPairByProblem) {
  std::mt19937_64 rng(4);
  CompareOptions o;
  o.key_includes_gpu = false;
  const std::vector<CompareRow> rows =
      compare_results({point("A", 1.0, rng, "ok", "H100")}, {point("A", 0.8, rng, "ok", "H200")}, o);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].base_gpu, "H100");
  EXPECT_EQ(rows[0].head_gpu, "H200");
  EXPECT_EQ(rows[0].verdict, "faster");
}

}  // namespace
}  // namespace kb::cli
