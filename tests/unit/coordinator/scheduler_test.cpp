#include "coordinator/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

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
  // The JOBs released to each routing id, in order. As the coordinator does, the pending batch
  // is taken first (its leases "commit"); it is kept for batch().
  std::vector<std::pair<std::string, int64_t>> sent() {
    keep(scheduler_.take_batch());
    std::vector<std::pair<std::string, int64_t>> out;
    for (const Dispatch& d : scheduler_.take_dispatches()) {
      EXPECT_EQ(d.job.token(), d.token);
      tokens_[{d.token.job_id, d.token.attempt}] = d.token;
      out.emplace_back(d.routing_id, d.token.job_id);
    }
    return out;
  }
  // Everything batched since the last call (including what sent() took).
  Batch batch() {
    keep(scheduler_.take_batch());
    Batch b = std::move(taken_);
    taken_ = Batch();
    return b;
  }
  void keep(Batch b) {
    auto append = [](auto& to, auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(taken_.leases, b.leases);
    append(taken_.requeues, b.requeues);
    append(taken_.failures, b.failures);
    append(taken_.results, b.results);
    append(taken_.worker_states, b.worker_states);
    append(taken_.run_states, b.run_states);
  }
  // REVOKEs sent: (routing id, job id, reason).
  std::vector<std::tuple<std::string, int64_t, std::string>> revoked() {
    std::vector<std::tuple<std::string, int64_t, std::string>> out;
    for (const OutgoingMessage& m : scheduler_.take_messages()) {
      EXPECT_EQ(m.message.type, wire::MessageType::kRevoke);
      out.emplace_back(m.routing_id, m.message.body["job_id"].get<int64_t>(),
                       m.message.body["reason"].get<std::string>());
    }
    return out;
  }
  void ready(int64_t worker_id, const std::string& routing, const std::string& model = "H200",
             std::vector<InFlight> in_flight = {}) {
    WorkerIdentity w = identity(model);
    w.name = "worker-" + std::to_string(worker_id);
    scheduler_.worker_ready(worker_id, routing, w, in_flight);
  }
  LeaseToken token(int64_t job_id, int attempt) {
    auto it = tokens_.find({job_id, attempt});
    return it == tokens_.end() ? LeaseToken{job_id, attempt, 0} : it->second;
  }
  // A result with the token the JOB carried (lease id 0 when none was sent).
  ResultDisposition result(const std::string& routing, int64_t job_id, int attempt) {
    return claim(routing, {token(job_id, attempt), "P" + std::to_string(job_id), "small", ""})
        .disposition;
  }
  ResultVerdict claim(const std::string& routing, const ResultClaim& c) {
    return scheduler_.result(routing, c, ResultRow{});
  }
  std::string rejection(const std::string& routing, const LeaseToken& t,
                        const std::string& problem = "") {
    const ResultVerdict v = claim(
        routing, {t, problem.empty() ? "P" + std::to_string(t.job_id) : problem, "small", ""});
    return v.disposition == ResultDisposition::kRejected ? v.reason : "accepted";
  }
  void heartbeat_all(const std::vector<std::string>& routing_ids) {
    for (const auto& r : routing_ids) scheduler_.heard(r);
  }

  FakeClock clock_;
  Scheduler scheduler_;
  std::map<std::pair<int64_t, int>, LeaseToken> tokens_;
  Batch taken_;
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
  EXPECT_TRUE(scheduler_.take_dispatches().empty());  // its lease is not in a batch yet
  (void)scheduler_.take_batch();
  auto messages = scheduler_.take_dispatches();
  ASSERT_EQ(messages.size(), 1u);
  const wire::JobMessage& b = messages[0].job;
  EXPECT_EQ(b.attempt, 1);
  EXPECT_GT(b.lease_id, 0u);
  EXPECT_EQ(b.pack, "abc");
  EXPECT_EQ(b.run_id, 1);
  EXPECT_EQ(b.deadline_ms, 60000);  // max(60 s, 3 s + 6 s + 30 s)
  EXPECT_EQ(b.trials, 0);           // the run set none: the executor's default
  EXPECT_TRUE(wire::decode(wire::encode(wire::to_message(b))).ok);
  EXPECT_EQ(lease_budget(20000, 10).count(), 3 * 20000 + 20000 + 30000);
}

TEST_F(SchedulerTest, JobMessageCarriesTheRunsTrials) {
  JobRecord r = job(1, 1000);
  r.run_config["trials"] = 9;
  scheduler_.submit({r});
  ready(7, "a");
  scheduler_.add_credits("a", 1);
  (void)scheduler_.take_batch();
  auto messages = scheduler_.take_dispatches();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].job.trials, 9);
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
  (void)batch();
  ready(1, "a2", "H200", {token(1, 1)});  // restarted worker: still runs job 1, lost job 2
  Batch b = batch();
  ASSERT_EQ(b.requeues.size(), 1u);
  EXPECT_EQ(b.requeues[0].job_id, 2);
  EXPECT_EQ(scheduler_.routing_id_of(1), "a2");
  EXPECT_EQ(scheduler_.worker_id_of("a"), 0);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kUnknownWorker);  // the old session is gone
  scheduler_.add_credits("a2", 1);
  auto s = sent();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].second, 2);
  b = batch();
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
  Batch b = batch();
  ASSERT_EQ(b.requeues.size(), 0u);  // superseded by the new lease in the same batch
  ASSERT_EQ(b.leases.size(), 2u);
  EXPECT_EQ(b.leases[1].attempt, 2);
  EXPECT_EQ(b.leases[1].worker_id, 2);
  bool lost = false;
  for (const WorkerState& w : b.worker_states) lost |= w.worker_id == 1 && w.state == "lost";
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
  Batch b = batch();
  ASSERT_EQ(b.failures.size(), 1u);
  EXPECT_EQ(b.failures[0].job_id, 1);
  EXPECT_NE(b.failures[0].reason.find("lost 3 leases"), std::string::npos);
  ASSERT_EQ(b.run_states.size(), 2u);
  EXPECT_EQ(b.run_states[1].state, "done");
  EXPECT_EQ(scheduler_.stats().jobs_in_memory, 0u);
  EXPECT_EQ(scheduler_.stats().jobs_failed, 1u);
}

// Fencing: the holder of the lease that ended last may still deliver within lease_grace of its
// end; it wins and the job's current holder is REVOKEd.
TEST_F(SchedulerTest, ALateResultWithinGraceOfItsEndedLeaseIsAcceptedAndTheNewHolderRevoked) {
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
  EXPECT_EQ(revoked(), (std::vector<std::tuple<std::string, int64_t, std::string>>{
                           {"a", 1, "lease_expired"}}));
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kAccepted);
  EXPECT_EQ(scheduler_.stats().leased, 0u);  // b's lease is dropped ...
  EXPECT_EQ(revoked(), (std::vector<std::tuple<std::string, int64_t, std::string>>{
                           {"b", 1, "superseded"}}));  // ... and b told to stop
  EXPECT_EQ(rejection("b", token(1, 2)), "done");
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kDuplicate);  // a resend of the accepted one
  Batch b = batch();
  ASSERT_EQ(b.results.size(), 1u);
  EXPECT_EQ(b.results[0].attempt, 1);
  EXPECT_EQ(b.results[0].worker_id, 1);
  scheduler_.committed(b);
  EXPECT_EQ(rejection("a", token(1, 1)), "unknown_job");  // forgotten after the commit
  EXPECT_EQ(rejection("b", {999, 1, 5}), "unknown_job");
  EXPECT_EQ(scheduler_.stats().jobs_in_memory, 0u);
}

TEST_F(SchedulerTest, ALateResultPastGraceOfItsEndedLeaseIsRejected) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  ready(2, "b");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  const LeaseToken old = token(1, 1);
  for (int i = 0; i < 72; ++i) {  // the deadline (60 s) and the grace (10 s) pass
    clock_.advance(Millis(1000));
    heartbeat_all({"a", "b"});
    scheduler_.tick();
  }
  EXPECT_EQ(rejection("a", old), "stale_lease");  // queued, its last lease was a's: too late
  scheduler_.add_credits("b", 1);
  ASSERT_EQ(sent().size(), 1u);
  EXPECT_EQ(rejection("a", old), "not_holder");
  EXPECT_EQ(result("b", 1, 2), ResultDisposition::kAccepted);
  EXPECT_EQ(batch().results.size(), 1u);
}

TEST_F(SchedulerTest, AResultForAQueuedJobIsRejected) {
  scheduler_.submit({job(1), job(2)});
  ready(1, "a");
  EXPECT_EQ(rejection("a", {2, 1, 0}), "not_leased");
  EXPECT_EQ(scheduler_.stats().queued, 2u);
  EXPECT_TRUE(batch().results.empty());
}

// The forged RESULT: another registered worker names the holder's exact token.
TEST_F(SchedulerTest, AResultFromAWorkerNotHoldingTheLeaseIsRejected) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  ready(2, "b");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  EXPECT_EQ(rejection("b", token(1, 1)), "not_holder");
  EXPECT_EQ(scheduler_.stats().leased, 1u);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kAccepted);
}

TEST_F(SchedulerTest, AResultWithAnotherLeaseIdOrAttemptIsRejected) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  LeaseToken t = token(1, 1);
  EXPECT_EQ(rejection("a", {1, 1, t.lease_id + 1}), "stale_lease");
  EXPECT_EQ(rejection("a", {1, 2, t.lease_id}), "stale_lease");
  EXPECT_EQ(rejection("a", {1, 1, 0}), "stale_lease");
  EXPECT_EQ(rejection("a", t), "accepted");
}

TEST_F(SchedulerTest, AResultWhoseProblemOrPresetIsNotTheJobsIsRejected) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  EXPECT_EQ(rejection("a", token(1, 1), "P2"), "mismatch");
  EXPECT_EQ(claim("a", {token(1, 1), "P1", "large", ""}).reason, "mismatch");
  EXPECT_EQ(scheduler_.stats().leased, 1u);  // the lease goes on
}

TEST_F(SchedulerTest, AJobIsSentOnlyOnceItsLeaseIsInATakenBatchAndStillCurrent) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  EXPECT_TRUE(scheduler_.take_dispatches().empty());
  (void)scheduler_.take_batch();
  std::vector<Dispatch> d = scheduler_.take_dispatches();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(scheduler_.lease_is_current(d[0].token));
  clock_.advance(Millis(3500));
  scheduler_.tick();  // a is lost before the batch committed: the JOB must not go out
  EXPECT_FALSE(scheduler_.lease_is_current(d[0].token));
}

TEST_F(SchedulerTest, ALeaseThatWasNotStoredRequeuesWithoutCountingAnAttempt) {
  JobRecord r = job(1);
  r.max_attempts = 1;
  scheduler_.submit({r});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  (void)scheduler_.take_batch();
  std::vector<Dispatch> d = scheduler_.take_dispatches();
  ASSERT_EQ(d.size(), 1u);
  scheduler_.lease_not_stored(d[0].token);
  EXPECT_EQ(scheduler_.stats().queued, 1u);  // not failed: the attempt never started
  EXPECT_EQ(scheduler_.stats().jobs_failed, 0u);
}

TEST_F(SchedulerTest, CancelDropsQueuedAndLeasedJobsOfTheRun) {
  scheduler_.submit({job(1, 0, std::nullopt, 1), job(2, 0, std::nullopt, 1), job(3, 0, std::nullopt, 2)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);  // job 1
  (void)batch();
  EXPECT_EQ(scheduler_.cancel(1), 2u);
  EXPECT_EQ(revoked(), (std::vector<std::tuple<std::string, int64_t, std::string>>{
                           {"a", 1, "cancelled"}}));  // the running job is stopped
  Batch b = batch();
  for (const RunState& r : b.run_states) EXPECT_NE(r.run_id, 1);
  EXPECT_EQ(scheduler_.stats().queued, 1u);
  EXPECT_EQ(scheduler_.stats().leased, 0u);
  EXPECT_EQ(rejection("a", token(1, 1)), "unknown_job");
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
  (void)batch();
  for (int i = 0; i < 59; ++i) {
    clock_.advance(Millis(1000));
    scheduler_.heard("a");
    scheduler_.tick();
  }
  EXPECT_TRUE(batch().requeues.empty());
  clock_.advance(Millis(1500));
  scheduler_.heard("a");
  scheduler_.tick();
  Batch b = batch();
  ASSERT_EQ(b.requeues.size(), 1u);
  EXPECT_EQ(b.requeues[0].reason, "deadline passed");
  EXPECT_EQ(revoked(), (std::vector<std::tuple<std::string, int64_t, std::string>>{
                           {"a", 1, "lease_expired"}}));
  EXPECT_EQ(scheduler_.stats().lease_expiries, 1u);
}

TEST_F(SchedulerTest, LeasesLoadedAfterARestartWaitForTheirWorker) {
  JobRecord kept = job(1), abandoned = job(2);
  for (JobRecord* r : {&kept, &abandoned}) {
    r->state = "leased";
    r->attempt = 1;
    r->worker_id = 5;
    r->lease_id = 77;
  }
  abandoned.worker_id = 6;
  scheduler_.load({kept, abandoned, job(3)});
  EXPECT_EQ(scheduler_.stats().leased, 2u);
  ready(5, "w5", "H200", {{1, 1, 77}});
  clock_.advance(Millis(10001));
  scheduler_.heard("w5");
  scheduler_.tick();
  Batch b = batch();
  ASSERT_EQ(b.requeues.size(), 1u);
  EXPECT_EQ(b.requeues[0].job_id, 2);
  EXPECT_EQ(b.requeues[0].reason, "lease grace expired");
  EXPECT_EQ(rejection("w5", {1, 1, 78}), "stale_lease");
  EXPECT_EQ(rejection("w5", {1, 1, 77}), "accepted");
}

// READY's in_flight keeps only leases the worker holds; anything else it names is REVOKEd (a job
// it runs without a lease must stop), never adopted.
TEST_F(SchedulerTest, ReadyReAdoptsOnlyJobsItHolds) {
  JobRecord r = job(1);
  r.attempt = 1;
  scheduler_.load({r, job(2)});
  ready(6, "w6");
  scheduler_.add_credits("w6", 1);
  ASSERT_EQ(sent().size(), 1u);  // job 1, attempt 2, to w6
  ready(5, "w5", "H200", {{1, 2, 0}, {2, 1, 0}});  // claims w6's job and a queued one
  EXPECT_EQ(scheduler_.stats().queued, 1u);
  EXPECT_EQ(scheduler_.stats().leased, 1u);
  auto r5 = revoked();
  ASSERT_EQ(r5.size(), 2u);
  EXPECT_EQ(std::get<0>(r5[0]), "w5");
  EXPECT_EQ(std::get<2>(r5[0]), "not_yours");
  for (const Lease& l : batch().leases) EXPECT_NE(l.worker_id, 5);
  ready(6, "w6b", "H200", {token(1, 2)});  // the holder itself keeps it
  EXPECT_EQ(scheduler_.stats().leased, 1u);
  EXPECT_TRUE(batch().requeues.empty());
}

TEST_F(SchedulerTest, RunStatesGoRunningThenDone) {
  scheduler_.submit({job(1), job(2)});
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  ASSERT_EQ(sent().size(), 2u);
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kAccepted);
  EXPECT_EQ(result("a", 2, 1), ResultDisposition::kAccepted);
  Batch b = batch();
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

TEST_F(SchedulerTest, AnInfrastructureFailureRequeuesTheJobForAnotherWorker) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  const ResultVerdict v = claim("a", {token(1, 1), "P1", "small", "spawn: cannot start kb-executor"});
  EXPECT_EQ(v.disposition, ResultDisposition::kInfraFailure);
  Batch b = batch();
  EXPECT_TRUE(b.results.empty());  // never a final status
  ASSERT_EQ(b.requeues.size(), 1u);
  ready(2, "b");
  scheduler_.add_credits("b", 1);
  auto s = sent();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].first, "b");
  EXPECT_EQ(result("b", 1, 2), ResultDisposition::kAccepted);
}

TEST_F(SchedulerTest, ThreeConsecutiveInfrastructureFailuresQuarantineTheWorkerUntilReleased) {
  scheduler_.submit({job(1), job(2), job(3), job(4)});
  ready(1, "a");
  for (int i = 0; i < 3; ++i) {
    scheduler_.add_credits("a", 1);
    auto s = sent();
    ASSERT_EQ(s.size(), 1u) << i;
    const int64_t id = s[0].second;
    const int attempt = tokens_.count({id, 2}) ? 2 : 1;
    claim("a", {token(id, attempt), "P" + std::to_string(id), "small", "device: CUDA init failed"});
  }
  EXPECT_EQ(scheduler_.quarantined(), std::vector<std::string>{"worker-1"});
  EXPECT_EQ(scheduler_.stats().quarantines, 1u);
  scheduler_.add_credits("a", 1);
  EXPECT_TRUE(sent().empty());
  bool marked = false;
  for (const WorkerState& w : batch().worker_states) marked |= w.state == "quarantined";
  EXPECT_TRUE(marked);
  ready(1, "a2");  // a restart of the worker does not lift it
  scheduler_.add_credits("a2", 1);
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(scheduler_.control("worker-1", "release"), "");
  EXPECT_EQ(sent().size(), 1u);
  EXPECT_TRUE(scheduler_.quarantined().empty());
}

TEST_F(SchedulerTest, ARealResultResetsTheInfrastructureFailureCount) {
  scheduler_.submit({job(1), job(2), job(3), job(4)});
  ready(1, "a");
  for (int id : {1, 2}) {
    scheduler_.add_credits("a", 1);
    ASSERT_EQ(sent().size(), 1u);
    if (id == 1) {
      claim("a", {token(1, 1), "P1", "small", "spool: disk full"});
    } else {
      EXPECT_EQ(result("a", 1, 2), ResultDisposition::kAccepted);
    }
  }
  for (int i = 0; i < 2; ++i) {
    scheduler_.add_credits("a", 1);
    auto s = sent();
    ASSERT_EQ(s.size(), 1u);
    claim("a", {token(s[0].second, 1), "P" + std::to_string(s[0].second), "small", "spool: full"});
  }
  EXPECT_TRUE(scheduler_.quarantined().empty());  // 1, reset, 2: never 3 in a row
}

TEST_F(SchedulerTest, ALatePackIsAnInfrastructureFailureThatCountsNeitherAttemptNorQuarantine) {
  JobRecord r = job(1);
  r.max_attempts = 1;
  scheduler_.submit({r});
  ready(1, "a");
  for (int attempt = 1; attempt <= 3; ++attempt) {
    scheduler_.add_credits("a", 1);
    ASSERT_EQ(sent().size(), 1u) << attempt;
    claim("a", {token(1, attempt), "P1", "small", "pack_late: no answer"});
  }
  EXPECT_EQ(scheduler_.stats().jobs_failed, 0u);
  EXPECT_TRUE(scheduler_.quarantined().empty());
}

// SIGTERM on a worker: its prefetched job comes back at once (uncounted), it gets nothing more,
// and the running job's result is still accepted.
TEST_F(SchedulerTest, ByeDrainingGivesBackHeldJobsAtOnceAndStopsDispatch) {
  JobRecord prefetched = job(2, 5);
  prefetched.max_attempts = 1;
  scheduler_.submit({job(1, 10), prefetched});
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  ASSERT_EQ(sent().size(), 2u);
  scheduler_.worker_bye("a", {token(2, 1)}, Scheduler::ByeKind::kDraining);
  EXPECT_EQ(scheduler_.stats().queued, 1u);
  EXPECT_EQ(scheduler_.stats().leased, 1u);
  scheduler_.add_credits("a", 1);
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(result("a", 1, 1), ResultDisposition::kAccepted);
  ready(2, "b");
  scheduler_.add_credits("b", 1);
  ASSERT_EQ(sent().size(), 1u);  // the given-back job, attempt 2 although max_attempts is 1
  EXPECT_EQ(result("b", 2, 2), ResultDisposition::kAccepted);
}

// Issue 14: a JOB that was on its way when the worker's BYE {draining} arrived comes back in a
// second BYE {draining, release}; it is requeued at once and not counted as an attempt.
TEST_F(SchedulerTest, AJobGivenBackAfterTheDrainingByeIsRequeuedWithoutCountingAnAttempt) {
  scheduler_.submit({job(1, 10)});
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  ASSERT_EQ(sent().size(), 1u);
  JobRecord late = job(2, 5);
  late.max_attempts = 1;
  scheduler_.submit({late});
  ASSERT_EQ(sent(), (std::vector<std::pair<std::string, int64_t>>{{"a", 2}}));
  scheduler_.worker_bye("a", {}, Scheduler::ByeKind::kDraining);  // before its JOB 2 arrived
  EXPECT_EQ(scheduler_.stats().leased, 2u);
  scheduler_.worker_bye("a", {token(2, 1)}, Scheduler::ByeKind::kDraining);
  EXPECT_EQ(scheduler_.stats().queued, 1u);
  EXPECT_EQ(scheduler_.stats().jobs_failed, 0u);
  scheduler_.add_credits("a", 1);
  EXPECT_TRUE(sent().empty());
  ready(2, "b");
  scheduler_.add_credits("b", 1);
  ASSERT_EQ(sent(), (std::vector<std::pair<std::string, int64_t>>{{"b", 2}}));
  EXPECT_EQ(result("b", 2, 2), ResultDisposition::kAccepted);  // attempt 2 of max_attempts 1
}

// A lease made before the worker's BYE {draining}, its batch still committing when the BYE comes:
// its JOB is not sent; the job is requeued uncounted and goes to another worker.
TEST_F(SchedulerTest, AJobLeasedBeforeADrainingByeIsNotSentAndRequeuedUncounted) {
  scheduler_.submit({job(1, 10)});
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  ASSERT_EQ(sent().size(), 1u);
  JobRecord late = job(2, 5);
  late.max_attempts = 1;
  scheduler_.submit({late});
  (void)scheduler_.take_batch();
  std::vector<Dispatch> d = scheduler_.take_dispatches();
  ASSERT_EQ(d.size(), 1u);
  scheduler_.worker_bye("a", {}, Scheduler::ByeKind::kDraining);
  EXPECT_FALSE(scheduler_.send_or_requeue(d[0].token));
  EXPECT_EQ(scheduler_.stats().queued, 1u);
  EXPECT_EQ(scheduler_.stats().jobs_failed, 0u);
  ready(2, "b");
  scheduler_.add_credits("b", 1);
  (void)scheduler_.take_batch();
  d = scheduler_.take_dispatches();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].token.job_id, 2);
  EXPECT_TRUE(scheduler_.send_or_requeue(d[0].token));
}

// Same for an admin's drain: its REVOKE went out at once, so the JOB must not follow it.
TEST_F(SchedulerTest, AJobLeasedBeforeAnAdminDrainIsNotSent) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  (void)scheduler_.take_batch();
  std::vector<Dispatch> d = scheduler_.take_dispatches();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(scheduler_.control("worker-1", "drain"), "");
  EXPECT_FALSE(scheduler_.send_or_requeue(d[0].token));
  EXPECT_EQ(scheduler_.stats().queued, 1u);
}

TEST_F(SchedulerTest, ByeFinalMarksTheWorkerGoneAtOnceAndRequeuesWhatItHeld) {
  scheduler_.submit({job(1)});
  ready(1, "a");
  scheduler_.add_credits("a", 1);
  ASSERT_EQ(sent().size(), 1u);
  scheduler_.worker_bye("a", {token(1, 1)}, Scheduler::ByeKind::kFinal);
  EXPECT_EQ(scheduler_.worker_id_of("a"), 0);
  EXPECT_EQ(scheduler_.stats().queued, 1u);
  bool gone = false;
  for (const WorkerState& w : batch().worker_states) gone |= w.worker_id == 1 && w.state == "gone";
  EXPECT_TRUE(gone);
  EXPECT_EQ(scheduler_.stats().workers_lost, 0u);  // gone, not lost
}

TEST_F(SchedulerTest, AnAdminDrainRevokesHeldJobsAndResumeDispatchesAgain) {
  scheduler_.submit({job(1, 10), job(2, 5), job(3, 1)});
  ready(1, "a");
  scheduler_.add_credits("a", 2);
  ASSERT_EQ(sent().size(), 2u);
  EXPECT_EQ(scheduler_.control("worker-1", "drain"), "");
  auto r = revoked();
  ASSERT_EQ(r.size(), 2u);  // both: the worker knows which one runs and gives back the other
  EXPECT_EQ(std::get<2>(r[0]), "drain");
  scheduler_.worker_bye("a", {token(2, 1)}, Scheduler::ByeKind::kGiveBack);
  EXPECT_EQ(scheduler_.stats().queued, 2u);
  scheduler_.add_credits("a", 1);
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(scheduler_.control("worker-1", "resume"), "");
  EXPECT_EQ(sent().size(), 1u);
  EXPECT_NE(scheduler_.control("worker-1", "explode"), "");
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
  Batch committing = scheduler_.take_batch();
  while (done < kJobs) {
    auto messages = scheduler_.take_dispatches();
    ASSERT_FALSE(messages.empty()) << done;
    for (const Dispatch& m : messages) {
      const ResultClaim c{m.token, "P" + std::to_string(m.token.job_id), "small", ""};
      ASSERT_EQ(scheduler_.result(m.routing_id, c, ResultRow{}).disposition,
                ResultDisposition::kAccepted);
      scheduler_.add_credits(m.routing_id, 1);
      ++done;
    }
    scheduler_.committed(committing);
    committing = scheduler_.take_batch();
  }
  scheduler_.committed(committing);
  scheduler_.committed(scheduler_.take_batch());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);  // ~20k jobs/s would still be 10x the goal
  const SchedulerStats s = scheduler_.stats();
  EXPECT_EQ(s.jobs_in_memory, 0u);
  EXPECT_EQ(s.runs, 0u);
  EXPECT_EQ(s.jobs_completed, static_cast<uint64_t>(kJobs));
}

}  // namespace
}  // namespace kb::coord
