// PgJobStore (coordinator/pg_job_store.h) against a real PostgreSQL (KB_TEST_PG_URL): the queue's
// state changes, exactly-once results, replayed batches, and apply()'s throughput.
#include "coordinator/pg_job_store.h"

#include <gtest/gtest.h>
#include <pqxx/pqxx>

#include <chrono>
#include <cstdio>

#include "common/job_result.h"
#include "tests/support/pg_store.h"

namespace kb::coord {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

pqxx::result query(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::nontransaction txn(conn);
  return txn.exec(sql);
}

std::string scalar(const std::string& url, const std::string& sql) {
  pqxx::result r = query(url, sql);
  return r.empty() || r[0][0].is_null() ? "NULL" : r[0][0].c_str();
}

WorkerIdentity worker(const std::string& name, const std::string& model = "sim") {
  WorkerIdentity w;
  w.name = name;
  w.device_kind = "sim";
  w.gpu_model = model;
  w.host = "localhost";
  w.software = {{"kbfleet", "0.1.0"}};
  return w;
}

NewRun run_of(int jobs, const std::string& problem = "L1_001") {
  NewRun run;
  run.submitted_by = "test";
  run.suite = "kernelbench22";
  run.problems = {problem};
  run.preset = "small";
  run.commit_sha = "abc123";
  run.branch = "main";
  run.commit_time = "2024-05-01T12:00:00Z";
  run.config = {{"seed", 7}};
  for (int i = 0; i < jobs; ++i) {
    NewJob job;
    job.problem_id = problem;
    job.preset = "small";
    job.gpu_model = i % 2 == 0 ? std::optional<std::string>() : std::string("sim");
    job.seed = 0xfedcba9876543210ULL + i;  // above INT64_MAX: stored as its bit pattern
    job.predicted_ms = i;
    job.params = {{"sleep_ms", i}};
    run.jobs.push_back(job);
  }
  return run;
}

json job_result(const std::string& problem, double speedup) {
  JobResult r;
  r.problem_id = problem;
  r.preset = "small";
  r.device_kind = "sim";
  r.status = JobStatus::kOk;
  r.reference.samples_ms = {2.0, 2.1, 1.9};
  r.reference.summary.median = 2.0;
  r.custom.samples_ms = {1.0, 1.1, 0.9};
  r.custom.summary.median = 1.0;
  r.speedup.speedup = speedup;
  r.speedup.ci_low = speedup - 0.1;
  r.speedup.ci_high = speedup + 0.1;
  r.errors.max_abs_error = 1e-6;
  r.environment = {{"gpu", "sim"}};
  return to_json(r);
}

ResultRow result_of(int64_t job_id, int64_t worker_id, double wall_ms = 5) {
  ResultRow row;
  row.job_id = job_id;
  row.attempt = 1;
  row.worker_id = worker_id;
  row.gpu_model = "sim";
  row.device_kind = "sim";
  row.wall_ms = wall_ms;
  row.result = job_result("L1_001", 2.0);
  return row;
}

Lease lease_of(int64_t job_id, int64_t worker_id, int attempt = 1) {
  return {job_id, attempt, worker_id, std::chrono::system_clock::now() + std::chrono::minutes(1)};
}

// A Batch built fluently: BatchOf().lease(...).result(...).
class BatchOf {
 public:
  BatchOf& lease(const Lease& lease) { return add(batch_.leases, lease); }
  BatchOf& requeue(int64_t job) { return add(batch_.requeues, Requeue{job, "worker lost"}); }
  BatchOf& fail(int64_t job) { return add(batch_.failures, JobFailure{job, "lost 3 leases"}); }
  BatchOf& result(const ResultRow& row) { return add(batch_.results, row); }
  BatchOf& worker(int64_t id, const char* state) {
    return add(batch_.worker_states, WorkerState{id, state});
  }
  BatchOf& run(int64_t id, const char* state) {
    return add(batch_.run_states, RunState{id, state});
  }
  operator const Batch&() const { return batch_; }  // NOLINT: implicit by design

 private:
  template <typename T>
  BatchOf& add(std::vector<T>& list, const T& item) {
    list.push_back(item);
    return *this;
  }
  Batch batch_;
};

std::string job_state(const std::string& url, int64_t id) {
  return scalar(url, "SELECT state || '/' || attempt FROM jobs WHERE id = " + std::to_string(id));
}

// Everything apply() may write, as text, for comparing a batch applied once and twice.
std::string snapshot(const std::string& url) {
  std::string out;
  for (const char* sql :
       {"SELECT id, state, attempt, worker_id, lease_deadline, failure_reason FROM jobs ORDER BY "
        "id",
        "SELECT job_id, attempt, worker_id, status, speedup, wall_ms FROM results ORDER BY job_id",
        "SELECT id, state FROM runs ORDER BY id", "SELECT id, state FROM workers ORDER BY id"}) {
    for (const auto& row : query(url, sql)) {
      for (const auto& field : row)
        out += (field.is_null() ? "NULL" : field.c_str()) + std::string(",");
      out += "\n";
    }
  }
  return out;
}

TEST(PgJobStore, CreateRunInsertsItsJobs) {
  KB_OPEN_STORE(db, store);
  int64_t run_id = 0;
  Result<std::vector<JobRecord>> created = store.create_run(run_of(3), &run_id);
  KB_ASSERT_OK(created);
  const std::vector<JobRecord>& jobs = created.value();
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_GT(run_id, 0);
  EXPECT_LT(jobs[0].id, jobs[1].id);
  EXPECT_EQ(jobs[1].run_id, run_id);
  EXPECT_EQ(jobs[1].gpu_model, "sim");
  EXPECT_EQ(jobs[2].seed, 0xfedcba9876543210ULL + 2);
  EXPECT_EQ(jobs[2].run_config["seed"], 7);
  EXPECT_EQ(scalar(db.url(), "SELECT count(*) FROM jobs WHERE state = 'queued' AND attempt = 0"),
            "3");
  EXPECT_EQ(scalar(db.url(),
                   "SELECT params->>'sleep_ms' FROM jobs WHERE id = " + std::to_string(jobs[2].id)),
            "2");
  EXPECT_EQ(scalar(db.url(), "SELECT problems[1] || commit_sha FROM runs"), "L1_001abc123");
}

TEST(PgJobStore, LeasesRequeuesFailuresAndResults) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  std::vector<JobRecord> jobs = store.create_run(run_of(4), nullptr).value();
  BatchOf leases;
  for (const auto& job : jobs) leases.lease(lease_of(job.id, w));
  KB_ASSERT_OK(store.apply(leases.worker(w, "busy")));
  EXPECT_EQ(job_state(db.url(), jobs[0].id), "leased/1");
  EXPECT_EQ(scalar(db.url(), "SELECT state FROM workers"), "busy");

  Result<BatchOutcome> outcome =
      store.apply(BatchOf().requeue(jobs[0].id).fail(jobs[1].id).result(result_of(jobs[2].id, w)));
  KB_ASSERT_OK(outcome);
  EXPECT_EQ(outcome->result_inserted, std::vector<bool>{true});
  EXPECT_EQ(job_state(db.url(), jobs[0].id), "queued/1");
  EXPECT_EQ(job_state(db.url(), jobs[1].id), "failed/1");
  EXPECT_EQ(job_state(db.url(), jobs[2].id), "done/1");
  EXPECT_EQ(job_state(db.url(), jobs[3].id), "leased/1");
  pqxx::result r = query(db.url(),
                         "SELECT status, speedup, speedup_ci_high, custom_median_ms, "
                         "array_length(custom_samples_ms, 1), commit_sha, branch, problem_id, "
                         "environment->>'gpu', result->>'preset' FROM results");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0][0].as<std::string>(), "ok");
  EXPECT_DOUBLE_EQ(r[0][1].as<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r[0][2].as<double>(), 2.1);
  EXPECT_DOUBLE_EQ(r[0][3].as<double>(), 1.0);
  EXPECT_EQ(r[0][4].as<int>(), 3);
  EXPECT_EQ(r[0][5].as<std::string>() + r[0][6].as<std::string>() + r[0][7].as<std::string>(),
            "abc123mainL1_001");
  EXPECT_EQ(r[0][8].as<std::string>() + r[0][9].as<std::string>(), "simsmall");
}

TEST(PgJobStore, AMalformedResultIsStoredWithoutItsColumns) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  std::vector<JobRecord> jobs = store.create_run(run_of(2), nullptr).value();
  ResultRow row = result_of(jobs[0].id, w);
  row.result = {{"status", 3}, {"speedup", "fast"}, {"custom", {{"samples_ms", {1, "x", 2}}}}};
  ResultRow nul = result_of(jobs[1].id, 0);  // no worker id, a NUL byte in the message
  nul.result["message"] = std::string("a\0b", 3);
  KB_ASSERT_OK(store.apply(BatchOf().result(row).result(nul)));
  EXPECT_EQ(scalar(db.url(),
                   "SELECT status || coalesce(speedup::text, '-') || "
                   "array_length(custom_samples_ms, 1) FROM results WHERE job_id = " +
                       std::to_string(jobs[0].id)),
            "runtime_error-2");
  EXPECT_EQ(scalar(db.url(),
                   "SELECT length(message) || coalesce(worker_id::text, '-') FROM "
                   "results WHERE job_id = " +
                       std::to_string(jobs[1].id)),
            "3-");
}

TEST(PgJobStore, ARequeueAndReleaseInOneBatchEndsLeased) {
  KB_OPEN_STORE(db, store);
  int64_t w0 = store.upsert_worker(worker("w0")).value();
  int64_t w1 = store.upsert_worker(worker("w1")).value();
  int64_t job = store.create_run(run_of(1), nullptr).value()[0].id;
  KB_ASSERT_OK(store.apply(BatchOf().lease(lease_of(job, w0, 1))));
  KB_ASSERT_OK(store.apply(BatchOf().requeue(job).lease(lease_of(job, w1, 2))));
  EXPECT_EQ(job_state(db.url(), job), "leased/2");
  EXPECT_EQ(scalar(db.url(), "SELECT worker_id FROM jobs"), std::to_string(w1));
}

TEST(PgJobStore, ADuplicateResultIsInsertedOnce) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  std::vector<JobRecord> jobs = store.create_run(run_of(2), nullptr).value();
  BatchOf first;
  first.result(result_of(jobs[0].id, w)).result(result_of(jobs[0].id, w));
  EXPECT_EQ(store.apply(first).value().result_inserted, (std::vector<bool>{true, false}));
  BatchOf again;
  again.result(result_of(jobs[1].id, w)).result(result_of(jobs[0].id, w));
  EXPECT_EQ(store.apply(again).value().result_inserted, (std::vector<bool>{true, false}));
  EXPECT_EQ(scalar(db.url(), "SELECT count(*) FROM results"), "2");
}

TEST(PgJobStore, AReplayedBatchLeavesTheSameRows) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  int64_t run_id = 0;
  std::vector<JobRecord> jobs = store.create_run(run_of(6), &run_id).value();
  KB_ASSERT_OK(
      store.apply(BatchOf().lease(lease_of(jobs[0].id, w)).lease(lease_of(jobs[1].id, w))));
  BatchOf batch;
  batch.lease(lease_of(jobs[2].id, w)).lease(lease_of(jobs[3].id, w, 2)).requeue(jobs[0].id);
  batch.fail(jobs[4].id).result(result_of(jobs[1].id, w)).result(result_of(jobs[2].id, w));
  batch.worker(w, "busy").run(run_id, "running");
  KB_ASSERT_OK(store.apply(batch));
  const std::string once = snapshot(db.url());
  Result<BatchOutcome> replay = store.apply(batch);  // the commit's acknowledgement was lost
  KB_ASSERT_OK(replay);
  EXPECT_EQ(replay->result_inserted, (std::vector<bool>{false, false}));
  EXPECT_EQ(snapshot(db.url()), once);
}

TEST(PgJobStore, TerminalJobsNeverRevert) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  int64_t run_id = 0;
  std::vector<JobRecord> jobs = store.create_run(run_of(3), &run_id).value();
  KB_ASSERT_OK(store.apply(BatchOf().fail(jobs[1].id).result(result_of(jobs[0].id, w))));
  KB_ASSERT_OK(store.cancel_run(run_id));
  const std::string before = snapshot(db.url());
  BatchOf late;
  for (const auto& job : jobs) late.lease(lease_of(job.id, w, 2)).requeue(job.id).fail(job.id);
  KB_ASSERT_OK(store.apply(late.run(run_id, "running")));
  EXPECT_EQ(snapshot(db.url()), before);
  EXPECT_EQ(job_state(db.url(), jobs[0].id), "done/0");
  EXPECT_EQ(job_state(db.url(), jobs[1].id), "failed/0");
  EXPECT_EQ(job_state(db.url(), jobs[2].id), "cancelled/0");
}

TEST(PgJobStore, CancelRunCancelsItsOpenJobs) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  int64_t run_id = 0;
  std::vector<JobRecord> jobs = store.create_run(run_of(3), &run_id).value();
  ASSERT_TRUE(store.apply(BatchOf().lease(lease_of(jobs[1].id, w)).result(result_of(jobs[0].id, w)))
                  .is_ok());
  Result<std::vector<int64_t>> cancelled = store.cancel_run(run_id);
  KB_ASSERT_OK(cancelled);
  EXPECT_EQ(cancelled.value(), (std::vector<int64_t>{jobs[1].id, jobs[2].id}));
  EXPECT_EQ(scalar(db.url(), "SELECT state FROM runs"), "cancelled");
  EXPECT_EQ(store.cancel_run(run_id).value().size(), 0u);
  EXPECT_EQ(store.cancel_run(run_id + 100).status().code(), StatusCode::kNotFound);
  // The result of a job that was running when its run was cancelled is kept; the job stays
  // cancelled.
  EXPECT_EQ(store.apply(BatchOf().result(result_of(jobs[1].id, w))).value().result_inserted,
            std::vector<bool>{true});
  EXPECT_EQ(job_state(db.url(), jobs[1].id), "cancelled/1");
}

TEST(PgJobStore, LoadOpenJobsSeesLeases) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  NewRun run = run_of(3);
  run.config = {{"time_cap_s", 30}};
  run.pack_hash = "p1";
  KB_ASSERT_OK(store.store_pack(PackInfo{"p1", 1, "abc", {}}, "x"));
  std::vector<JobRecord> jobs = store.create_run(run, nullptr).value();
  Lease lease = lease_of(jobs[1].id, w);
  KB_ASSERT_OK(store.apply(BatchOf().lease(lease).result(result_of(jobs[0].id, w))));
  int64_t finished_run = 0;
  KB_ASSERT_OK(store.create_run(run_of(2), &finished_run));
  KB_ASSERT_OK(store.apply(BatchOf().run(finished_run, "done")));

  Result<std::vector<JobRecord>> loaded = store.load_open_jobs();
  KB_ASSERT_OK(loaded);
  const std::vector<JobRecord>& open = loaded.value();
  ASSERT_EQ(open.size(), 2u);
  const JobRecord& leased = open[0];
  EXPECT_EQ(leased.id, jobs[1].id);
  EXPECT_EQ(leased.state, "leased");
  EXPECT_EQ(leased.attempt, 1);
  EXPECT_EQ(leased.worker_id, w);
  ASSERT_TRUE(leased.lease_deadline.has_value());
  EXPECT_EQ(
      std::chrono::duration_cast<milliseconds>(*leased.lease_deadline - lease.deadline).count(), 0);
  EXPECT_EQ(leased.gpu_model, "sim");
  EXPECT_EQ(leased.seed, jobs[1].seed);
  EXPECT_EQ(leased.params["sleep_ms"], 1);
  EXPECT_EQ(leased.pack_hash, "p1");
  EXPECT_EQ(leased.run_config["time_cap_s"], 30);
  EXPECT_EQ(open[1].state, "queued");
  EXPECT_FALSE(open[1].worker_id.has_value());
  EXPECT_FALSE(open[1].gpu_model.has_value());
}

TEST(PgJobStore, PredictedWallTimeIsTheMedianOfHistory) {
  KB_OPEN_STORE(db, store);
  int64_t w = store.upsert_worker(worker("w0")).value();
  EXPECT_EQ(store.predicted_wall_ms("L1_001", "small", "sim").value(), 0.0);
  std::vector<JobRecord> jobs = store.create_run(run_of(3), nullptr).value();
  BatchOf results;
  results.result(result_of(jobs[0].id, w, 10)).result(result_of(jobs[1].id, w, 40));
  KB_ASSERT_OK(store.apply(results.result(result_of(jobs[2].id, w, 20))));
  EXPECT_DOUBLE_EQ(store.predicted_wall_ms("L1_001", "small", "sim").value(), 20.0);
  EXPECT_EQ(store.predicted_wall_ms("L1_001", "small", "NVIDIA H200").value(), 0.0);
}

TEST(PgJobStore, WorkersAndPacks) {
  KB_OPEN_STORE(db, store);
  int64_t id = store.upsert_worker(worker("w0")).value();
  EXPECT_EQ(store.upsert_worker(worker("w0", "cpu")).value(), id);  // a restart keeps its id
  EXPECT_EQ(scalar(db.url(), "SELECT gpu_model FROM workers"), "cpu");

  const std::string bytes(
      "\x7f"
      "ELF\0\x01\xff binary",
      15);
  EXPECT_FALSE(store.has_pack("h1").value());
  KB_ASSERT_OK(store.store_pack(PackInfo{"h1", 15, "abc", {{"cuda", "12.4"}}}, bytes));
  KB_ASSERT_OK(store.store_pack(PackInfo{"h1", 15, "abc", {}}, bytes));  // idempotent
  EXPECT_TRUE(store.has_pack("h1").value());
  EXPECT_EQ(store.load_pack("h1").value(), bytes);
  EXPECT_EQ(store.load_pack("h2").status().code(), StatusCode::kNotFound);
}

TEST(PgJobStore, ALostConnectionIsAConnectionError) {
  KB_OPEN_STORE(db, store);
  query(db.url(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" +
                      db.name() + "' AND pid <> pg_backend_pid()");
  Result<int64_t> lost = store.upsert_worker(worker("w0"));
  ASSERT_FALSE(lost.is_ok());
  EXPECT_TRUE(store.is_connection_error(lost.status())) << lost.status().to_string();
  KB_ASSERT_OK(store.reconnect());
  KB_EXPECT_OK(store.upsert_worker(worker("w0")));

  PgJobStore nowhere("postgresql://postgres@127.0.0.1:1/postgres");
  Status refused = nowhere.reconnect();
  EXPECT_TRUE(nowhere.is_connection_error(refused)) << refused.to_string();
  EXPECT_TRUE(nowhere.is_connection_error(nowhere.has_pack("x").status()));
  // A bug (a constraint violated) is not a connection error: the batch is not retried forever.
  WorkerIdentity bad = worker("bad");
  bad.device_kind = "gpu";  // not in the CHECK constraint
  Status bug = store.upsert_worker(bad).status();
  EXPECT_FALSE(bug.is_ok());
  EXPECT_FALSE(store.is_connection_error(bug)) << bug.to_string();
}

TEST(PgJobStore, TheReadOnlyRoleCanSelectButNotWrite) {
  KB_REQUIRE_TEST_DB(db);
  KB_ASSERT_OK(::kb::testing::apply_migrations(db.url()));
  pqxx::connection conn(db.url());
  {
    pqxx::work txn(conn);
    txn.exec("SET LOCAL ROLE kb_readonly");
    EXPECT_NO_THROW(txn.exec("SELECT count(*) FROM results JOIN runs ON runs.id = results.run_id"));
    EXPECT_NO_THROW(txn.exec("SELECT * FROM latest_results"));
    EXPECT_THROW(
        txn.exec("INSERT INTO workers (name, device_kind, gpu_model) VALUES ('x', 'sim', 'sim')"),
        pqxx::insufficient_privilege);
  }
}

}  // namespace
}  // namespace kb::coord

namespace kb::coord {
namespace {

// The coordinator's regression hook: after 12 commits of one series at ~1.0 ms, a result 10%
// slower is flagged (and counted as open); sim results are never checked.
TEST(PgJobStore, DetectRegressionsFlagsASlowerPointOfARealSeries) {
  KB_OPEN_STORE(db, store);
  auto w = store.upsert_worker(worker("gpu-0", "NVIDIA H200"));
  KB_ASSERT_OK(w);
  std::vector<int64_t> last_job;
  for (int commit = 0; commit < 13; ++commit) {
    NewRun run = run_of(1, "L2_010");
    run.commit_sha = "c" + std::to_string(commit);
    char time[32];
    std::snprintf(time, sizeof time, "2026-01-%02dT12:00:00Z", commit + 1);
    run.commit_time = time;
    int64_t run_id = 0;
    auto jobs = store.create_run(run, &run_id);
    KB_ASSERT_OK(jobs);
    const int64_t job_id = jobs.value()[0].id;
    JobResult r = job_result_from_json(job_result("L2_010", 2.0));
    r.device_kind = "cuda";
    const double median = commit < 12 ? 1.0 + 0.003 * (commit % 3) : 1.10;  // the last: +10%
    r.custom.samples_ms = {median * 0.999, median, median * 1.001};
    r.custom.summary.median = median;
    ResultRow row = result_of(job_id, w.value());
    row.gpu_model = "NVIDIA H200";
    row.device_kind = "cuda";
    row.result = to_json(r);
    Batch batch;
    batch.results.push_back(row);
    KB_ASSERT_OK(store.apply(batch));
    auto flagged = store.detect_regressions({job_id});
    KB_ASSERT_OK(flagged);
    EXPECT_EQ(flagged.value(), commit < 12 ? 0 : 1) << "commit " << commit;
    last_job = {job_id};
  }
  auto open = store.open_regressions();
  KB_ASSERT_OK(open);
  EXPECT_EQ(open.value(), 1);
  // Checking the same point again changes nothing.
  EXPECT_EQ(store.detect_regressions(last_job).value(), 0);
  EXPECT_EQ(store.open_regressions().value(), 1);
}

}  // namespace
}  // namespace kb::coord
