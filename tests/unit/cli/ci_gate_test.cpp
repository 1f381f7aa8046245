// The CI gate's decision and its reports on values: a failed job or a confirmed slowdown above
// --max-slowdown fails, an A/A pair or a slowdown inside the band passes, and the JUnit and
// Markdown outputs carry one case per problem with its figures.
#include "cli/ci_gate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cli/ci_gate_command.h"

namespace kb::cli {
namespace {

HistoryPoint point(const std::string& problem, double ms, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0, 0.005);
  HistoryPoint p;
  p.problem = problem;
  p.gpu_model = "NVIDIA H200";
  p.preset = "small";
  p.status = "ok";
  for (int i = 0; i < 60; ++i) p.samples_ms.push_back(ms * std::exp(noise(rng)));
  p.median_ms = ms;
  return p;
}

ResultRow job(const std::string& problem, const std::string& status = "ok",
              const std::string& state = "done") {
  ResultRow r;
  r.problem_id = problem;
  r.gpu_model = "NVIDIA H200";
  r.job_state = state;
  r.status = status;
  r.custom_median_ms = 1.0;
  r.speedup = 1.5;
  r.speedup_ci_low = 1.48;
  r.speedup_ci_high = 1.52;
  r.wall_ms = 2500;
  return r;
}

GateReport gate(double head_ms, const std::vector<ResultRow>& jobs, double max_slowdown = 0.03) {
  std::mt19937_64 rng(7);
  GatePolicy policy;
  policy.max_slowdown = max_slowdown;
  const auto rows = compare_results({point("L1_003", 1.0, rng)}, {point("L1_003", head_ms, rng)},
                                    gate_compare_options(policy));
  GateReport report = evaluate_gate(jobs, rows, policy);
  report.run_id = 12;
  report.run_label = "smoke, preset small";
  report.baseline = "run:11";
  return report;
}

TEST(CiGate, AFourPercentSlowdownFailsAtThreePercent) {
  const GateReport r = gate(1.04, {job("L1_003")});
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.slowdowns(), 1);
  EXPECT_EQ(r.cases[0].failure_kind, "slowdown");
  EXPECT_NE(r.cases[0].failure.find("+4."), std::string::npos) << r.cases[0].failure;
}

TEST(CiGate, TheSameSlowdownPassesAtFivePercent) {
  EXPECT_TRUE(gate(1.04, {job("L1_003")}, 0.05).passed());
}

TEST(CiGate, AnAaPairPasses) {
  const GateReport r = gate(1.0, {job("L1_003")});
  EXPECT_TRUE(r.passed());
  ASSERT_TRUE(r.cases[0].versus.has_value());
  EXPECT_EQ(r.cases[0].versus->verdict, "same");
}

TEST(CiGate, AFailedJobOrABadStatusFailsWhateverTheTimes) {
  const GateReport r = gate(1.0, {job("L1_003", "mismatch"), job("L2_017", "", "failed")});
  EXPECT_EQ(r.failed_jobs(), 2);
  EXPECT_EQ(r.slowdowns(), 0);
  EXPECT_NE(r.cases[1].failure.find("no result (job failed)"), std::string::npos);
}

TEST(CiGate, WithoutABaselineOnlyTheStatusesCount) {
  GateReport r = evaluate_gate({job("L1_003")}, {}, GatePolicy{});
  EXPECT_TRUE(r.passed());
  EXPECT_FALSE(r.cases[0].versus.has_value());
}

TEST(CiGate, JunitHasOneCasePerProblemAndAFailureForTheGatedOne) {
  const std::string xml = gate_junit(gate(1.04, {job("L1_003"), job("L2_017")}));
  EXPECT_NE(xml.find("<testsuites name=\"kbfleet\" tests=\"2\" failures=\"1\""), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"kbfleet.NVIDIA H200\" name=\"L1_003\" time=\"2.500\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure type=\"slowdown\""), std::string::npos);
  EXPECT_NE(xml.find("<property name=\"speedup_ci_low\" value=\"1.48\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<property name=\"change\" value=\"0.0"), std::string::npos) << xml;  // ~+4%
  EXPECT_NE(xml.find("<property name=\"change_ci_low\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find("reference_median_ms"), std::string::npos) << "absent figures are left out";
}

TEST(CiGate, MarkdownSaysFailedAndKeepsTheTableWhole) {
  ResultRow odd = job("L1_003", "runtime_error");
  odd.message = "a|b\nc";
  const std::string md = gate_markdown(gate(1.0, {odd}));
  EXPECT_EQ(md.rfind("## kbfleet gate: FAILED", 0), 0u) << md;
  EXPECT_NE(md.find("runtime_error: a/b c"), std::string::npos) << md;
  EXPECT_NE(md.find("Baseline: `run:11`"), std::string::npos);
}

TEST(CiGate, MaxSlowdownTakesAPercentageOrAFraction) {
  EXPECT_DOUBLE_EQ(parse_slowdown("3%").value(), 0.03);
  EXPECT_DOUBLE_EQ(parse_slowdown("0.03").value(), 0.03);
  EXPECT_FALSE(parse_slowdown("3").is_ok());
  EXPECT_FALSE(parse_slowdown("3%%").is_ok());
  EXPECT_FALSE(parse_slowdown("-1%").is_ok());
}

}  // namespace
}  // namespace kb::cli
