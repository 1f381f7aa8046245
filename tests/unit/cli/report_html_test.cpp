// `kb report`'s HTML holds the expected figures (summary per GPU model, speedups, the fraction of
// the hard floor beside the fp32-FMA roofline's, the flagged regressions, one history chart per
// problem with its CI band), is
// self-contained (no script, no external URL), escapes text, and the CSV/JSON carry the same rows.
#include "cli/report_html.h"

#include <gtest/gtest.h>

#include <string>

namespace kb::cli {
namespace {

ReportData sample_report() {
  ReportData d;
  d.title = "kbfleet report";
  d.scope = "run 7";
  d.generated_at = "2024-06-01T00:00:00Z";
  ModelSummary h200;
  h200.gpu_model = "NVIDIA H200";
  h200.jobs = 2;
  h200.correct = 1;
  h200.fast_1 = 0.5;
  h200.fast_1_2 = 0.5;
  h200.geomean_speedup = 1.5;
  d.summary.per_model = {h200};
  d.summary.overall = h200;
  ReportProblem ok;
  ok.problem = "L1_003";
  ok.gpu_model = "NVIDIA H200";
  ok.preset = "full";
  ok.status = "ok";
  ok.commit_sha = "abcdef1234567890";
  ok.speedup = 1.5;
  ok.speedup_ci_low = 1.45;
  ok.speedup_ci_high = 1.55;
  ok.custom_median_ms = 2.0;
  ok.floor_ms = 2.04;      // fp32-FMA roofline: a 3xTF32 kernel beats it (L1_003 read 1.02)
  ok.hard_floor_ms = 1.9;  // the hard floor of the allowed math
  ok.history = {{"c1", 2.1, 2.0, 2.2, false}, {"c2", 2.0, 1.9, 2.1, false},
                {"c3", 2.4, 2.3, 2.5, true}};
  ReportProblem bad = ok;
  bad.problem = "L2_<b>";
  bad.status = "mismatch";
  bad.speedup.reset();
  bad.history.clear();
  d.problems = {ok, bad};
  RegressionRow g;
  g.problem = "L1_003";
  g.gpu_model = "NVIDIA H200";
  g.variant = "custom";
  g.commit_sha = "abcdef1234567890";
  g.median_ms = 2.4;
  g.baseline_ms = 2.0;
  g.ratio = 1.2;
  g.adjusted_p = 0.001;
  g.state = "flagged";
  d.regressions = {g};
  return d;
}

TEST(ReportHtml, HoldsTheExpectedFigures) {
  const std::string html = render_report_html(sample_report());
  EXPECT_NE(html.find("<td class=l>NVIDIA H200</td><td>2</td><td>1</td><td>0.500</td>"),
            std::string::npos);
  EXPECT_NE(html.find("1.500×"), std::string::npos);            // geomean and the speedup bar
  EXPECT_NE(html.find("[1.450, 1.550]"), std::string::npos);   // the speedup's interval
  EXPECT_NE(html.find("<svg class=\"floor\""), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"speedup\""), std::string::npos);
  EXPECT_NE(html.find("class=\"ci-band\""), std::string::npos);
  EXPECT_NE(html.find("fill=\"#b3261e\"><title>c3: 2.4 ms"), std::string::npos);  // flagged point
  EXPECT_NE(html.find("+20.0%"), std::string::npos);           // the regression's slowdown
  EXPECT_NE(html.find("<td class=l>flagged</td>"), std::string::npos);
  EXPECT_NE(html.find("L2_&lt;b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("L2_<b>"), std::string::npos);
}

TEST(ReportHtml, FloorShownIsTheHardFloorAndTheFp32RooflineIsLabelledApart) {
  const std::string html = render_report_html(sample_report());
  EXPECT_NE(html.find("floor 0.95 · fp32-FMA roofline 1.02"), std::string::npos);  // 1.9, 2.04 / 2
  EXPECT_NE(html.find("Fraction of the hard floor"), std::string::npos);
  EXPECT_EQ(html.find("Roofline fraction"), std::string::npos);
}

TEST(ReportHtml, IsSelfContained) {
  const std::string html = render_report_html(sample_report());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(ReportHtml, CsvAndJsonCarryTheRows) {
  const ReportData d = sample_report();
  const std::string csv = report_csv(d);
  EXPECT_NE(
      csv.find("L1_003,NVIDIA H200,full,ok,abcdef1234567890,2,1.5,1.45,1.55,2.04,1.02,1.9,0.95\n"),
      std::string::npos);
  const nlohmann::json j = report_json(d);
  EXPECT_EQ(j["problems"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["problems"][0]["roofline_fraction"].get<double>(), 1.02);
  EXPECT_DOUBLE_EQ(j["problems"][0]["floor_fraction"].get<double>(), 0.95);
  EXPECT_TRUE(j["problems"][1]["speedup"].is_null());
  EXPECT_EQ(j["regressions"][0]["state"], "flagged");
  EXPECT_DOUBLE_EQ(j["summary"]["per_model"][0]["geomean_speedup"].get<double>(), 1.5);
}

}  // namespace
}  // namespace kb::cli
