// The fleet end to end: real kb-coordinator and kb-worker processes on loopback, a real
// PostgreSQL, the kb CLI. Every test ends by checking the database: each job done exactly once
// (one result row per job, every job `done`, attempts within the cap), whatever was killed.
//
// Needs KB_TEST_PG_URL (tools/test.sh starts a throwaway cluster); skips without it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/assert_ok.h"
#include "tests/support/fleet_fixture.h"
#include "tests/support/temp_dir.h"

namespace kb::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t as_int(const Result<std::string>& r) {
  return r.is_ok() && !r.value().empty() ? std::stoll(r.value()) : -1;
}

// Every job of the run done, one result row each, no attempt over the cap.
void expect_exactly_once(FleetStack& stack, int64_t run_id, int64_t jobs) {
  const std::string run = std::to_string(run_id);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM jobs WHERE run_id = " + run)), jobs);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM jobs WHERE run_id = " + run +
                                     " AND state = 'done'")), jobs)
      << stack.query_value("SELECT string_agg(id || ':' || state || ':' || coalesce(failure_reason, ''), ', ') "
                           "FROM jobs WHERE run_id = " + run + " AND state <> 'done'").value();
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM results WHERE run_id = " + run)), jobs);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(DISTINCT job_id) FROM results WHERE run_id = " + run)),
            jobs);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM jobs WHERE run_id = " + run +
                                     " AND attempt > max_attempts")), 0);
}

int64_t submit(FleetStack& stack, const std::vector<std::string>& args) {
  auto reply = stack.kb_json(args);
  KB_EXPECT_OK(reply);  // FleetFixture prints the logs
  if (!reply.is_ok()) return -1;
  return reply.value().value("run_id", int64_t{-1});
}

// The stack, its database and work directory: FleetFixture (KB_START_FLEET).
class FleetTest : public FleetFixture {
 protected:
  // Two CPU workers run `suite` at the small preset to the end; `run` is its id. `more`: further
  // `kb submit` options.
  void run_on_two_cpu_workers(FleetStack& stack, const std::string& suite,
                              const std::string& time_cap, seconds deadline, int64_t& run,
                              const std::vector<std::string>& more = {}) {
    stack.add_worker("cpu-a", {"--device", "cpu"});
    stack.add_worker("cpu-b", {"--device", "cpu"});
    std::vector<std::string> args = {"submit", suite,       "--preset",   "small",
                                     "--pack", pack_path(), "--time-cap", time_cap};
    args.insert(args.end(), more.begin(), more.end());
    run = submit(stack, args);
    ASSERT_GT(run, 0);
    ASSERT_TRUE(stack.wait_for_run(run, deadline)) << "run " << run << " did not finish";
  }
};

TEST_F(FleetTest, SmallSuiteRunsEndToEndOnCpuWorkersWithEverySample) {
  KB_START_FLEET(stack);
  int64_t run = 0;
  // --trials 4: the run's trials reach every job's executor (4, not the default 5).
  ASSERT_NO_FATAL_FAILURE(
      run_on_two_cpu_workers(stack, "kernelbench22", "1", seconds(600), run, {"--trials", "4"}));
  expect_exactly_once(stack, run, 22);
  const std::string r = std::to_string(run);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM results WHERE run_id = " + r +
                                     " AND (result->>'correctness_trials')::int = 4")),
            22);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM results WHERE run_id = " + r +
                                     " AND status = 'ok'")), 22);
  EXPECT_EQ(as_int(stack.query_value(
                "SELECT count(*) FROM results WHERE run_id = " + r +
                " AND cardinality(custom_samples_ms) > 0 AND cardinality(reference_samples_ms) > 0"
                " AND device_kind = 'cpu' AND environment <> '{}'::jsonb")), 22);
  auto table = stack.kb_json({"results", r});
  KB_ASSERT_OK(table);
}

// The imported suite has no custom kernels: on the CPU device the candidate pack's cpu_fp32
// variant (the graph interpreter in float) stands in for them, so every problem of it must be
// `ok` against the golden model at the small preset.
TEST_F(FleetTest, ImportedSuiteIsOkOnCpuWorkersAtTheSmallPreset) {
  KB_START_FLEET(stack);
  int64_t run = 0;
  ASSERT_NO_FATAL_FAILURE(
      run_on_two_cpu_workers(stack, "kernelbench-l1l2", "0.2", seconds(800), run));
  const std::string r = std::to_string(run);
  const int64_t jobs = as_int(stack.query_value("SELECT count(*) FROM jobs WHERE run_id = " + r));
  EXPECT_GT(jobs, 22);
  expect_exactly_once(stack, run, jobs);
  const Result<std::string> not_ok = stack.query_value(
      "SELECT coalesce(string_agg(problem_id || ' ' || status || ': ' || coalesce(message, ''), "
      "'; '), '') FROM results WHERE run_id = " +
      r + " AND status <> 'ok'");
  KB_ASSERT_OK(not_ok);
  EXPECT_EQ(not_ok.value(), "") << "problems not ok";
}

TEST_F(FleetTest, TwentyWorkerKillsMidJobLoseAndDuplicateNothing) {
  KB_START_FLEET(stack);
  for (int i = 0; i < 3; ++i) stack.add_worker("sim-" + std::to_string(i), {"--device", "sim"});
  const int64_t jobs = 150;
  const int64_t run = submit(stack, {"submit", "--sim-jobs", std::to_string(jobs) + ":100"});
  ASSERT_GT(run, 0);
  std::mt19937 random(7);
  for (int kill = 0; kill < 20; ++kill) {
    std::this_thread::sleep_for(milliseconds(250 + random() % 200));
    const int victim = static_cast<int>(random() % stack.worker_count());
    stack.kill_worker(victim, SIGKILL);
    KB_ASSERT_OK(stack.restart_worker(victim));
  }
  ASSERT_TRUE(stack.wait_for_run(run, seconds(120))) << "run did not finish";
  expect_exactly_once(stack, run, jobs);
  // The kills hit running jobs: some results come from a second or later attempt.
  EXPECT_GE(as_int(stack.query_value("SELECT count(*) FROM results WHERE run_id = " +
                                     std::to_string(run) + " AND attempt > 1")), 5);
}

TEST_F(FleetTest, CoordinatorKilledAndRestartedMidRunLosesNothing) {
  KB_START_FLEET(stack);
  for (int i = 0; i < 3; ++i) stack.add_worker("sim-" + std::to_string(i), {"--device", "sim"});
  const int64_t jobs = 120;
  const int64_t run = submit(stack, {"submit", "--sim-jobs", std::to_string(jobs) + ":50"});
  ASSERT_GT(run, 0);
  const std::string count_sql = "SELECT count(*) FROM results WHERE run_id = " + std::to_string(run);
  const auto end = std::chrono::steady_clock::now() + seconds(60);
  while (as_int(stack.query_value(count_sql)) < jobs / 3 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  stack.signal_coordinator(SIGKILL);
  ASSERT_TRUE(stack.wait_coordinator_exit(seconds(5)));
  std::this_thread::sleep_for(milliseconds(1500));  // workers notice and start reconnecting
  KB_ASSERT_OK(stack.start_coordinator());
  ASSERT_TRUE(stack.wait_for_run(run, seconds(120))) << "run did not finish after the restart";
  expect_exactly_once(stack, run, jobs);
}

TEST_F(FleetTest, SegfaultAndHangBecomeResultsAndTheWorkerGoesOn) {
  KB_START_FLEET(stack);
  stack.add_worker("cpu-a", {"--device", "cpu"});
  const int64_t run = submit(stack, {"submit", "L1_098", "L1_003", "L2_093", "--preset", "small",
                                     "--pack", faulty_pack_path(), "--time-cap", "1",
                                     "--job-timeout", "12"});
  ASSERT_GT(run, 0);
  ASSERT_TRUE(stack.wait_for_run(run, seconds(120))) << "run did not finish";
  expect_exactly_once(stack, run, 3);
  const std::string r = std::to_string(run);
  auto status_of = [&](const std::string& problem) {
    return stack.query_value("SELECT status FROM results WHERE run_id = " + r +
                             " AND problem_id = '" + problem + "'").value();
  };
  EXPECT_EQ(status_of("L1_098"), "crashed");
  EXPECT_EQ(status_of("L1_003"), "timeout");
  EXPECT_EQ(status_of("L2_093"), "ok");
}


// A private cluster (tools/pg-local.sh), stopped for 30 s while jobs run: the coordinator keeps
// dispatching, holds the results it cannot commit, and workers keep theirs until acknowledged.
TEST_F(FleetTest, DatabaseDownForThirtySecondsMidRunLosesNothing) {
  if (std::getenv("KB_TEST_PG_URL") == nullptr) GTEST_SKIP() << kNeedsPostgres;
  const ::kb::test::TempDir cluster_dir("kb-pg-outage");
  const std::string cluster = cluster_dir.string();
  const std::string pg_local = source_dir() + "/tools/pg-local.sh";
  std::string url;
  ASSERT_EQ(run_command({"/bin/bash", pg_local, "start", cluster}, &url, seconds(120)), 0);
  url = url.substr(0, url.find_last_not_of("\n") + 1);
  struct StopCluster {
    std::string pg_local, dir;
    ~StopCluster() {
      std::string ignored;
      run_command({"/bin/bash", pg_local, "stop", dir}, &ignored, std::chrono::seconds(60));
    }
  } stop_cluster{pg_local, cluster};

  FleetStack& stack = make_stack(url);
  KB_ASSERT_OK(stack.start_coordinator());
  for (int i = 0; i < 3; ++i) stack.add_worker("sim-" + std::to_string(i), {"--device", "sim"});
  const int64_t jobs = 450;  // 3 workers x 100 ms: ~15 s of work
  const int64_t run = submit(stack, {"submit", "--sim-jobs", std::to_string(jobs) + ":100"});
  ASSERT_GT(run, 0);
  const std::string count_sql = "SELECT count(*) FROM results WHERE run_id = " + std::to_string(run);
  const auto end = std::chrono::steady_clock::now() + seconds(60);
  while (as_int(stack.query_value(count_sql)) < jobs / 5 && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  std::string out;
  ASSERT_EQ(run_command({"/bin/bash", pg_local, "stop", cluster}, &out, seconds(60)), 0);
  std::this_thread::sleep_for(seconds(30));
  ASSERT_EQ(run_command({"/bin/bash", pg_local, "start", cluster}, &out, seconds(60)), 0);
  ASSERT_TRUE(stack.wait_for_run(run, seconds(120))) << "run did not finish after the outage";
  expect_exactly_once(stack, run, jobs);
  stack_.reset();  // before the cluster stops
}

}  // namespace
}  // namespace kb::testing
