#include "coordinator/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <chrono>

namespace kb::coord {
namespace {

class FakeClock final : public Clock {
 public:
  SteadyTime steady_now() const override { return steady_; }
  SystemTime system_now() const override { return SystemTime{} + (steady_ - SteadyTime{}); }
  void advance(Millis d) { steady_ += d; }

 private:
  SteadyTime steady_ = SteadyTime{} + std::chrono::hours(1);
};

JobRecord job(int64_t id, double predicted_ms = 0, std::optional<std::string> model = std::nullopt,
              int64_t run_id = 1) {
  JobRecord r;
  r.id = id;
  r.run_id = run_id;
  r.problem_id = "P" + std::to_string(id);
  r.preset = "small";
  r.gpu_model = std::move(model);
  r.predicted_ms = predicted_ms;
  r.state = "queued";
  r.pack_hash = "abc";
  r.run_config = {{"time_cap_s", 3}};
  return r;
}

WorkerIdentity identity(const std::string& model) {
  WorkerIdentity w;
  w.name = "w-" + model;
  w.device_kind = "cuda";
  w.gpu_model = model;
  return w;
}

class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest() : scheduler_(config(), clock_) {}
  static SchedulerConfig config() {
    SchedulerConfig c;
    c.heartbeat = Millis(1000);
    c.liveness = 3;
    c.lease_grace = Millis(10000);
    return c;
  }
  // The job ids sent to each routing id, in order.
  std::vector<std::pair<std::string, int64_t>> sent() {
    std::vector<std::pair<std::string, int64_t>> out;
    for (const OutgoingMessage& m : scheduler_.take_messages()) {
      EXPECT_EQ(m.message.type, wire::MessageType::kJob);
      out.emplace_back(m.routing_id, m.message.body["job_id"].get<int64_t>());
    }
    return out;
  }
  void ready(int64_t worker_id, const std::string& routing, const std::string& model = "H200",
             std::vector<InFlight> in_flight = {}) {
    scheduler_.worker_ready(worker_id, routing, identity(model), in_flight);
  }
  ResultDisposition result(const std::string& routing, int64_t job_id, int attempt) {
    return scheduler_.result(routing, job_id, attempt, ResultRow{});
  }
  void heartbeat_all(const std::vector<std::string>& routing_ids) {
    for (const auto& r : routing_ids) scheduler_.heard(r);
  }

  FakeClock clock_;
  Scheduler scheduler_;
};

TEST_F(SchedulerTest, LongestPredictedFirstThenLowerId) {
  scheduler_.submit({job(1, 10), job(2, 50), job(3, 50), job(4, 5)});
  ready(7, "a");
  scheduler_.add_credits("a", 4);
  auto s = sent();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].second, 2);
  EXPECT_EQ(s[1].second, 3);
  EXPECT_EQ(s[2].second, 1);
  EXPECT_EQ(s[3].second, 4);
}

// Jobs submitted to waiting workers go longest first, each to the worker holding the least
// predicted work: with 2 workers x 2 credits and jobs of 8, 7, 6, 5 ms, one worker gets 8 and 5,
// the other 7 and 6 (not 8 and 7 on one worker, which would double the makespan).
TEST_F(SchedulerTest, SubmittedJobsAreSpreadByListScheduling) {
  ready(1, "a");
  ready(2, "b");
  scheduler_.add_credits("a", 2);
  scheduler_.add_credits("b", 2);
  scheduler_.submit({job(1, 8), job(2, 7), job(3, 6), job(4, 5)});
  std::map<std::string, std::vector<int64_t>> by_worker;
  for (const auto& [routing, job_id] : sent()) by_worker[routing].push_back(job_id);
  ASSERT_EQ(by_worker.size(), 2u);
  std::vector<std::vector<int64_t>> held = {by_worker["a"], by_worker["b"]};
  std::sort(held.begin(), held.end());
  EXPECT_EQ(held[0], (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(held[1], (std::vector<int64_t>{2, 3}));
}

// Backpressure: paused, credits are kept but nothing is sent; resuming sends at once.
TEST_F(SchedulerTest, PausedDispatchKeepsCreditsUntilResumed) {
  ready(1, "a");
  scheduler_.set_paused(true);
  scheduler_.submit({job(1, 5), job(2, 4)});
  scheduler_.add_credits("a", 2);
  EXPECT_TRUE(sent().empty());
  scheduler_.set_paused(false);
  auto s = sent();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].second, 1);
}

TEST_F(SchedulerTest, JobMessageCarriesTheContractFields) {
  scheduler_.submit({job(1, 1000)});
  ready(7, "a");
  scheduler_.add_credits("a", 1);
  auto messages = scheduler_.take_messages();
  ASSERT_EQ(messages.size(), 1u);
  const auto& b = messages[0].message.body;
  EXPECT_EQ(b["attempt"], 1);
  EXPECT_EQ(b["pack"], "abc");
  EXPECT_EQ(b["run_id"], 1);
  EXPECT_EQ(b["deadline_ms"], 60000);  // max(60 s, 3 s + 6 s + 30 s)
  EXPECT_TRUE(wire::decode(wire::encode(messages[0].message)).ok);
  EXPECT_EQ(lease_budget(20000, 10).count(), 3 * 20000 + 20000 + 30000);
}

TEST_F(SchedulerTest, JobsGoOnlyToTheirGpuModel) {
  scheduler_.submit({job(1, 100, "A100"), job(2, 50, "H200"), job(3, 10)});
  ready(1, "h200", "H200");
  scheduler_.add_credits("h200", 3);
  auto s = sent();
  ASSERT_EQ(s.size(), 2u);  // job 2 (H200) and job 3 (any), never job 1
  EXPECT_EQ(s[0].second, 2);
  EXPECT_EQ(s[1].second, 3);
  ready(2, "a100", "A100");
  scheduler_.add_credits("a100", 1);
  s = sent();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0], std::make_pair(std::string("a100"), int64_t{1}));
}

TEST_F(SchedulerTest, AWorkerGetsNoMoreThanItsCredits) {
  std::vector<JobRecord> jobs;
  for (int i = 1; i <= 10; ++i) jobs.push_back(job(i));
  scheduler_.submit(jobs);
  ready(1, "a");
  EXPECT_TRUE(sent().empty());  // registered, no credits yet
  scheduler_.add_credits("a", 2);
  EXPECT_EQ(sent().size(), 2u);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kAccepted);
  EXPECT_TRUE(sent().empty());  // a result is not a credit
  scheduler_.add_credits("a", 1);
  EXPECT_EQ(sent().size(), 1u);
  EXPECT_EQ(scheduler_.stats().queued, 7u);
  EXPECT_EQ(scheduler_.stats().leased, 2u);
}

TEST_F(SchedulerTest, CreditsWaitForJobsSubmittedLater) {
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  EXPECT_TRUE(sent().empty());
  scheduler_.submit({job(1), job(2), job(3)});
  EXPECT_EQ(sent().size(), 2u);
}

TEST_F(SchedulerTest, ReRegistrationRequeuesLeasesNotInFlight) {
  scheduler_.submit({job(1, 30), job(2, 20), job(3, 10)});
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  ASSERT_EQ(sent().size(), 2u);  // jobs 1 and 2, attempt 1
  (void)scheduler_.take_batch();
  ready(1, "a2", "H200", {{1, 1}});  // restarted worker: still runs job 1, lost job 2
  Batch b = scheduler_.take_batch();
  ASSERT_EQ(b.requeues.size(), 1u);
  EXPECT_EQ(b.requeues[0].job_id, 2);
  EXPECT_EQ(scheduler_.routing_id_of(1), "a2");
  EXPECT_EQ(scheduler_.worker_id_of("a"), 0);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kUnknownWorker);  // the old session is gone
  scheduler_.add_credits("a2", 1);
  auto s = sent();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].second, 2);
  b = scheduler_.take_batch();
  ASSERT_EQ(b.leases.size(), 1u);
  EXPECT_EQ(b.leases[0].attempt, 2);
  EXPECT_EQ(result("a2", 1, 1), ResultDisposition::kAccepted);
}

TEST_F(SchedulerTest, LostWorkerRequeuesAndTheNextLeaseIsTheNextAttempt) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  ready(2, "b");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  scheduler_.add_credits("b", 1);
  EXPECT_TRUE(sent().empty());
  for (int i = 0; i < 4; ++i) {
    clock_.advance(Millis(1000));
    scheduler_.heard("b");
    scheduler_.tick();
  }
  auto s = sent();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].first, "b");
  Batch batch = scheduler_.take_batch();
  ASSERT_EQ(batch.requeues.size(), 0u);  // superseded by the new lease in the same batch
  ASSERT_EQ(batch.leases.size(), 2u);
  EXPECT_EQ(batch.leases[1].attempt, 2);
  EXPECT_EQ(batch.leases[1].worker_id, 2);
  bool lost = false;
  for (const WorkerState& w : batch.worker_states) lost |= w.worker_id == 1 && w.state == "lost";
  EXPECT_TRUE(lost);
  EXPECT_EQ(scheduler_.stats().workers_lost, 1u);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kUnknownWorker);
}

TEST_F(SchedulerTest, AJobIsFailedAfterMaxAttemptsLeases) {
  scheduler_.submit({job(1)});
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string r = "w" + std::to_string(attempt);
    ready(attempt, r);
    scheduler_.add_credits(r, 1);
    ASSERT_EQ(sent().size(), 1u) << attempt;
    clock_.advance(Millis(3500));
    scheduler_.tick();  // every session is silent: lost
  }
  Batch b = scheduler_.take_batch();
  ASSERT_EQ(b.failures.size(), 1u);
  EXPECT_EQ(b.failures[0].job_id, 1);
  EXPECT_NE(b.failures[0].reason.find("lost 3 leases"), std::string::npos);
  ASSERT_EQ(b.run_states.size(), 2u);
  EXPECT_EQ(b.run_states[1].state, "done");
  EXPECT_EQ(scheduler_.stats().jobs_in_memory, 0u);
  EXPECT_EQ(scheduler_.stats().jobs_failed, 1u);
}

TEST_F(SchedulerTest, FirstResultWinsThenDuplicatesThenOrphans) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  clock_.advance(Millis(61000));  // past the deadline: requeued, leased to b as attempt 2
  ready(2, "b");
  scheduler_.add_credits("b", 1);
  scheduler_.heard("a");
  scheduler_.tick();
  ASSERT_EQ(sent().size(), 1u);
  // The late attempt-1 result arrives first: it is the job's result.
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kAccepted);
  EXPECT_EQ(scheduler_.stats().leased, 0u);  // b's lease is dropped
  EXPECT_EQ(result("b", 1, 2), ResultDisposition::kDuplicate);
  Batch b = scheduler_.take_batch();
  ASSERT_EQ(b.results.size(), 1u);
  EXPECT_EQ(b.results[0].attempt, 1);
  EXPECT_EQ(b.results[0].worker_id, 1);
  scheduler_.committed(b);
  EXPECT_EQ(result("b", 1, 2), ResultDisposition::kOrphan);  // forgotten after the commit
  EXPECT_EQ(result("b", 999, 1), ResultDisposition::kOrphan);
  EXPECT_EQ(scheduler_.stats().jobs_in_memory, 0u);
}

TEST_F(SchedulerTest, AResultForAQueuedJobIsAccepted) {
  scheduler_.submit({job(1), job(2)});
  ready(1, "a");
  EXPECT_EQ(result("a", 2, 5), ResultDisposition::kAccepted);
  EXPECT_EQ(scheduler_.stats().queued, 1u);
}

TEST_F(SchedulerTest, CancelDropsQueuedAndLeasedJobsOfTheRun) {
  scheduler_.submit({job(1, 0, std::nullopt, 1), job(2, 0, std::nullopt, 1), job(3, 0, std::nullopt, 2)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);  // job 1
  EXPECT_EQ(scheduler_.cancel(1), 2u);
  Batch b = scheduler_.take_batch();
  for (const RunState& r : b.run_states) EXPECT_NE(r.run_id, 1);
  EXPECT_EQ(scheduler_.stats().queued, 1u);
  EXPECT_EQ(scheduler_.stats().leased, 0u);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kOrphan);
  scheduler_.add_credits("a", 1);
  auto s = sent();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].second, 3);
}

TEST_F(SchedulerTest, ADeadlinePassedRequeues) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  (void)scheduler_.take_batch();
  for (int i = 0; i < 59; ++i) {
    clock_.advance(Millis(1000));
    scheduler_.heard("a");
    scheduler_.tick();
  }
  EXPECT_TRUE(scheduler_.take_batch().requeues.empty());
  clock_.advance(Millis(1500));
  scheduler_.heard("a");
  scheduler_.tick();
  Batch b = scheduler_.take_batch();
  ASSERT_EQ(b.requeues.size(), 1u);
  EXPECT_EQ(b.requeues[0].reason, "deadline passed");
}

TEST_F(SchedulerTest, LeasesLoadedAfterARestartWaitForTheirWorker) {
  JobRecord kept = job(1), abandoned = job(2);
  for (JobRecord* r : {&kept, &abandoned}) {
    r->state = "leased";
    r->attempt = 1;
    r->worker_id = 5;
  }
  abandoned.worker_id = 6;
  scheduler_.load({kept, abandoned, job(3)});
  EXPECT_EQ(scheduler_.stats().leased, 2u);
  ready(5, "w5", "H200", {{1, 1}});
  clock_.advance(Millis(10001));
  scheduler_.heard("w5");
  scheduler_.tick();
  Batch b = scheduler_.take_batch();
  ASSERT_EQ(b.requeues.size(), 1u);
  EXPECT_EQ(b.requeues[0].job_id, 2);
  EXPECT_EQ(b.requeues[0].reason, "lease grace expired");
  EXPECT_EQ(result("w5", 1, 1), ResultDisposition::kAccepted);
}

TEST_F(SchedulerTest, AReturningWorkerAdoptsItsQueuedInFlightJob) {
  JobRecord r = job(1);
  r.attempt = 1;  // the lease was not committed before the crash: stored as queued
  scheduler_.load({r});
  ready(5, "w5", "H200", {{1, 2}});
  EXPECT_EQ(scheduler_.stats().queued, 0u);
  Batch b = scheduler_.take_batch();
  ASSERT_EQ(b.leases.size(), 1u);
  EXPECT_EQ(b.leases[0].attempt, 2);
  EXPECT_EQ(b.leases[0].worker_id, 5);
}

TEST_F(SchedulerTest, RunStatesGoRunningThenDone) {
  scheduler_.submit({job(1), job(2)});
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kAccepted);
  EXPECT_EQ(result("a", 2, 1), ResultDisposition::kAccepted);
  Batch b = scheduler_.take_batch();
  ASSERT_EQ(b.run_states.size(), 2u);
  EXPECT_EQ(b.run_states[0].state, "running");
  EXPECT_EQ(b.run_states[1].state, "done");
}

TEST_F(SchedulerTest, DrainingStopsDispatch) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  EXPECT_EQ(scheduler_.drain(), std::vector<std::string>{"a"});
  scheduler_.add_credits("a", 2);
  EXPECT_TRUE(sent().empty());
}

// 100k queued jobs over 256 workers, two models: every job done once, memory back to nothing.
TEST_F(SchedulerTest, HundredThousandJobsOver256WorkersStayFastAndFlat) {
  constexpr int kJobs = 100'000, kWorkers = 256;
  std::vector<JobRecord> jobs;
  for (int i = 1; i <= kJobs; ++i) {
    jobs.push_back(job(i, i % 977, i % 3 == 0 ? std::optional<std::string>("A") : std::nullopt));
  }
  const auto start = std::chrono::steady_clock::now();
  scheduler_.submit(std::move(jobs));
  for (int w = 1; w <= kWorkers; ++w) {
    ready(w, "r" + std::to_string(w), w % 2 ? "A" : "B");
    scheduler_.add_credits("r" + std::to_string(w), 2);
  }
  size_t done = 0;
  while (done < kJobs) {
    auto messages = scheduler_.take_messages();
    ASSERT_FALSE(messages.empty()) << done;
    for (const OutgoingMessage& m : messages) {
      ASSERT_EQ(result(m.routing_id, m.message.body["job_id"].get<int64_t>(), 1), ResultDisposition::kAccepted);
      scheduler_.add_credits(m.routing_id, 1);
      ++done;
    }
    scheduler_.committed(scheduler_.take_batch());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);  // ~20k jobs/s would still be 10x the goal
  const SchedulerStats s = scheduler_.stats();
  EXPECT_EQ(s.jobs_in_memory, 0u);
  EXPECT_EQ(s.runs, 0u);
  EXPECT_EQ(s.jobs_completed, static_cast<uint64_t>(kJobs));
}

}  // namespace
}  // namespace kb::coord
