#include "cli/results_summary.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cli/fleet_report.h"

namespace kb::cli {
namespace {

ResultRow row(const std::string& problem, const std::string& model, const std::string& status,
              std::optional<double> speedup, const std::string& job_state = "done") {
  ResultRow r;
  r.problem_id = problem;
  r.gpu_model = model;
  r.status = status;
  r.job_state = job_state;
  r.speedup = speedup;
  if (speedup) {
    r.reference_median_ms = 2.0;
    r.custom_median_ms = 2.0 / *speedup;
    r.speedup_ci_low = *speedup * 0.99;
    r.speedup_ci_high = *speedup * 1.01;
    r.custom_tflops = 12.5;
  }
  r.attempt = 1;
  r.worker = "host-gpu0";
  return r;
}

TEST(ResultsSummary, FastPCountsEveryJobAndGeomeanOnlyCorrectOnes) {
  const std::vector<ResultRow> rows = {
      row("L1_001", "H200", "ok", 2.0),        // fast_1 and fast_1.2
      row("L1_002", "H200", "ok", 1.1),        // fast_1 only
      row("L1_003", "H200", "ok", 0.5),        // correct, slower
      row("L1_004", "H200", "mismatch", 9.0),  // fast but wrong: never counts
      row("L1_005", "H200", "", std::nullopt, "failed"),
  };
  const ResultsSummary s = summarize_results(rows);
  EXPECT_EQ(s.overall.jobs, 5);
  EXPECT_EQ(s.overall.with_result, 4);
  EXPECT_EQ(s.overall.correct, 3);
  EXPECT_EQ(s.overall.failed, 1);
  EXPECT_DOUBLE_EQ(s.overall.fast_1, 2.0 / 5);
  EXPECT_DOUBLE_EQ(s.overall.fast_1_2, 1.0 / 5);
  ASSERT_TRUE(s.overall.geomean_speedup.has_value());
  EXPECT_NEAR(*s.overall.geomean_speedup, std::cbrt(2.0 * 1.1 * 0.5), 1e-12);
}

TEST(ResultsSummary, SplitsByGpuModel) {
  const ResultsSummary s = summarize_results(
      {row("L1_001", "A100", "ok", 4.0), row("L1_001", "H200", "ok", 1.0), row("L1_002", "H200", "ok", 4.0)});
  ASSERT_EQ(s.per_model.size(), 2u);
  EXPECT_EQ(s.per_model[0].gpu_model, "A100");
  EXPECT_NEAR(*s.per_model[0].geomean_speedup, 4.0, 1e-12);
  EXPECT_NEAR(*s.per_model[1].geomean_speedup, 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.per_model[1].fast_1, 0.5);  // speedup exactly 1 is not faster
  EXPECT_NEAR(*s.overall.geomean_speedup, std::cbrt(16.0), 1e-12);
}

TEST(ResultsSummary, NoCorrectResultMeansNoGeomean) {
  const ResultsSummary s = summarize_results({row("L1_001", "cpu", "crashed", std::nullopt)});
  EXPECT_FALSE(s.overall.geomean_speedup.has_value());
  EXPECT_EQ(s.overall.fast_1, 0.0);
  EXPECT_EQ(summarize_results({}).overall.jobs, 0);
}

TEST(FleetReport, ResultsTableShowsRowsAndTheSummary) {
  const std::vector<ResultRow> rows = {row("L1_001", "cpu", "ok", 2.0),
                                       row("L1_002", "cpu", "", std::nullopt, "leased")};
  const std::string table = format_results_table(rows, summarize_results(rows));
  EXPECT_NE(table.find("problem"), std::string::npos);
  EXPECT_NE(table.find(" 2.000x [1.980, 2.020]"), std::string::npos) << table;
  EXPECT_NE(table.find("(leased)"), std::string::npos) << table;
  EXPECT_NE(table.find("1 of 2 correct; fast_1 = 0.500, fast_1.2 = 0.500; geomean speedup over correct = 2.000x"),
            std::string::npos) << table;
  EXPECT_NE(table.find("CPU device"), std::string::npos);
}

TEST(FleetReport, ResultsJsonCarriesNullsForMissingFigures) {
  const std::vector<ResultRow> rows = {row("L1_002", "cpu", "", std::nullopt, "queued")};
  const nlohmann::json json = to_json(rows, summarize_results(rows));
  EXPECT_TRUE(json["results"][0]["speedup"].is_null());
  EXPECT_EQ(json["results"][0]["job_state"], "queued");
  EXPECT_TRUE(json["summary"]["geomean_speedup"].is_null());
  EXPECT_EQ(json["per_gpu_model"].size(), 1u);
}

TEST(FleetReport, ProgressAndEta) {
  RunStatus s;
  s.run.id = 7;
  s.run.jobs = 4;
  s.run.state = "running";
  s.run.submitted_at = 1000;
  s.now = 1030;
  s.jobs_by_state = {{"done", 1}, {"failed", 1}, {"leased", 1}, {"queued", 1}};
  // No prediction: the observed rate, 2 jobs in 30 s -> 30 s for the other 2.
  ASSERT_TRUE(s.eta_seconds().has_value());
  EXPECT_DOUBLE_EQ(*s.eta_seconds(), 30.0);
  s.remaining_predicted_ms = 60000;
  s.live_workers = 2;
  EXPECT_DOUBLE_EQ(*s.eta_seconds(), 30.0);
  EXPECT_EQ(format_progress(s, 10),
            "run 7  [#####.....]  2/4 finished (1 done, 1 failed), 1 running, 1 queued  ETA 30 s");
  EXPECT_EQ(format_progress(s, 0), "run 7  2/4 finished (1 done, 1 failed), 1 running, 1 queued  ETA 30 s");
  s.run.state = "done";
  EXPECT_NE(format_progress(s, 0).find("  done"), std::string::npos);
}

TEST(FleetReport, Durations) {
  EXPECT_EQ(format_duration(4.4), "4 s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_iso_utc(0), "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace kb::cli
