// ResultsReader against a real, migrated PostgreSQL database (skips without KB_TEST_PG_URL), and
// `kb runs / status / results / workers` on it as a user runs them.
#include "cli/results_reader.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "cli/cli_app.h"
#include "cli/fleet_commands.h"
#include "tests/support/assert_ok.h"
#include "tests/support/postgres_test_db.h"

namespace kb::cli {
namespace {

// One worker, one run of three jobs: L1_001 done (ok, 2x), L1_002 done (mismatch), L1_003 leased.
void insert_fixture(const std::string& url) {
  pqxx::connection c(url);
  pqxx::work w(c);
  w.exec(R"SQL(
INSERT INTO workers (name, device_kind, gpu_model, state) VALUES ('host-cpu', 'cpu', 'cpu', 'busy');
INSERT INTO runs (submitted_by, suite, problems, preset, gpu_models, commit_sha, branch, state)
  VALUES ('me@host', 'kernelbench22', '{L1_001,L1_002,L1_003}', 'small', '{}', 'deadbeef', 'main', 'running');
INSERT INTO jobs (run_id, problem_id, preset, seed, predicted_ms, state, attempt, worker_id) VALUES
  (1, 'L1_001', 'small', 5, 1000, 'done', 1, 1),
  (1, 'L1_002', 'small', 5, 1000, 'done', 1, 1),
  (1, 'L1_003', 'small', 5, 4000, 'leased', 2, 1);
INSERT INTO results (job_id, run_id, attempt, worker_id, problem_id, preset, gpu_model, device_kind,
                     status, reference_median_ms, custom_median_ms, speedup, speedup_ci_low,
                     speedup_ci_high, custom_tflops, result) VALUES
  (1, 1, 1, 1, 'L1_001', 'small', 'cpu', 'cpu', 'ok', 2.0, 1.0, 2.0, 1.9, 2.1, 0.5, '{}'),
  (2, 1, 1, 1, 'L1_002', 'small', 'cpu', 'cpu', 'mismatch', 2.0, 4.0, 0.5, 0.4, 0.6, 0.1, '{}');
)SQL");
  w.commit();
}

TEST(ResultsReader, ReadsRunsStatusResultsAndWorkers) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  insert_fixture(db.url());
  auto reader = ResultsReader::connect(db.url());
  KB_ASSERT_OK(reader);

  auto runs = reader.value()->runs(10);
  KB_ASSERT_OK(runs);
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().jobs, 3);
  EXPECT_EQ(runs->front().done, 2);
  EXPECT_EQ(runs->front().suite, "kernelbench22");
  EXPECT_TRUE(runs->front().gpu_models.empty());

  auto status = reader.value()->run_status(1);
  KB_ASSERT_OK(status);
  EXPECT_EQ(status->jobs_by_state.at("done"), 2);
  EXPECT_EQ(status->jobs_by_state.at("leased"), 1);
  EXPECT_EQ(status->finished(), 2);
  EXPECT_DOUBLE_EQ(status->remaining_predicted_ms, 4000);
  EXPECT_EQ(status->live_workers, 1);
  EXPECT_DOUBLE_EQ(*status->eta_seconds(), 4.0);
  EXPECT_FALSE(status->is_final());

  auto results = reader.value()->results(1);
  KB_ASSERT_OK(results);
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ(results.value()[0].status, "ok");
  EXPECT_DOUBLE_EQ(*results.value()[0].speedup, 2.0);
  EXPECT_EQ(results.value()[0].worker, "host-cpu");
  EXPECT_EQ(results.value()[2].status, "");
  EXPECT_EQ(results.value()[2].job_state, "leased");
  EXPECT_EQ(results.value()[2].attempt, 2);

  auto workers = reader.value()->workers();
  KB_ASSERT_OK(workers);
  ASSERT_EQ(workers->size(), 1u);
  EXPECT_EQ(workers->front().jobs_done, 2);
  EXPECT_EQ(workers->front().jobs_leased, 1);

  const auto missing = reader.value()->run_status(99);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(ResultsReader, CommandsPrintTablesAndJson) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  insert_fixture(db.url());
  const auto kb = [&](std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), "kb");
    args.push_back("--db");
    args.push_back(db.url());
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    CLI::App app{"kb"};
    add_fleet_commands(app);
    ::testing::internal::CaptureStdout();
    const int code = run_app(app, static_cast<int>(argv.size()), argv.data());
    *out = ::testing::internal::GetCapturedStdout();
    return code;
  };
  std::string out;
  ASSERT_EQ(kb({"results", "1"}, &out), kExitOk);
  EXPECT_NE(out.find("1 of 3 correct; fast_1 = 0.333"), std::string::npos) << out;
  ASSERT_EQ(kb({"results", "1", "--json"}, &out), kExitOk);
  EXPECT_EQ(nlohmann::json::parse(out)["summary"]["correct"], 1);
  ASSERT_EQ(kb({"status", "1"}, &out), kExitOk);
  EXPECT_NE(out.find("run 1: running"), std::string::npos) << out;
  ASSERT_EQ(kb({"runs", "--json"}, &out), kExitOk);
  EXPECT_EQ(nlohmann::json::parse(out)[0]["commit_sha"], "deadbeef");
  ASSERT_EQ(kb({"workers"}, &out), kExitOk);
  EXPECT_NE(out.find("host-cpu"), std::string::npos) << out;
  EXPECT_EQ(kb({"status", "99"}, &out), kExitUsage);
}

TEST(ResultsReader, TheGateBaselineIsTheLastFinishedRunWithResultsOfThePresetOnTheBranch) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(kb::testing::apply_migrations(db.url()));
  insert_fixture(db.url());  // run 1: main, small, running
  {
    pqxx::connection c(db.url());
    pqxx::work w(c);
    // 2: main small done with a result (the answer); 3: main full done; 4: feature small done;
    // 5: main small done without results; 6: main small done, but after the head (run 7).
    w.exec(R"SQL(
INSERT INTO runs (submitted_by, problems, preset, gpu_models, branch, state) VALUES
  ('me', '{L1_001}', 'small', '{}', 'main', 'done'), ('me', '{L1_001}', 'full', '{}', 'main', 'done'),
  ('me', '{L1_001}', 'small', '{}', 'feature', 'done'), ('me', '{L1_001}', 'small', '{}', 'main', 'done'),
  ('me', '{L1_001}', 'small', '{}', 'main', 'done');
INSERT INTO jobs (run_id, problem_id, preset, seed, state) VALUES
  (2, 'L1_001', 'small', 1, 'done'), (3, 'L1_001', 'full', 1, 'done'),
  (4, 'L1_001', 'small', 1, 'done'), (6, 'L1_001', 'small', 1, 'done');
INSERT INTO results (job_id, run_id, attempt, problem_id, preset, gpu_model, device_kind, status, result)
  SELECT j.id, j.run_id, 1, 'L1_001', j.preset, 'cpu', 'cpu', 'ok', '{}' FROM jobs j WHERE j.run_id > 1;
)SQL");
    w.commit();
  }
  auto reader = ResultsReader::connect(db.url());
  KB_ASSERT_OK(reader);
  auto before_6 = reader.value()->last_run_on_branch("main", "small", 6);
  KB_ASSERT_OK(before_6);
  EXPECT_EQ(before_6.value(), std::optional<int64_t>(2));
  EXPECT_EQ(reader.value()->last_run_on_branch("main", "small", 7).value(),
            std::optional<int64_t>(6));
  EXPECT_EQ(reader.value()->last_run_on_branch("main", "full", 7).value(),
            std::optional<int64_t>(3));
  EXPECT_FALSE(reader.value()->last_run_on_branch("release", "small", 7).value().has_value());
}

}  // namespace
}  // namespace kb::cli
