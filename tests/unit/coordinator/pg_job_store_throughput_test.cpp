// PgJobStore throughput: the coordinator must sustain >= 2,000 jobs/s end to end, so a batch of
// 500 leases + 500 results has to commit well within 100 ms, and a 100,000-job run must be
// created in seconds. The floors asserted here are generous (CI machines are small and shared,
// and ctest runs tests in parallel); the measured figures are printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/job_result.h"
#include "coordinator/pg_job_store.h"
#include "tests/support/pg_store.h"

namespace kb::coord {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A sim job's result (samples = 0, the coordinator benchmark's case) or one as big as a GPU job's.
nlohmann::json result_with(int samples) {
  JobResult r;
  r.problem_id = "L2_010";
  r.preset = "small";
  r.device_kind = "sim";
  for (int i = 0; i < samples; ++i) {
    r.reference.samples_ms.push_back(2.0 + i * 1e-3);
    r.custom.samples_ms.push_back(1.0 + i * 1e-3);
  }
  r.reference.summary.median = 2.05;
  r.custom.summary.median = 1.05;
  r.speedup = {1.95, 1.9, 2.0, 0.02};
  r.environment = {{"gpu", "sim"}, {"driver", "none"}};
  return to_json(r);
}

NewRun run_of(int jobs) {
  NewRun run;
  run.submitted_by = "bench";
  run.preset = "small";
  NewJob job;
  job.problem_id = "L2_010";
  job.preset = "small";
  job.params = {{"sleep_ms", 1}};
  run.jobs.assign(jobs, job);
  return run;
}

std::vector<int64_t> add_workers(PgJobStore& store, int count) {
  std::vector<int64_t> workers;
  for (int i = 0; i < count; ++i) {
    WorkerIdentity worker;
    worker.name = "sim-" + std::to_string(i);
    worker.device_kind = worker.gpu_model = "sim";
    workers.push_back(store.upsert_worker(worker).value());
  }
  return workers;
}

// Applies 20 batches of 500 leases + 500 results (+ 64 worker states and a run state, as the
// coordinator sends them); returns results committed per second of apply().
double jobs_per_second(PgJobStore& store, int samples) {
  constexpr int kBatchJobs = 500, kBatches = 20;
  const std::vector<int64_t> workers = add_workers(store, 64);
  int64_t run_id = 0;
  Result<std::vector<JobRecord>> created =
      store.create_run(run_of(kBatchJobs * (kBatches + 1)), &run_id);
  KB_EXPECT_OK(created);
  if (!created.is_ok()) return 0;
  const std::vector<JobRecord>& jobs = created.value();
  const nlohmann::json result = result_with(samples);
  const auto deadline = std::chrono::system_clock::now() + std::chrono::minutes(5);
  double apply_s = 0, worst_ms = 0;
  // Batch b leases jobs [b*500, (b+1)*500) and delivers the results of batch b-1's leases.
  for (int b = 0; b <= kBatches; ++b) {
    Batch batch;
    for (int i = b * kBatchJobs; i < (b + 1) * kBatchJobs; ++i) {
      batch.leases.push_back({jobs[i].id, 1, workers[i % workers.size()], deadline});
    }
    for (int i = (b - 1) * kBatchJobs; b > 0 && i < b * kBatchJobs; ++i) {
      batch.results.push_back(
          {jobs[i].id, 1, workers[i % workers.size()], "sim", "sim", 3, result});
    }
    for (int64_t w : workers) batch.worker_states.push_back({w, "busy"});
    batch.run_states.push_back({run_id, "running"});
    const auto start = Clock::now();
    Result<BatchOutcome> outcome = store.apply(batch);
    const double s = seconds_since(start);
    KB_EXPECT_OK(outcome);
    if (b > 0) {  // the first batch only leases
      apply_s += s;
      worst_ms = std::max(worst_ms, s * 1e3);
    }
  }
  const double rate = kBatchJobs * kBatches / apply_s;
  std::printf(
      "[ perf ] apply, results with %d samples/variant: %d batches of %d leases + %d "
      "results: %.1f ms/batch (worst %.1f ms), %.0f jobs/s\n",
      samples, kBatches, kBatchJobs, kBatchJobs, apply_s * 1e3 / kBatches, worst_ms, rate);
  return rate;
}

TEST(PgJobStoreThroughput, SimResultBatches) {
  KB_OPEN_STORE(db, store);
  EXPECT_GT(jobs_per_second(store, 0), 2000.0);
}

TEST(PgJobStoreThroughput, GpuSizedResultBatches) {
  KB_OPEN_STORE(db, store);
  EXPECT_GT(jobs_per_second(store, 100), 500.0);
}

TEST(PgJobStoreThroughput, CreateRunOf100000Jobs) {
  KB_OPEN_STORE(db, store);
  const NewRun run = run_of(100000);
  const auto start = Clock::now();
  Result<std::vector<JobRecord>> jobs = store.create_run(run, nullptr);
  const double s = seconds_since(start);
  KB_ASSERT_OK(jobs);
  EXPECT_EQ(jobs->size(), 100000u);
  const auto loaded_start = Clock::now();
  Result<std::vector<JobRecord>> open = store.load_open_jobs();
  const double loaded_s = seconds_since(loaded_start);
  KB_ASSERT_OK(open);
  EXPECT_EQ(open->size(), 100000u);
  std::printf("[ perf ] create_run of 100000 jobs: %.0f ms; load_open_jobs: %.0f ms\n", s * 1e3,
              loaded_s * 1e3);
  EXPECT_LT(s, 30.0);
}

}  // namespace
}  // namespace kb::coord
