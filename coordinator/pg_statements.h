// The SQL of PgJobStore (pg_job_store.h), prepared once per connection; internal to kb_store.
// Bulk statements take one JSON array ($1) and unpack it with json_to_recordset: one round trip
// and one plan for any number of rows. The parameter is `json`, not `jsonb`: json is only checked
// on input and each field is converted once, where jsonb would first parse every number into a
// numeric (measured: the larger part of a results batch). For the same reason sample arrays
// travel as PostgreSQL array literals in a string ('{1.5,2}') and are cast to float8[]. Times
// travel as epoch milliseconds (float8); job seeds as the bit pattern of the uint64 in a bigint.
#pragma once

#include <pqxx/pqxx>

#include <string>
#include <utility>

#include "coordinator/pg_job_store.h"

namespace kb::coord::sql {

inline constexpr const char* kUpsertWorker = R"(
INSERT INTO workers (name, device_kind, gpu_model, gpu_uuid, memory_bytes, compute_capability,
                     software, host, state, last_seen)
VALUES ($1, $2, $3, NULLIF($4, ''), $5, NULLIF($6, ''), $7::jsonb, NULLIF($8, ''), 'idle', now())
ON CONFLICT (name) DO UPDATE SET
  device_kind = EXCLUDED.device_kind, gpu_model = EXCLUDED.gpu_model,
  gpu_uuid = EXCLUDED.gpu_uuid, memory_bytes = EXCLUDED.memory_bytes,
  compute_capability = EXCLUDED.compute_capability, software = EXCLUDED.software,
  host = EXCLUDED.host, state = 'idle', last_seen = now()
RETURNING id)";

inline constexpr const char* kEpoch = "SELECT epoch FROM kb_epoch";

inline constexpr const char* kHasPack = "SELECT 1 FROM packs WHERE hash = $1";
inline constexpr const char* kStorePack = R"(
INSERT INTO packs (hash, bytes, size_bytes, commit_sha, build_info)
VALUES ($1, $2, $3, NULLIF($4, ''), $5::jsonb)
ON CONFLICT (hash) DO NOTHING)";
inline constexpr const char* kLoadPack = "SELECT bytes FROM packs WHERE hash = $1";

inline constexpr const char* kInsertRun = R"(
INSERT INTO runs (submitted_by, suite, problems, preset, gpu_models, commit_sha, branch,
                  commit_time, pack_hash, config)
VALUES ($1, NULLIF($2, ''), ARRAY(SELECT jsonb_array_elements_text($3::jsonb)), $4,
        ARRAY(SELECT jsonb_array_elements_text($5::jsonb)), NULLIF($6, ''), NULLIF($7, ''),
        $8::timestamptz, NULLIF($9, ''), $10::jsonb)
RETURNING id)";
inline constexpr const char* kReserveJobIds =
    "SELECT nextval(pg_get_serial_sequence('jobs', 'id')) FROM generate_series(1, $1)";
inline constexpr const char* kInsertJobs = R"(
INSERT INTO jobs (id, run_id, problem_id, preset, gpu_model, seed, predicted_ms, params,
                  max_attempts)
SELECT u.id, $1, u.problem_id, u.preset, u.gpu_model, u.seed, u.predicted_ms,
       COALESCE(u.params, '{}'), u.max_attempts
FROM json_to_recordset($2::json) AS u(id bigint, problem_id text, preset text, gpu_model text,
     seed bigint, predicted_ms float8, params jsonb, max_attempts int))";

inline constexpr const char* kCancelRun = R"(
UPDATE runs SET state = 'cancelled', finished_at = now()
WHERE id = $1 AND state NOT IN ('done', 'cancelled'))";
inline constexpr const char* kRunExists = "SELECT 1 FROM runs WHERE id = $1";
inline constexpr const char* kCancelJobs = R"(
UPDATE jobs SET state = 'cancelled', finished_at = now(), lease_deadline = NULL
WHERE run_id = $1 AND state IN ('queued', 'leased')
RETURNING id)";  // in no particular order: cancel_run sorts

inline constexpr const char* kLoadOpenJobs = R"(
SELECT j.id, j.run_id, j.problem_id, j.preset, j.gpu_model, j.seed, j.predicted_ms, j.params::text,
       j.state, j.attempt, j.max_attempts, j.worker_id,
       (extract(epoch FROM j.lease_deadline) * 1000)::bigint, COALESCE(r.pack_hash, ''),
       r.config::text, j.lease_id
FROM jobs j JOIN runs r ON r.id = j.run_id
WHERE j.state IN ('queued', 'leased') AND r.state NOT IN ('done', 'cancelled')
ORDER BY j.id)";

// The median of the last 20 wall times of the series; NULL without history.
inline constexpr const char* kPredictedWall = R"(
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY wall_ms)
FROM (SELECT wall_ms FROM results
      WHERE problem_id = $1 AND preset = $2 AND gpu_model = $3 AND wall_ms IS NOT NULL
      ORDER BY created_at DESC, id DESC LIMIT 20) AS recent)";

// --- apply(): each takes one JSON array ---

inline constexpr const char* kRequeue = R"(
UPDATE jobs SET state = 'queued', worker_id = NULL, leased_at = NULL, lease_deadline = NULL
FROM json_to_recordset($1::json) AS u(job_id bigint)
WHERE jobs.id = u.job_id AND jobs.state = 'leased')";

inline constexpr const char* kLease = R"(
UPDATE jobs SET state = 'leased', attempt = u.attempt, worker_id = u.worker_id, leased_at = now(),
                lease_deadline = to_timestamp(u.deadline_ms / 1000.0), lease_id = u.lease_id
FROM json_to_recordset($1::json) AS u(job_id bigint, attempt int, worker_id bigint,
                                         deadline_ms float8, lease_id bigint)
WHERE jobs.id = u.job_id AND jobs.state IN ('queued', 'leased') AND jobs.attempt <= u.attempt
  AND (jobs.state = 'queued' OR jobs.attempt < u.attempt
       OR jobs.worker_id IS DISTINCT FROM u.worker_id))";

inline constexpr const char* kFail = R"(
UPDATE jobs SET state = 'failed', failure_reason = u.reason, finished_at = now(),
                lease_deadline = NULL
FROM json_to_recordset($1::json) AS u(job_id bigint, reason text)
WHERE jobs.id = u.job_id AND jobs.state IN ('queued', 'leased'))";

// Inserts the results that are new; their jobs -> done (a cancelled job stays cancelled). Returns
// the job ids of the rows inserted.
inline constexpr const char* kResults = R"(
WITH u AS (
  SELECT * FROM json_to_recordset($1::json) AS x(
    job_id bigint, attempt int, worker_id bigint, gpu_model text, device_kind text, wall_ms float8,
    status text, message text, reference_median_ms float8, custom_median_ms float8,
    speedup float8, speedup_ci_low float8, speedup_ci_high float8, custom_tflops float8,
    custom_gbps float8, floor_ms float8, max_abs_error float8, max_rel_error float8,
    reference_samples_ms text, custom_samples_ms text, environment jsonb, result jsonb)
), ins AS (
  INSERT INTO results (job_id, run_id, attempt, worker_id, problem_id, preset, gpu_model,
                       device_kind, status, message, reference_median_ms, custom_median_ms,
                       speedup, speedup_ci_low, speedup_ci_high, custom_tflops, custom_gbps,
                       floor_ms, max_abs_error, max_rel_error, reference_samples_ms,
                       custom_samples_ms, wall_ms, commit_sha, branch, commit_time, environment,
                       result)
  SELECT u.job_id, j.run_id, u.attempt, NULLIF(u.worker_id, 0), j.problem_id, j.preset, u.gpu_model,
         u.device_kind, u.status, u.message, u.reference_median_ms, u.custom_median_ms,
         u.speedup, u.speedup_ci_low, u.speedup_ci_high, u.custom_tflops, u.custom_gbps,
         u.floor_ms, u.max_abs_error, u.max_rel_error,
         COALESCE(u.reference_samples_ms::float8[], '{}'),
         COALESCE(u.custom_samples_ms::float8[], '{}'), u.wall_ms, r.commit_sha, r.branch,
         r.commit_time, COALESCE(u.environment, '{}'), u.result
  FROM u JOIN jobs j ON j.id = u.job_id JOIN runs r ON r.id = j.run_id
  ON CONFLICT (job_id) DO NOTHING
  RETURNING job_id
), done AS (
  UPDATE jobs SET state = 'done', finished_at = now(), lease_deadline = NULL
  FROM ins WHERE jobs.id = ins.job_id AND jobs.state NOT IN ('done', 'cancelled')
)
SELECT job_id FROM ins)";

inline constexpr const char* kWorkerStates = R"(
UPDATE workers SET state = u.state, last_seen = now()
FROM json_to_recordset($1::json) AS u(worker_id bigint, state text)
WHERE workers.id = u.worker_id)";

inline constexpr const char* kRunStates = R"(
UPDATE runs SET state = u.state,
                finished_at = CASE WHEN u.state IN ('done', 'cancelled') THEN now() END
FROM json_to_recordset($1::json) AS u(run_id bigint, state text)
WHERE runs.id = u.run_id AND runs.state NOT IN ('done', 'cancelled') AND runs.state <> u.state)";

inline void prepare_all(pqxx::connection& conn) {
  const std::pair<const char*, const char*> statements[] = {
      {"kb_upsert_worker", kUpsertWorker},
      {"kb_epoch", kEpoch},
      {"kb_has_pack", kHasPack},
      {"kb_store_pack", kStorePack},
      {"kb_load_pack", kLoadPack},
      {"kb_insert_run", kInsertRun},
      {"kb_reserve_job_ids", kReserveJobIds},
      {"kb_insert_jobs", kInsertJobs},
      {"kb_cancel_run", kCancelRun},
      {"kb_run_exists", kRunExists},
      {"kb_cancel_jobs", kCancelJobs},
      {"kb_load_open_jobs", kLoadOpenJobs},
      {"kb_predicted_wall", kPredictedWall},
      {"kb_requeue", kRequeue},
      {"kb_lease", kLease},
      {"kb_fail", kFail},
      {"kb_results", kResults},
      {"kb_worker_states", kWorkerStates},
      {"kb_run_states", kRunStates},
  };
  for (const auto& [name, text] : statements) conn.prepare(name, text);
}

}  // namespace kb::coord::sql

namespace kb::coord {

struct PgJobStore::Connection {
  explicit Connection(const std::string& url) : conn(url) {}
  pqxx::connection conn;
};

}  // namespace kb::coord
