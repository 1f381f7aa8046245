// Read-only queries for the CLI (`kb runs / status / results / workers / watch`) over the tables
// of schemas/0001_initial.sql. Every query runs in a READ ONLY transaction on a connection made
// with the read-only role's URL (kb_readonly, README "Security"): the CLI never writes to the
// database; writes go through the coordinator.
//
// Errors (Status): kIoError when the database cannot be reached or a query fails (the message
// names the URL without its password), kNotFound for a run id that does not exist.
// Times are seconds since the Unix epoch (formatting is fleet_tables.h's business).
//
// Thread safety: one ResultsReader per thread (it owns a libpqxx connection).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb::cli {

struct RunRow {
  int64_t id = 0;
  std::string submitted_by, suite, preset, state, commit_sha, branch;
  std::vector<std::string> gpu_models;  // empty: any worker
  double submitted_at = 0;
  std::optional<double> finished_at;
  int64_t jobs = 0, done = 0, failed = 0, cancelled = 0;
};

struct RunStatus {
  RunRow run;
  std::map<std::string, int64_t> jobs_by_state;  // queued, leased, done, failed, cancelled
  double remaining_predicted_ms = 0;  // sum of predicted_ms over queued + leased jobs
  int64_t live_workers = 0;           // idle or busy workers that can take this run's jobs
  double now = 0;                     // the database's clock
  int64_t finished() const;           // done + failed + cancelled
  bool is_final() const { return run.state == "done" || run.state == "cancelled"; }
  // Seconds left: predicted work spread over the live workers; when there is no prediction
  // (no history yet), the rate observed so far. nullopt when neither is known.
  std::optional<double> eta_seconds() const;
};

struct ResultRow {  // one job of a run, with its result when there is one
  int64_t job_id = 0;
  std::string problem_id;
  std::string job_state;  // queued | leased | done | failed | cancelled
  std::string gpu_model;  // the result's worker model, else the job's target ("" = any)
  std::string status;     // the result's JobStatus name, "" without a result
  std::string message;    // the result's message, or the job's failure reason
  std::optional<double> reference_median_ms, custom_median_ms, speedup, speedup_ci_low,
      speedup_ci_high, custom_tflops, wall_ms;
  int attempt = 0;
  std::string worker;
};

struct WorkerRow {
  std::string name, state, device_kind, gpu_model, host;
  double last_seen = 0, seconds_since_seen = 0;
  int64_t jobs_done = 0, jobs_leased = 0;
};

class ResultsReader {
 public:
  static Result<std::unique_ptr<ResultsReader>> connect(const std::string& url);
  ~ResultsReader();

  Result<std::vector<RunRow>> runs(int last);  // newest first
  Result<RunStatus> run_status(int64_t run_id);
  Result<std::vector<ResultRow>> results(int64_t run_id);  // by problem, then GPU model
  // For summarize_results over several runs in one query (the dashboard's run list): per run id
  // (every id has an entry) its jobs with only gpu_model, job_state, status and speedup filled.
  Result<std::map<int64_t, std::vector<ResultRow>>> summary_rows_of_runs(
      const std::vector<int64_t>& run_ids);
  Result<std::vector<WorkerRow>> workers();
  // The newest run before `before_run_id` on `branch` with `preset` that is done and has
  // results (the CI gate's default baseline); nullopt when there is none.
  Result<std::optional<int64_t>> last_run_on_branch(const std::string& branch,
                                                    const std::string& preset,
                                                    int64_t before_run_id);

 private:
  struct Connection;  // wraps pqxx::connection (a typedef in libpqxx 6.4: not forward-declarable)
  ResultsReader(std::unique_ptr<Connection> connection, std::string url);
  Status query_error(const std::exception& e) const;

  std::unique_ptr<Connection> connection_;
  std::string url_;  // without the password
};

// The URL with any password replaced by "***", for messages.
std::string redact_url(const std::string& url);

}  // namespace kb::cli
