// The coordinator's scheduler: the in-memory queue, the workers' sessions and credits, the leases
// and the per-run counters (DESIGN.md, Distribution; schemas/protocol.md). Pure logic: no sockets,
// no database. Each event updates the state and appends to two outboxes that the caller drains:
//   take_batch()     the state changes for the database thread (one JobStore::apply each)
//   take_messages()  messages to workers (JOB, DISCONNECT), each with its routing id
//
// Rules (schemas/protocol.md):
// - A job with gpu_model G goes only to workers whose gpu_model == G; no model = any worker.
//   Among the jobs a worker can take: longest predicted_ms first, ties by lower job id.
// - A worker is sent at most the credits it asked for (REQUEST), one JOB per credit.
// - A lease ends when its worker is lost (silent for liveness x heartbeat), re-registers without
//   the job in in_flight, or the job's deadline passes; the job is queued again and its next lease
//   is attempt+1; after max_attempts leases it is failed. Leases loaded after a restart wait
//   lease_grace for their worker to come back with the job in in_flight.
// - The first result for a job wins (whatever attempt it names): the job is done. A result for a
//   done job whose row is not yet committed is a duplicate to ack after the next commit; a result
//   for a job this scheduler no longer knows is an orphan (the caller checks it against the store).
// - Memory stays flat: a done job is erased once its result's batch has committed (committed()).
//
// Thread safety: none; one owner (the coordinator's event loop).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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
};

struct InFlight {
  int64_t job_id = 0;
  int attempt = 0;
};

struct OutgoingMessage {
  std::string routing_id;
  wire::Message message;
};

enum class ResultDisposition {
  kAccepted,      // the job's result: in the pending batch; ack after that batch commits
  kDuplicate,     // the job is done, its row not yet known committed: ack after the next commit
  kOrphan,        // unknown job (done and forgotten, or never existed): check it in the store
  kUnknownWorker  // the routing id has no session: tell the peer to register first
};

struct SchedulerStats {
  size_t queued = 0, leased = 0, jobs_in_memory = 0, runs = 0;
  size_t workers_busy = 0, workers_idle = 0, workers_lost = 0;
  uint64_t jobs_completed = 0;  // results accepted (done jobs) since start
  uint64_t jobs_failed = 0;
};

// The lease deadline for one attempt: max(60 s, 3 x predicted + 2 x time cap + 30 s).
// With job_timeout_s > 0 (the submitter's limit per job) the budget is that limit plus 10 s, so
// the worker's own timeout (the budget less 5 s) ends the job as `timeout` before the lease ends.
Millis lease_budget(double predicted_ms, double time_cap_s, double job_timeout_s = 0);

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, const Clock& clock);

  // Jobs after a restart (load_open_jobs): queued ones join the queue, leased ones get lease_grace.
  void load(std::vector<JobRecord> jobs);
  // A new run's jobs (create_run).
  void submit(std::vector<JobRecord> jobs);
  // Drops the run's jobs from memory (the store marks them cancelled); returns how many.
  size_t cancel(int64_t run_id);

  // A worker's (re-)registration: a new session replaces any older one of the same worker_id.
  // Its leases not listed in in_flight end now; in_flight jobs still queued are leased to it.
  void worker_ready(int64_t worker_id, const std::string& routing_id, const WorkerIdentity& identity,
                    const std::vector<InFlight>& in_flight);
  // Any message from a known routing id keeps its session alive; false when it has none.
  bool heard(const std::string& routing_id);
  void add_credits(const std::string& routing_id, int credits);
  ResultDisposition result(const std::string& routing_id, int64_t job_id, int attempt,
                           ResultRow row);
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
  std::vector<OutgoingMessage> take_messages();
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
  struct Job {
    JobRecord record;  // record.attempt = leases started so far
    JobState state = JobState::kQueued;
    int64_t holder = 0;  // worker id while leased
    SteadyTime deadline{};
    bool in_grace = false;  // loaded after a restart, its worker not back yet
  };
  struct Worker {
    int64_t id = 0;
    std::string routing_id, gpu_model, device_kind;
    int credits = 0;
    SteadyTime last_heard{};
  };
  struct Run {
    size_t open = 0;  // jobs not done/failed
    bool running = false;
    std::string pack_hash;
    double time_cap_s = 0;
    double job_timeout_s = 0;  // 0: derived from the prediction and the time cap
  };

  Queue& queue_for(const std::optional<std::string>& gpu_model);
  void enqueue(Job& job);
  void dequeue(Job& job);
  void lease(Job& job, Worker& worker, int attempt, std::optional<SteadyTime> deadline);
  void end_lease(Job& job);
  void requeue(Job& job, const std::string& reason);
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
  wire::Message job_message(const Job& job) const;

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

  Batch pending_;
  std::unordered_map<int64_t, size_t> pending_requeue_;  // job id -> index in pending_.requeues
  std::vector<OutgoingMessage> outbox_;
  uint64_t completed_ = 0, failed_ = 0;
};

}  // namespace kb::coord
