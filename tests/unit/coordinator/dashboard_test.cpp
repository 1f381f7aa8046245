// The dashboard (coordinator/dashboard.h) over a real PostgreSQL: each page's JSON twin is the
// document `kb ... --json` prints from the same readers; every answer forbids external loads;
// database text is escaped; unknown runs are 404 and an unreachable database 503; requests are
// answered from the dashboard's thread, never the caller's. Skips without KB_TEST_PG_URL.
#include "coordinator/dashboard.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cli/fleet_report.h"
#include "cli/history_views.h"
#include "cli/results_reader.h"
#include "cli/results_summary.h"
#include "tests/support/postgres_test_db.h"
#include "tests/support/synthetic_results.h"

namespace kb::coord {
namespace {

using kb::testing::SyntheticPoint;

std::string header(const HttpResponse& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

// Three commits of L1_003 on one GPU (the last one 20% slower and flagged) and a problem whose
// id carries markup. Returns the last run's id.
int64_t seed(const std::string& url) {
  pqxx::connection conn(url);
  int64_t last_run = 0;
  for (int commit = 0; commit < 3; ++commit) {
    SyntheticPoint p;
    p.problem = "L1_003";
    p.commit_sha = std::string(1, static_cast<char>('a' + commit)) + "123456789abcdef";
    p.commit_time_s = 1700000000 + commit * 3600;
    const double ms = commit == 2 ? 1.2 : 1.0;
    p.custom_samples_ms = {ms, ms * 1.01, ms * 0.99, ms, ms * 1.02};
    p.reference_samples_ms = {2.0, 2.01, 1.99, 2.0, 2.02};
    SyntheticPoint odd = p;
    odd.problem = "L9_<script>x</script>";
    const std::vector<int64_t> ids = kb::testing::insert_synthetic_results(conn, {p, odd});
    pqxx::work txn(conn);
    last_run =
        txn.exec_params1("SELECT run_id FROM results WHERE id = $1", ids[0])[0].as<int64_t>();
    if (commit == 2) {
      txn.exec_params(
          "INSERT INTO regressions (result_id, problem_id, gpu_model, variant, preset, commit_sha,"
          " median_ms, baseline_ms, ratio, bound, slow_bound_ms, p_value, adjusted_p,"
          " history_points, last_result_id) VALUES ($1, 'L1_003', 'NVIDIA H200', 'custom', 'full',"
          " $2, 1.2, 1.0, 1.2, 1.05, 1.05, 0.001, 0.002, 2, $1)",
          ids[0], p.commit_sha);
    }
    txn.commit();
  }
  return last_run;
}

class DashboardTest : public ::testing::Test {};

TEST_F(DashboardTest, RunPageJsonIsKbResultsJson) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  const int64_t run = seed(db.url());
  Dashboard dashboard({.db_url = db.url()});
  const HttpResponse r = dashboard.render("/runs/" + std::to_string(run) + "?format=json");
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json page = nlohmann::json::parse(r.body);
  page.erase("run");
  auto reader = cli::ResultsReader::connect(db.url());
  KB_ASSERT_OK(reader);
  const auto rows = reader.value()->results(run);
  KB_ASSERT_OK(rows);
  EXPECT_EQ(page, cli::to_json(rows.value(), cli::summarize_results(rows.value())));
}

TEST_F(DashboardTest, HistoryJsonIsKbHistoryJsonWithTheRegressionsCommitRange) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  seed(db.url());
  Dashboard dashboard({.db_url = db.url()});
  const HttpResponse r = dashboard.render("/history/L1_003?format=json");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json page = nlohmann::json::parse(r.body);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0]["points"].size(), 3u);
  EXPECT_TRUE(page[0]["points"][2]["flagged"].get<bool>());
  ASSERT_EQ(page[0]["regressions"].size(), 1u);
  EXPECT_EQ(page[0]["regressions"][0]["from_commit"], "b123456789abcdef");
  EXPECT_EQ(page[0]["regressions"][0]["to_commit"], "c123456789abcdef");
  auto reader = cli::HistoryReader::connect(db.url());
  KB_ASSERT_OK(reader);
  cli::HistoryQuery q;
  q.problem = "L1_003";
  cli::RegressionFilter f;
  f.problem = "L1_003";
  EXPECT_EQ(page[0], cli::series_json(reader.value()->history(q)->front(),
                                      reader.value()->regressions(f).value()));
  const HttpResponse html = dashboard.render("/history/L1_003");
  EXPECT_NE(html.body.find("b123456789...c123456789"), std::string::npos);
  EXPECT_NE(html.body.find(">median (ms)</text>"), std::string::npos);
}

TEST_F(DashboardTest, EveryPageForbidsExternalLoadsAndEscapesDatabaseText) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  const int64_t run = seed(db.url());
  Dashboard dashboard({.db_url = db.url()});
  for (const std::string& target : std::vector<std::string>{
           "/", "/runs/" + std::to_string(run), "/history/L1_003", "/regressions", "/workers",
           "/compare?base=a1&head=c1", "/compare"}) {
    const HttpResponse r = dashboard.render(target);
    EXPECT_EQ(r.status, 200) << target << ": " << r.body;
    EXPECT_EQ(header(r, "Content-Security-Policy"), Dashboard::kContentSecurityPolicy) << target;
    EXPECT_EQ(header(r, "Server-Timing").rfind("page;dur=", 0), 0u) << target;
    EXPECT_EQ(r.body.find("<script"), std::string::npos) << target;
    EXPECT_EQ(r.body.find("http://"), std::string::npos) << target;
  }
  EXPECT_NE(dashboard.render("/runs/" + std::to_string(run)).body.find("L9_&lt;script&gt;"),
            std::string::npos);
}

TEST_F(DashboardTest, UnknownRunIs404AndAnUnreachableDatabase503) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  Dashboard dashboard({.db_url = db.url()});
  EXPECT_EQ(dashboard.render("/runs/999").status, 404);
  EXPECT_EQ(dashboard.render("/runs/123456").status, 404);  // ids are not capped like ?last=
  EXPECT_EQ(dashboard.render("/runs/x1").status, 404);
  EXPECT_EQ(dashboard.render("/runs/999?format=json").content_type, "application/json");
  Dashboard down({.db_url = "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1"});
  EXPECT_EQ(down.render("/").status, 503);
}

TEST_F(DashboardTest, AnswersFromItsOwnThread) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  Dashboard dashboard({.db_url = db.url()});
  std::promise<std::pair<std::thread::id, int>> answered;
  dashboard.handle("/workers", [&](HttpResponse r) {
    answered.set_value({std::this_thread::get_id(), r.status});
  });
  const auto [thread, status] = answered.get_future().get();
  EXPECT_NE(thread, std::this_thread::get_id());
  EXPECT_EQ(status, 200);
}

TEST(DashboardRoutes, ServesItsPagesOnlyAndLeavesHealthAndMetrics) {
  for (const char* t : {"/", "/runs", "/runs/3", "/history/L1_003?gpu=x", "/regressions",
                        "/workers", "/compare?base=a&head=b", "/?format=json"}) {
    EXPECT_TRUE(Dashboard::serves(t)) << t;
  }
  for (const char* t : {"/healthz", "/metrics", "/other", "/history"}) {
    EXPECT_FALSE(Dashboard::serves(t)) << t;
  }
}

}  // namespace
}  // namespace kb::coord
