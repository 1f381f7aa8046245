// The coordinator's scheduler: the in-memory queue, the workers' sessions and credits, the leases
// and the per-run counters (docs/design.md#job-lifecycle; schemas/protocol.md). Pure logic: no
// sockets, no database. Each event updates the state and appends to three outboxes that the caller
// drains:
//   take_batch()       the state changes for the database thread (one JobStore::apply each)
//   take_dispatches()  the JOBs whose leases are in that batch: sent only after it commits, and
//                      only if send_or_requeue() says so (a JOB never names an uncommitted lease)
//   take_messages()    messages to send now (REVOKE), each with its routing id
//
// Rules (schemas/protocol.md):
// - A job with gpu_model G goes only to workers whose gpu_model == G; no model = any worker.
//   Among the jobs a worker can take: longest predicted_ms first, ties by lower job id. Workers
//   drained (by an admin or by their own BYE) or quarantined get nothing.
// - A worker is sent at most the credits it asked for (REQUEST), one JOB per credit.
// - Every lease has a token (job id, attempt, random lease id) that JOB carries and RESULT echoes.
// - A lease ends when its worker is lost (silent for liveness x heartbeat), re-registers without
//   the job in in_flight, says BYE, reports an infrastructure failure, or the job's deadline
//   passes; the job is queued again and its next lease is attempt+1; after max_attempts counted
//   leases it is failed. Leases given back unstarted (BYE release) do not count. Leases loaded
//   after a restart wait lease_grace for their worker to come back with the job in in_flight.
//   The holder of a lease ended by a deadline, a cancel or a refused in_flight entry is REVOKEd.
// - Fencing (each rule has a test named after it in scheduler_test.cpp): a result is accepted
//   only from the worker holding the job's current lease with the same token, or from the
//   holder of the lease that ended last within lease_grace of its end (the job's current holder,
//   if any, is then REVOKEd); its problem and preset must be the job's. Anything else is
//   rejected with a reason (unknown_job, not_leased, not_holder, stale_lease, mismatch, done)
//   and the worker told to drop it. A repeat of the accepted result is a duplicate to ack.
// - READY's in_flight re-adopts only jobs whose current lease that worker holds (same attempt
//   and, when given, lease id); other entries are REVOKEd.
// - kFailuresBeforeQuarantine consecutive infrastructure failures quarantine a worker (by name)
//   until an admin releases it; a real result resets the count.
// - Memory stays flat: a done job is erased once its result's batch has committed (committed()).
//
// Thread safety: none; one owner (the coordinator's event loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/job_deadline.h"
#include "common/protocol_messages.h"
#include "common/wire_protocol.h"
#include "coordinator/job_store.h"

namespace kb::coord {

using SteadyTime = std::chrono::steady_clock::time_point;
using Millis = std::chrono::milliseconds;

// Both clocks: steady for timeouts, system for what goes into the database.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime steady_now() const = 0;
  virtual SystemTime system_now() const = 0;
};
class RealClock final : public Clock {
 public:
  SteadyTime steady_now() const override { return std::chrono::steady_clock::now(); }
  SystemTime system_now() const override { return std::chrono::system_clock::now(); }
};

struct SchedulerConfig {
  Millis heartbeat{1000};
  int liveness = 3;
  Millis lease_grace{10000};
  int max_credits = 8;  // a worker that asks for more is capped (it only needs 2)
  int failures_before_quarantine = 3;  // consecutive infrastructure failures
};

// A lease's fencing token, as JOB carries it. lease_id 0 in a claim means "not given" (accepted
// only where a missing id cannot be confused: never for results).
using LeaseToken = wire::LeaseToken;
using InFlight = LeaseToken;

struct OutgoingMessage {
  std::string routing_id;
  wire::Message message;
};

// A JOB to send once the batch holding its lease has committed.
struct Dispatch {
  std::string routing_id;
  LeaseToken token;
  wire::JobMessage job;  // the coordinator adds the problem's spec_hash when it sends it
};

// What a RESULT says about itself, beyond the row.
struct ResultClaim {
  LeaseToken token;
  std::string problem, preset;  // the JobResult's problem_id and preset
  std::string infra_failure;    // not empty: no result; the worker could not run the job
};

enum class ResultDisposition {
  kAccepted,      // the job's result: in the pending batch; ack after that batch commits
  kDuplicate,     // the accepted result again, its row not yet known committed: ack after the next commit
  kInfraFailure,  // the lease is released and the job requeued: ack after the next commit
  kRejected,      // not from the lease that may end the job: ack with `rejected: reason`
  kUnknownWorker  // the routing id has no session: tell the peer to register first
};

struct ResultVerdict {
  ResultDisposition disposition = ResultDisposition::kRejected;
  std::string reason;  // kRejected: unknown_job | not_leased | not_holder | stale_lease | mismatch | done
};

struct SchedulerStats {
  size_t queued = 0, leased = 0, jobs_in_memory = 0, runs = 0;
  size_t workers_busy = 0, workers_idle = 0, workers_lost = 0;
  size_t workers_quarantined = 0, workers_draining = 0;
  uint64_t lease_expiries = 0, requeues = 0, quarantines = 0;
  uint64_t jobs_completed = 0;  // results accepted (done jobs) since start
  uint64_t jobs_failed = 0;
};

// lease_budget: the lease deadline of one attempt (common/job_deadline.h).
using ::kb::lease_budget;

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, const Clock& clock);

  // Jobs after a restart (load_open_jobs): queued ones join the queue, leased ones get lease_grace.
  void load(std::vector<JobRecord> jobs);
  // A new run's jobs (create_run).
  void submit(std::vector<JobRecord> jobs);
  // Drops the run's jobs from memory (the store marks them cancelled); returns how many. The
  // holders of its leased jobs are REVOKEd.
  size_t cancel(int64_t run_id);

  // A worker's (re-)registration: a new session replaces any older one of the same worker_id.
  // Its leases not listed in in_flight end now; in_flight entries it does not hold are REVOKEd.
  void worker_ready(int64_t worker_id, const std::string& routing_id, const WorkerIdentity& identity,
                    const std::vector<InFlight>& in_flight);
  // Any message from a known routing id keeps its session alive; false when it has none.
  bool heard(const std::string& routing_id);
  void add_credits(const std::string& routing_id, int credits);
  ResultVerdict result(const std::string& routing_id, const ResultClaim& claim, ResultRow row);
  // BYE: `release` are leases given back unstarted (requeued, not counted against the cap).
  // kGiveBack only gives them back (the answer to an admin's drain REVOKE); kDraining: the worker
  // takes no more jobs until it registers again; kFinal: it leaves now (its session ends, its
  // other leases are released and requeued, it is marked gone).
  enum class ByeKind { kGiveBack, kDraining, kFinal };
  void worker_bye(const std::string& routing_id, const std::vector<LeaseToken>& release,
                  ByeKind kind);
  // Admin: "drain" (no more jobs; unstarted ones are REVOKEd with reason "drain", the worker
  // gives them back), "resume", "release" (from quarantine). By worker name, connected or not.
  // Returns "" or why not.
  std::string control(const std::string& worker_name, const std::string& action);
  std::vector<std::string> quarantined() const;
  // Liveness, lease deadlines and lease grace. Call at least every heartbeat.
  void tick();
  // Stop dispatching; returns the routing ids of all sessions (to DISCONNECT).
  std::vector<std::string> drain();

  // Backpressure: while paused no job is dispatched (credits are kept and honoured on resume).
  // The coordinator pauses when results wait for the database faster than it commits them, so
  // that memory stays bounded; resuming dispatches to every hungry worker.
  void set_paused(bool paused);
  bool paused() const { return paused_; }
  size_t pending_results() const { return pending_.results.size(); }

  Batch take_batch();
  std::vector<Dispatch> take_dispatches();  // the JOBs of the batch take_batch() returned last
  std::vector<OutgoingMessage> take_messages();
  bool lease_is_current(const LeaseToken& token) const;
  // The batch holding this lease committed: true when its JOB goes out now. False when the lease
  // has ended, or when its worker is draining (BYE {draining} or an admin's drain) since it was
  // made: then the job is requeued, not counted as an attempt, and the JOB is not sent.
  bool send_or_requeue(const LeaseToken& token);
  // The batch holding this lease was not stored: its JOB was never sent; the job is queued again.
  void lease_not_stored(const LeaseToken& token);
  bool has_pending_batch() const { return !pending_.empty(); }
  // The batch was applied (or given up): forget its done jobs.
  void committed(const Batch& batch);

  // The worker's current routing id ("" when it has no session).
  std::string routing_id_of(int64_t worker_id) const;
  int64_t worker_id_of(const std::string& routing_id) const;  // 0 when unknown
  std::vector<std::string> routing_ids() const;
  SchedulerStats stats() const;

 private:
  using QueueKey = std::pair<double, int64_t>;  // (-predicted_ms, job id): begin() is next
  using Queue = std::set<QueueKey>;
  enum class JobState { kQueued, kLeased, kDone };
  struct EndedLease {
    int64_t holder = 0;
    int attempt = 0;
    uint64_t lease_id = 0;
    SteadyTime ended_at{};
  };
  struct Job {
    JobRecord record;  // record.attempt = leases started so far
    JobState state = JobState::kQueued;
    int64_t holder = 0;  // worker id while leased
    uint64_t lease_id = 0;  // while leased; when done, the accepted result's
    SteadyTime deadline{};
    bool in_grace = false;  // loaded after a restart, its worker not back yet
    int free_leases = 0;    // leases given back unstarted: not counted against max_attempts
    std::optional<EndedLease> previous;  // the lease that ended last
  };
  struct Worker {
    int64_t id = 0;
    std::string name, routing_id, gpu_model, device_kind;
    int credits = 0;
    SteadyTime last_heard{};
    bool leaving = false;  // said BYE (draining)
  };
  struct Run {
    size_t open = 0;  // jobs not done/failed
    bool running = false;
    std::string pack_hash;
    double time_cap_s = 0;
    int64_t trials = 0;        // correctness trials a job; 0: the executor's default
    double job_timeout_s = 0;  // 0: derived from the prediction and the time cap
  };

  Queue& queue_for(const std::optional<std::string>& gpu_model);
  void enqueue(Job& job);
  void dequeue(Job& job);
  void lease(Job& job, Worker& worker, int attempt);
  void end_lease(Job& job);
  void requeue(Job& job, const std::string& reason, bool counted = true);
  void revoke(int64_t worker_id, const LeaseToken& token, const std::string& reason);
  bool holds(const Job& job, int64_t worker_id, const LeaseToken& token) const;
  bool accepts_jobs(const Worker& worker) const;
  void count_infra_failure(Worker& worker);
  Worker* worker_by_routing_id(const std::string& routing_id);
  void finish_job(Job& job, bool failed);
  void lose_worker(Worker& worker, const std::string& reason);
  void release_leases_of(int64_t worker_id, const std::vector<InFlight>& keep, Worker* keeper,
                         const std::string& reason);
  bool dispatch_one(Worker& worker);  // one job to `worker` if it has a credit and a job suits it
  void dispatch(Worker& worker);      // as many as its credits allow
  void dispatch_all();                // the queue over every hungry worker, least loaded first
  double held_work_ms(int64_t worker_id) const;
  Job* best_job_for(const Worker& worker);
  void add_job(JobRecord record);
  void set_run_state(int64_t run_id, const std::string& state);
  wire::JobMessage job_message(const Job& job) const;

  SchedulerConfig config_;
  const Clock& clock_;
  bool draining_ = false;
  bool paused_ = false;

  std::unordered_map<int64_t, Job> jobs_;
  std::map<std::string, Queue> by_model_;  // jobs for one GPU model
  Queue any_model_;                        // jobs for any worker
  size_t queued_ = 0;
  std::set<std::pair<SteadyTime, int64_t>> deadlines_;      // leased jobs by deadline
  std::unordered_map<int64_t, std::set<int64_t>> held_;     // worker id -> leased job ids
  std::unordered_map<int64_t, Worker> workers_;             // sessions by worker id
  std::unordered_map<std::string, int64_t> by_routing_id_;  // routing id -> worker id
  std::set<int64_t> hungry_;                                // sessions with credits left
  std::set<int64_t> lost_;                                  // lost and not back
  std::unordered_map<int64_t, Run> runs_;
  std::set<std::string> drained_, quarantined_;     // worker names (admin drain, quarantine)
  std::unordered_map<std::string, int> infra_failures_;  // consecutive, by worker name
  std::mt19937_64 lease_ids_{std::random_device{}()};

  Batch pending_;
  std::vector<Dispatch> pending_dispatches_, dispatches_;  // JOBs of the pending / taken batch
  std::unordered_map<int64_t, size_t> pending_requeue_;  // job id -> index in pending_.requeues
  std::vector<OutgoingMessage> outbox_;
  uint64_t completed_ = 0, failed_ = 0, lease_expiries_ = 0, requeues_ = 0, quarantines_ = 0;
};

}  // namespace kb::coord
