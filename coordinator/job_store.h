// The coordinator's durable state in PostgreSQL (schemas/*.sql): workers, packs, runs, the job
// queue and the results. JobStore is the interface the coordinator's database thread calls;
// PgJobStore (pg_job_store.h) implements it over libpqxx, and tests use fakes.
//
// Contract:
// - Every call is synchronous and runs on the database thread only (never on the event loop).
// - apply(batch) writes a whole batch in ONE transaction, in the order given at Batch, and is
//   idempotent:
//   re-applying a batch after a lost connection (the commit may or may not have happened) leaves
//   the same rows. Results are unique per job (INSERT ... ON CONFLICT (job_id) DO NOTHING); a job
//   that is done, failed or cancelled is never moved back to queued/leased.
// - A Status that is not ok means nothing of the call is known to be committed; the caller retries
//   (after reconnect()) with the same arguments. is_connection_error() says whether to wait for
//   the database (outage) or to give up on the batch (a bug: logged and dropped).
//
// Thread safety: one JobStore per thread; not shared.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb::coord {

using SystemTime = std::chrono::system_clock::time_point;

struct WorkerIdentity {
  std::string name;         // unique per worker (e.g. "host-gpu0"); a restart reuses it
  std::string device_kind;  // "cuda", "cpu" or "sim"
  std::string gpu_model;    // "NVIDIA H200", "cpu", "sim": jobs are matched on this
  std::string gpu_uuid;
  int64_t memory_bytes = 0;
  std::string compute_capability;
  std::string host;
  nlohmann::json software = nlohmann::json::object();  // driver, cuda, cudnn, cublas, kbfleet
};

struct PackInfo {
  std::string hash;  // sha256 hex of the bytes
  int64_t size_bytes = 0;
  std::string commit_sha;
  nlohmann::json build_info = nlohmann::json::object();
};

// One job to create with its run.
struct NewJob {
  std::string problem_id, preset;
  std::optional<std::string> gpu_model;  // nullopt: any worker
  uint64_t seed = 0;
  double predicted_ms = 0;
  nlohmann::json params = nlohmann::json::object();  // sim: {"sleep_ms": ...}
  int max_attempts = 3;
};

struct NewRun {
  std::string submitted_by;
  std::string suite;  // "" when submitted as a list of problems
  std::vector<std::string> problems;
  std::string preset;
  std::vector<std::string> gpu_models;  // empty: any worker
  std::string commit_sha, branch;
  std::optional<std::string> commit_time;  // ISO 8601
  std::string pack_hash;                   // "" for sim-only runs
  nlohmann::json config = nlohmann::json::object();  // seed, time cap, labels
  std::vector<NewJob> jobs;
};

// A job as the scheduler needs it (after create_run or load_open_jobs).
struct JobRecord {
  int64_t id = 0, run_id = 0;
  std::string problem_id, preset;
  std::optional<std::string> gpu_model;
  uint64_t seed = 0;
  double predicted_ms = 0;
  nlohmann::json params = nlohmann::json::object();
  std::string state;  // queued | leased
  int attempt = 0, max_attempts = 3;
  std::optional<int64_t> worker_id;         // leased: the holder
  std::optional<SystemTime> lease_deadline;  // leased
  uint64_t lease_id = 0;                     // leased: the lease's fencing id (0: unknown)
  std::string pack_hash;                     // from the run
  nlohmann::json run_config = nlohmann::json::object();
};

// State changes the scheduler made since the last batch (Batch below).
struct Lease {
  int64_t job_id = 0;
  int attempt = 0;  // the new attempt number (1 for the first lease)
  int64_t worker_id = 0;
  SystemTime deadline;
  uint64_t lease_id = 0;  // the fencing id the JOB carries (schemas/protocol.md)
};
struct Requeue {
  int64_t job_id = 0;
  std::string reason;  // "worker lost", "deadline", ...
};
struct JobFailure {
  int64_t job_id = 0;
  std::string reason;  // "lost 3 leases: ..."
};
struct ResultRow {
  int64_t job_id = 0;
  int attempt = 0;
  int64_t worker_id = 0;
  std::string gpu_model, device_kind;
  double wall_ms = 0;
  nlohmann::json result;  // the JobResult JSON (common/job_result.h) as the worker sent it
};
struct WorkerState {
  int64_t worker_id = 0;
  std::string state;  // idle | busy | lost | gone
};
struct RunState {
  int64_t run_id = 0;
  std::string state;  // running | done | cancelled
};

// Applied kind by kind in this order: requeues, leases, failures, results, worker states, run
// states; within a kind the last entry for a key wins. Requeues come before leases, so a job whose
// lease expired and that was leased again within one batch ends leased. Cancelling a run is not a
// batch entry (cancel_run).
struct Batch {
  std::vector<Requeue> requeues;
  std::vector<Lease> leases;
  std::vector<JobFailure> failures;
  std::vector<ResultRow> results;
  std::vector<WorkerState> worker_states;  // also sets last_seen = now()
  std::vector<RunState> run_states;
  bool empty() const {
    return leases.empty() && requeues.empty() && failures.empty() && results.empty() &&
           worker_states.empty() && run_states.empty();
  }
};

// One problem of the coordinator's catalog, as the problems table keeps it: JOB carries spec_hash
// so that a worker can tell that its spec is the one the coordinator scheduled (version skew).
struct ProblemRow {
  std::string id, name, family, spec_yaml, spec_hash;  // spec_hash: sha256 hex of spec_yaml
  int level = 0;
};

struct BatchOutcome {
  // Per entry of batch.results, in order: true when this call inserted the row, false when a
  // result for the job already existed (a duplicate delivery; still acknowledged).
  std::vector<bool> result_inserted;
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  virtual Status reconnect() = 0;
  virtual bool is_connection_error(const Status& status) const = 0;

  // The database's epoch (schemas/0004_epoch.sql): a random id made when it was first migrated.
  // WELCOME carries it; "" for stores without one (test fakes).
  virtual Result<std::string> database_epoch() { return std::string(); }

  // Workers.
  virtual Result<int64_t> upsert_worker(const WorkerIdentity& worker) = 0;  // -> workers.id

  // The catalog the coordinator serves (insert or update by id). Stores without one ignore it.
  virtual Status store_problems(const std::vector<ProblemRow>& problems) {
    (void)problems;
    return Status::ok();
  }

  // Packs (by content hash).
  virtual Result<bool> has_pack(const std::string& hash) = 0;
  virtual Status store_pack(const PackInfo& info, const std::string& bytes) = 0;  // idempotent
  virtual Result<std::string> load_pack(const std::string& hash) = 0;  // kNotFound if absent

  // Runs: inserts the run and its jobs (state queued, attempt 0) in one transaction.
  virtual Result<std::vector<JobRecord>> create_run(const NewRun& run, int64_t* run_id) = 0;
  // The run's submitted_by (the submitter key's name): who may cancel it. kNotFound if no run.
  virtual Result<std::string> run_submitter(int64_t run_id) = 0;
  // Marks the run cancelled and its queued/leased jobs cancelled; returns the cancelled job ids.
  virtual Result<std::vector<int64_t>> cancel_run(int64_t run_id) = 0;

  // After a coordinator (re)start: every queued or leased job of a run that is not finished.
  virtual Result<std::vector<JobRecord>> load_open_jobs() = 0;

  // Predicted wall time per job from history: median wall_ms of the last results with the same
  // (problem, preset, gpu_model); 0 when there is no history.
  virtual Result<double> predicted_wall_ms(const std::string& problem_id, const std::string& preset,
                                           const std::string& gpu_model) = 0;

  virtual Result<BatchOutcome> apply(const Batch& batch) = 0;

  // Regression detection (common/regression_detector.h, coordinator/regression_store.h) for the
  // results just stored for these jobs; sim results are never checked. Returns how many points
  // were flagged. The defaults (for stores without history) check nothing.
  virtual Result<int> detect_regressions(const std::vector<int64_t>& job_ids) {
    (void)job_ids;
    return 0;
  }
  // Regressions flagged or confirmed and not cleared (the /metrics gauge).
  virtual Result<int64_t> open_regressions() { return int64_t{0}; }
};

}  // namespace kb::coord
