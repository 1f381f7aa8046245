// PgJobStore: the JobStore (job_store.h) over PostgreSQL with libpqxx. Owns one connection.
//
// Writes are set-based so that a batch of ~1,000 changes is a handful of statements: each kind of
// change travels as one JSON array parameter, unpacked by jsonb_to_recordset. apply() runs:
//   1. requeues  (only jobs still leased; before the leases, see below)
//   2. leases    (one row per job: the last of the batch; only open jobs whose attempt does not
//                 exceed the lease's, so a replay cannot undo a newer lease)
//   3. failures  (open jobs -> failed)
//   4. results   (INSERT ... ON CONFLICT (job_id) DO NOTHING; the columns are taken from the
//                 JobResult JSON here, commit/branch/commit_time from the run; the jobs of the
//                 rows inserted -> done unless cancelled)
//   5. worker states (+ last_seen = now()), 6. run states (a done/cancelled run stays so)
// in one transaction. Requeues go before leases because a batch cannot say how a job's requeue
// and lease interleave, and the common case is "worker lost: requeue, lease to another worker"
// within one batch; a lease then requeued within the same batch stays leased in the database
// until the next restart's lease grace requeues it, which loses nothing.
// Every statement is idempotent, so replaying a batch whose commit acknowledgement was lost
// leaves the same rows (result_inserted is then false: the row exists).
//
// Errors: kIoError for a lost connection or database outage (is_connection_error() is true:
// reconnect() and retry with the same arguments); kNotFound for a missing pack or run; kInternal
// for anything else (a bug, a constraint violation: do not retry). When a call fails, its
// transaction was rolled back or its commit is in doubt; either way a retry is safe.
//
// Thread safety: none; one PgJobStore per thread (the coordinator's database thread).
#pragma once

#include <memory>
#include <string>

#include "common/regression_detector.h"
#include "coordinator/job_store.h"

namespace kb::coord {

class PgJobStore final : public JobStore {
 public:
  // Does not connect: call reconnect() (or use open()).
  explicit PgJobStore(std::string db_url);
  ~PgJobStore() override;
  PgJobStore(const PgJobStore&) = delete;
  PgJobStore& operator=(const PgJobStore&) = delete;

  // Constructs and connects.
  static Result<std::unique_ptr<PgJobStore>> open(const std::string& db_url);

  Status reconnect() override;
  bool is_connection_error(const Status& status) const override;

  Result<std::string> database_epoch() override;
  Result<int64_t> upsert_worker(const WorkerIdentity& worker) override;

  Result<bool> has_pack(const std::string& hash) override;
  Status store_pack(const PackInfo& info, const std::string& bytes) override;
  Result<std::string> load_pack(const std::string& hash) override;

  Result<std::vector<JobRecord>> create_run(const NewRun& run, int64_t* run_id) override;
  Result<std::string> run_submitter(int64_t run_id) override;
  Status store_problems(const std::vector<ProblemRow>& problems) override;
  Result<std::vector<int64_t>> cancel_run(int64_t run_id) override;
  Result<std::vector<JobRecord>> load_open_jobs() override;
  Result<double> predicted_wall_ms(const std::string& problem_id, const std::string& preset,
                                   const std::string& gpu_model) override;

  Result<BatchOutcome> apply(const Batch& batch) override;
  Result<int> detect_regressions(const std::vector<int64_t>& job_ids) override;
  Result<int64_t> open_regressions() override;

 private:
  struct Connection;  // the libpqxx connection (pg_statements.h)

  Status require_connection() const;

  std::string db_url_;
  std::unique_ptr<Connection> conn_;
  RegressionConfig regression_config_;  // the defaults: 30 points, 1% practical threshold
};

}  // namespace kb::coord
