// The history queries in a real PostgreSQL (skips without KB_TEST_PG_URL): a series' points in
// commit order, commit prefixes, `kb compare` on two recorded commits with a known 4% change
// (reported "slower") and on an A/A pair of commits ("same"), the regressions listing, and a
// report built from the database whose HTML holds the expected figures.
#include "cli/history_reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "cli/compare_table.h"
#include "cli/report_builder.h"
#include "coordinator/regression_store.h"
#include "tests/support/assert_ok.h"
#include "tests/support/postgres_test_db.h"
#include "tests/support/synthetic_results.h"

namespace kb::cli {
namespace {

using kb::testing::SyntheticPoint;

constexpr int64_t kT0 = 1700000000;

class HistoryReaderTest : public ::testing::Test {
 protected:
  // Commits c00..c29 (1 ms), then "aa" + "ab" (A/A at 1 ms), then "bb" (4% slower), for problems
  // P1 and P2 on one GPU model; P2's custom variant fails at "bb".
  void populate(const std::string& url) {
    KB_ASSERT_OK(kb::testing::apply_migrations(url));
    conn_ = std::make_unique<pqxx::connection>(url);
    std::mt19937_64 rng(17);
    std::normal_distribution<double> noise(0, 0.01);
    auto samples = [&](double ms) {
      std::vector<double> v(50);
      for (double& x : v) x = ms * std::exp(noise(rng));
      return v;
    };
    auto commit = [&](const std::string& sha, int index, double ms, const std::string& p2_status) {
      std::vector<SyntheticPoint> points;
      for (const std::string problem : {"P1", "P2"}) {
        SyntheticPoint p;
        p.problem = problem;
        p.commit_sha = sha;
        p.commit_time_s = kT0 + index * 60;
        p.custom_samples_ms = samples(ms);
        p.reference_samples_ms = samples(2.0);
        p.floor_ms = 0.5;
        if (problem == "P2") p.status = p2_status;
        points.push_back(p);
      }
      const std::vector<int64_t> ids = kb::testing::insert_synthetic_results(*conn_, points);
      int flagged = 0;
      KB_ASSERT_OK(coord::detect_regressions(*conn_, ids, RegressionConfig{}, &flagged));
    };
    for (int i = 0; i < 30; ++i) commit("c" + std::string(i < 10 ? "0" : "") + std::to_string(i), i,
                                        1.0, "ok");
    commit("aa0001", 30, 1.0, "ok");
    commit("ab0002", 31, 1.0, "ok");
    commit("bb0003", 32, 1.04, "mismatch");
    auto reader = HistoryReader::connect(url);
    KB_ASSERT_OK(reader);
    reader_ = std::move(reader).value();
  }
  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<HistoryReader> reader_;
};

TEST_F(HistoryReaderTest, SeriesInCommitOrder) {
  KB_REQUIRE_TEST_DB(db);
  populate(db.url());
  HistoryQuery q;
  q.problem = "P1";
  q.last = 5;
  auto series = reader_->history(q);
  KB_ASSERT_OK(series);
  ASSERT_EQ(series->size(), 1u);
  const std::vector<HistoryPoint>& points = series->front().points;
  ASSERT_EQ(points.size(), 5u);
  EXPECT_EQ(points.front().commit_sha, "c28");
  EXPECT_EQ(points.back().commit_sha, "bb0003");
  EXPECT_EQ(points.back().samples_ms.size(), 50u);
  EXPECT_NEAR(*points.back().median_ms, 1.04, 0.01);
  q.variant = "bogus";
  EXPECT_EQ(reader_->history(q).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HistoryReaderTest, CommitPrefixes) {
  KB_REQUIRE_TEST_DB(db);
  populate(db.url());
  EXPECT_EQ(reader_->resolve_commit("bb").value(), "bb0003");
  EXPECT_EQ(reader_->resolve_commit("a").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reader_->resolve_commit("ff").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reader_->resolve_commit("x'; drop").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(HistoryReaderTest, CompareReportsTheKnownChangeAndSameOnAA) {
  KB_REQUIRE_TEST_DB(db);
  populate(db.url());
  auto rows = compare_results(reader_->results_at("aa", "", "custom").value(),
                              reader_->results_at("bb", "", "custom").value(), {});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].problem, "P2");  // the status change first
  EXPECT_EQ(rows[0].verdict, "status");
  EXPECT_EQ(rows[1].verdict, "slower");
  EXPECT_NEAR(rows[1].change.ratio, 1.04, 0.01);
  EXPECT_LT(rows[1].p_value, 1e-6);
  auto same = compare_results(reader_->results_at("aa", "", "custom").value(),
                              reader_->results_at("ab", "", "custom").value(), {});
  for (const CompareRow& r : same) EXPECT_EQ(r.verdict, "same") << r.problem;
  EXPECT_EQ(reader_->results_at("run:999", "", "custom").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reader_->results_at("run:x", "", "custom").status().code(),
            StatusCode::kInvalidArgument);
}

// The second-order SQL injection of issue 13 (item 6): a run stored before SUBMIT validated SHAs,
// with commit "abc1' OR ''='". `kb compare abc1 def0` resolved the prefix to that stored text and
// pasted it into SQL, so the base matched every row and the head was compared with itself.
TEST_F(HistoryReaderTest, CompareWithAnInjectedStoredCommitDoesNotCompareTheHeadWithItself) {
  KB_REQUIRE_TEST_DB(db);
  populate(db.url());
  const std::string injected = "abc1' OR ''='";
  std::vector<SyntheticPoint> points;
  for (const auto& [sha, ms, index] : {std::tuple{injected, 1.0, 40}, std::tuple{std::string("def0"), 1.04, 41}}) {
    SyntheticPoint p;
    p.problem = "P1";
    p.commit_sha = sha;
    p.commit_time_s = kT0 + index * 60;
    for (int i = 0; i < 50; ++i) p.custom_samples_ms.push_back(ms * (1 + 0.001 * (i % 5)));
    p.reference_samples_ms = std::vector<double>(50, 2.0);
    points.push_back(p);
  }
  kb::testing::insert_synthetic_results(*conn_, points);
  auto base = reader_->results_at("abc1", "", "custom");
  KB_ASSERT_OK(base);
  ASSERT_EQ(base->size(), 1u);  // only the base run's point, not the newest of every series
  EXPECT_EQ(base->front().commit_sha, injected);
  EXPECT_NEAR(*base->front().median_ms, 1.002, 1e-9);
  auto head = reader_->results_at("def0", "", "custom");
  KB_ASSERT_OK(head);
  const auto rows = compare_results(base.value(), head.value(), {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].verdict, "same");
  EXPECT_NEAR(rows[0].change.ratio, 1.04, 0.001);
}

TEST_F(HistoryReaderTest, RegressionsAndReport) {
  KB_REQUIRE_TEST_DB(db);
  populate(db.url());
  auto regressions = reader_->regressions({});
  KB_ASSERT_OK(regressions);
  ASSERT_EQ(regressions->size(), 1u);  // P1's 4% step (P2 failed: not a timing point)
  EXPECT_EQ(regressions->front().problem, "P1");
  EXPECT_EQ(regressions->front().commit_sha, "bb0003");
  EXPECT_EQ(regressions->front().state, "flagged");
  RegressionFilter other_gpu;
  other_gpu.gpu_model = "none";
  EXPECT_TRUE(reader_->regressions(other_gpu)->empty());

  ReportRequest request;
  request.commits = "c00..bb";
  request.history_points = 100;
  auto report = build_report(*reader_, request);
  KB_ASSERT_OK(report);
  EXPECT_EQ(report->problems.size(), 2u);
  EXPECT_EQ(report->regressions.size(), 1u);
  EXPECT_EQ(report->summary.overall.correct, 1);
  ASSERT_EQ(report->problems[0].history.size(), 33u);
  EXPECT_TRUE(report->problems[0].history.back().flagged);
  const std::string html = render_report_html(report.value());
  EXPECT_NE(html.find("commits c00..bb0003"), std::string::npos);
  EXPECT_NE(html.find("<td class=l>flagged</td>"), std::string::npos);
  EXPECT_NE(html.find(">mismatch<"), std::string::npos);
  const int64_t run = reader_->results_at("bb", "", "custom")->front().run_id;
  request = {};
  request.run_id = run;
  auto by_run = build_report(*reader_, request);
  KB_ASSERT_OK(by_run);
  EXPECT_EQ(by_run->regressions.size(), 1u);
}

}  // namespace
}  // namespace kb::cli
