// Job runners: the sim runner ends on its timer with an honest sim result; the executor runner
// runs a child without blocking and turns its crash or hang into the job's result.
#include "worker/job_runner.h"

#include "common/job_deadline.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

namespace kb {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

JobSpec sim_job(int64_t sleep_ms) {
  JobSpec job;
  job.job_id = 5;
  job.attempt = 1;
  job.problem = "sim";
  job.preset = "small";
  job.params = {{"sleep_ms", sleep_ms}};
  return job;
}

TEST(SimJobRunnerTest, FinishesAfterSleepMsWithASimResult) {
  SimJobRunner runner;
  const auto t0 = SteadyClock::now();
  runner.start(sim_job(40), t0);
  EXPECT_TRUE(runner.busy());
  EXPECT_EQ(runner.next_poll(), t0 + milliseconds(40));
  EXPECT_FALSE(runner.poll(t0 + milliseconds(39)));
  std::optional<JobOutcome> outcome = runner.poll(t0 + milliseconds(41));
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(runner.busy());
  EXPECT_EQ(outcome->result.status, JobStatus::kOk);
  EXPECT_EQ(outcome->result.device_kind, "sim");
  EXPECT_EQ(outcome->result.problem_id, "sim");
  EXPECT_EQ(outcome->result.custom.samples_ms.size(), 2u);
  EXPECT_EQ(outcome->started_at, t0);
  EXPECT_EQ(outcome->finished_at - outcome->started_at, milliseconds(41));
  EXPECT_FALSE(runner.poll(t0 + milliseconds(100)));  // once
}

TEST(SimJobRunnerTest, AbortDropsTheJob) {
  SimJobRunner runner;
  runner.start(sim_job(10), SteadyClock::now());
  runner.abort();
  EXPECT_FALSE(runner.busy());
  EXPECT_FALSE(runner.poll(SteadyClock::now() + milliseconds(50)));
}

class ChildProcessJobRunnerTest : public ::testing::Test {
 protected:
  // A fake kb-executor: records its arguments, then runs `body`.
  std::string script(const std::string& body) {
    const fs::path path = dir_ / "fake-executor.sh";
    std::ofstream(path)
        << "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"" << (dir_ / "args.txt").string() << "\"\n"
        << "out=\nprev=\nfor a in \"$@\"; do if [ \"$prev\" = --output-fd ]; then out=/proc/self/fd/$a; fi; "
           "prev=\"$a\"; done\n"
        << body << "\n";
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  }
  // Polls like the worker's loop until the outcome, or gives up after `limit`.
  static std::optional<JobOutcome> run(JobRunner& runner, const JobSpec& job, milliseconds limit) {
    runner.start(job, SteadyClock::now());
    const auto give_up = SteadyClock::now() + limit;
    while (SteadyClock::now() < give_up) {
      if (auto outcome = runner.poll(SteadyClock::now())) return outcome;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return std::nullopt;
  }
  static JobSpec job() {
    JobSpec j;
    j.job_id = 1;
    j.attempt = 1;
    j.seed = 77;
    j.problem = "L1_003";
    j.preset = "small";
    j.pack_path = "/cache/abc.so";
    return j;
  }
  ::kb::test::TempDir dir_{"kb-job-runner-test"};
};

TEST_F(ChildProcessJobRunnerTest, PassesTheJobToTheExecutorAndReadsItsResult) {
  ChildProcessJobRunner runner(
      {script("echo '{\"status\": \"mismatch\", \"message\": \"2 of 9\"}' > \"$out\""),
       "cuda",
       3,
       "/problems",
       "",
       "",
       {}});
  std::optional<JobOutcome> outcome = run(runner, job(), milliseconds(10000));
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->result.status, JobStatus::kMismatch);
  EXPECT_EQ(outcome->result.message, "2 of 9");
  EXPECT_GE(outcome->finished_at, outcome->started_at);
  std::ifstream in(dir_ / "args.txt");
  std::string all, line;
  while (std::getline(in, line)) all += line + " ";
  EXPECT_NE(all.find("--problem L1_003 --preset small --seed 77 --device cuda --gpu 3"), std::string::npos)
      << all;
  EXPECT_NE(all.find("--pack /cache/abc.so"), std::string::npos) << all;
  EXPECT_NE(all.find("--problems-dir /problems"), std::string::npos) << all;
  EXPECT_EQ(all.find("--trials"), std::string::npos) << all;  // the executor's default
}

TEST_F(ChildProcessJobRunnerTest, PassesTheRunsTrialsToTheExecutor) {
  ChildProcessJobRunner runner({script("true"), "cpu", 0, "", "", "", {}});
  JobSpec j = job();
  j.trials = 7;
  const ExecutorLaunch launch = runner.launch_for(j);
  const auto at = std::find(launch.args.begin(), launch.args.end(), "--trials");
  ASSERT_NE(at, launch.args.end());
  ASSERT_NE(at + 1, launch.args.end());
  EXPECT_EQ(*(at + 1), "7");
}

// The executor ran candidate code, so its output is a hostile peer's: nested 300,000 deep it is
// an unreadable result (crashed), where copying it once killed the worker.
TEST_F(ChildProcessJobRunnerTest, ADeeplyNestedExecutorResultIsACrashNotTheWorkers) {
  ChildProcessJobRunner runner(
      {script("{ printf '{\"status\": \"ok\", \"dims\": {\"x\": '; head -c 300000 /dev/zero | "
              "tr '\\0' '['; head -c 300000 /dev/zero | tr '\\0' ']'; printf '}}'; } > \"$out\""),
       "cpu",
       0,
       "",
       "",
       "",
       {}});
  std::optional<JobOutcome> outcome = run(runner, job(), milliseconds(10000));
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->result.status, JobStatus::kCrashed);
  EXPECT_NE(outcome->result.message.find("nested deeper"), std::string::npos)
      << outcome->result.message;
}

TEST_F(ChildProcessJobRunnerTest, ACrashIsTheJobsResult) {
  ChildProcessJobRunner runner({script("ulimit -c 0\nkill -SEGV $$"), "cpu", 0, "", "", "", {}});
  std::optional<JobOutcome> outcome = run(runner, job(), milliseconds(10000));
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->result.status, JobStatus::kCrashed);
  EXPECT_EQ(outcome->result.problem_id, "L1_003");
  EXPECT_EQ(outcome->result.device_kind, "cpu");
}

TEST_F(ChildProcessJobRunnerTest, AHangIsATimeoutAtTheDeadlineLessTheMargin) {
  ChildProcessJobRunner runner({script("sleep 60"), "cpu", 0, "", "", "", {}});
  JobSpec j = job();
  ExecutorLaunch launch = runner.launch_for(j);
  EXPECT_DOUBLE_EQ(launch.timeout_s, 600.0);  // no deadline given
  // The minimum child timeout is 10 s; drive the timeout through the process directly with a
  // short one instead of waiting that long.
  launch.timeout_s = 0.3;
  ExecutorChild process(launch);
  const auto give_up = SteadyClock::now() + std::chrono::seconds(5);
  std::optional<JobResult> result;
  while (!result && SteadyClock::now() < give_up) {
    result = process.poll();
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, JobStatus::kTimeout);
}

TEST_F(ChildProcessJobRunnerTest, AbortKillsTheChild) {
  ChildProcessJobRunner runner({script("echo $$ > \"" + (dir_ / "pid").string() + "\"\nsleep 60"),
                                "cpu",
                                0,
                                "",
                                "",
                                "",
                                {}});
  runner.start(job(), SteadyClock::now());
  for (int i = 0; i < 200 && !fs::exists(dir_ / "pid"); ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(fs::exists(dir_ / "pid"));
  std::this_thread::sleep_for(milliseconds(20));
  pid_t pid = 0;
  std::ifstream(dir_ / "pid") >> pid;
  ASSERT_GT(pid, 0);
  runner.abort();
  EXPECT_FALSE(runner.busy());
  EXPECT_NE(::kill(pid, 0), 0) << "the child is still there";
}

}  // namespace
}  // namespace kb
