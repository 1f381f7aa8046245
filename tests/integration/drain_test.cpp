// The worker's drain under SIGTERM (issue 14), with real kb-coordinator and kb-worker processes
// and a real PostgreSQL: the running job completes, held jobs go back at once without counting an
// attempt, and the worker is marked gone in under 1 s. Each test counts executions and rows
// (fault_fixture.h). Needs KB_TEST_PG_URL; skips without it.
#include <signal.h>

#include <chrono>
#include <string>

#include <pqxx/pqxx>

#include "tests/integration/fault_fixture.h"

namespace kb::testing::fault {
namespace {

// Issue 14's drain: SIGTERM to a worker mid-job. The running job completes and is stored once;
// the prefetched one is requeued at once (BYE {draining, release}) and runs once elsewhere; the
// worker exits 0 after BYE {final} and is marked gone in under 1 s, not after liveness.
TEST_F(FaultTest, SigtermDrainsFinishesTheRunningJobRequeuesThePrefetchedOneAndSaysBye) {
  const auto t0 = Clock::now();
  KB_START_FLEET(stack);
  const int drained = add_worker("drained");
  // One attempt per job: a given-back job that counted as one would fail instead of running.
  const int64_t run = submit_sim({2000, 2000}, {"--max-attempts", "1"});
  ASSERT_GT(run, 0);
  const std::string r = std::to_string(run);
  const int64_t running = first_job(run), prefetched = last_job(run);
  ASSERT_TRUE(wait_started(running, 1));
  ASSERT_TRUE(stack.wait_for_value("SELECT count(*) FROM jobs WHERE run_id = " + r + " AND state = 'leased'",
                                   "2", milliseconds(10000)));
  const auto sigterm_at = Clock::now();
  stack.signal_worker(drained, SIGTERM);
  const auto requeued = stack.wait_for_value(
      "SELECT state FROM jobs WHERE id = " + std::to_string(prefetched), "queued", milliseconds(1500));
  ASSERT_TRUE(requeued) << "the prefetched job was not requeued at once";
  const std::optional<int> exit = stack.wait_worker_exit(drained, milliseconds(15000));
  ASSERT_TRUE(exit.has_value()) << "the drained worker did not exit";
  EXPECT_EQ(*exit, 0);
  const auto gone = stack.wait_for_value("SELECT state FROM workers WHERE name = 'drained'", "gone",
                                         milliseconds(5000));
  ASSERT_TRUE(gone) << "the worker was not marked gone";
  std::cout << "[fault] drain: prefetched job requeued after " << requeued->count()
            << " ms (from SIGTERM), worker gone after " << gone->count() << " ms (from its exit; "
            << since(sigterm_at).count() << " ms from SIGTERM)\n";
  EXPECT_LT(*gone, milliseconds(1000));
  EXPECT_EQ(rows_of_job(running), 1);  // delivered and acked before the worker left

  add_worker("after");
  ASSERT_TRUE(stack.wait_for_run(run, seconds(30)));
  EXPECT_EQ(value("SELECT count(*) FROM results WHERE run_id = " + r), 2);
  EXPECT_EQ(rows_of_job(prefetched), 1);
  EXPECT_EQ(stack.executions()[running], 1);
  EXPECT_EQ(stack.executions("start", "drained")[running], 1);
  EXPECT_EQ(stack.executions()[prefetched], 1);
  EXPECT_EQ(stack.executions("start", "after")[prefetched], 1);
  // Leased twice (attempt 2 in its row), run once, and not failed under max_attempts 1.
  EXPECT_EQ(value("SELECT attempt FROM results WHERE job_id = " + std::to_string(prefetched)), 2);
  EXPECT_EQ(value("SELECT attempt FROM results WHERE job_id = " + std::to_string(running)), 1);
  report("SIGTERM drain", "1+1/" + std::to_string(total(stack.executions())),
         "2/" + std::to_string(value("SELECT count(*) FROM results WHERE run_id = " + r)), t0);
}

// Issue 14's race: a job leased to a worker just before its SIGTERM, whose JOB had not reached it
// when it said BYE {draining}. The lease's commit is held back by a row lock until the
// coordinator has read that BYE. The job must not run on the draining worker, must come back
// without waiting for BYE {final}, and must not count as an attempt (max_attempts 1): it runs
// once elsewhere, as attempt 2. (It used to be ignored by the worker, then requeued as a counted
// attempt at BYE {final}: failed.)
TEST_F(FaultTest, AJobLeasedAsTheWorkerDrainsIsRequeuedUncountedAndRunsOnceElsewhere) {
  const auto t0 = Clock::now();
  KB_START_FLEET(stack);
  const int drained = add_worker("drained");
  const int64_t run = submit_sim({1500, 1500});
  ASSERT_GT(run, 0);
  const int64_t first = first_job(run), second = last_job(run);
  ASSERT_TRUE(wait_started(first, 1));
  const int64_t late_run = submit_sim({500}, {"--max-attempts", "1"});
  ASSERT_GT(late_run, 0);
  const int64_t late = first_job(late_run);
  const std::string l = std::to_string(late);
  ASSERT_EQ(stack.query_value("SELECT state || attempt FROM jobs WHERE id = " + l).value(),
            "queued0");

  // The lease of `late` (made when `first` ends and the worker asks for one more) waits on this.
  pqxx::connection locker(db_->url());
  auto hold = std::make_unique<pqxx::work>(locker);
  hold->exec("SELECT id FROM jobs WHERE id = " + l + " FOR UPDATE");
  ASSERT_TRUE(wait_started(second, 1));
  ASSERT_TRUE(stack.wait_for_value("SELECT count(*) > 0 FROM pg_locks WHERE NOT granted", "t",
                                   milliseconds(10000)))
      << "the lease of the late job never waited on the row lock";
  stack.signal_worker(drained, SIGTERM);
  ASSERT_TRUE(wait_for_text(stack.work_dir() + "/coordinator.log", "said BYE (draining)",
                            milliseconds(5000)));
  const auto unlocked_at = Clock::now();
  hold->commit();
  hold.reset();
  const auto requeued = stack.wait_for_value("SELECT state || attempt FROM jobs WHERE id = " + l,
                                             "queued1", milliseconds(1500));
  ASSERT_TRUE(requeued) << "the late job was not requeued at once";
  const std::optional<int> exit = stack.wait_worker_exit(drained, milliseconds(15000));
  ASSERT_TRUE(exit.has_value()) << "the drained worker did not exit";
  EXPECT_EQ(*exit, 0);
  const bool given_back_by_worker = wait_for_text(stack.work_dir() + "/worker-drained.log",
                                                  "arrived while draining", milliseconds(0));
  std::cout << "[fault] late JOB: requeued " << requeued->count()
            << " ms after the row lock was released ("
            << (given_back_by_worker ? "given back by the worker" : "not sent by the coordinator")
            << "; " << since(unlocked_at).count() << " ms to the worker's exit)\n";

  add_worker("after");
  ASSERT_TRUE(stack.wait_for_run(late_run, seconds(30)));
  ASSERT_TRUE(stack.wait_for_run(run, seconds(30)));
  EXPECT_EQ(stack.query_value("SELECT state FROM jobs WHERE id = " + l).value(), "done");
  EXPECT_EQ(rows_of_job(late), 1);
  EXPECT_EQ(value("SELECT attempt FROM results WHERE job_id = " + l), 2);
  EXPECT_EQ(stack.executions("start", "drained")[late], 0);
  EXPECT_EQ(stack.executions("start", "after")[late], 1);
  EXPECT_EQ(stack.executions()[first], 1);
  EXPECT_EQ(stack.executions()[second], 1);
  EXPECT_EQ(rows_of_job(first) + rows_of_job(second), 2);
  report("late JOB while draining", "3/" + std::to_string(total(stack.executions())),
         "3/" + std::to_string(value("SELECT count(*) FROM results")), t0);
}

}  // namespace
}  // namespace kb::testing::fault
