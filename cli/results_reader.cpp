#include "cli/results_reader.h"

#include <pqxx/pqxx>

#include <sstream>

namespace kb::cli {
namespace {

// The run columns shared by runs() and run_status(); the WHERE/ORDER clause is appended.
// The job counts come from a LATERAL subquery per run, so `ORDER BY r.id DESC LIMIT N` reads N
// runs and their jobs through jobs_run, never every job (1,000,000 rows: see
// tests/integration/dashboard_scale_test.cpp).
constexpr const char* kRunSelect = R"SQL(
SELECT r.id, r.submitted_by, coalesce(r.suite, ''), r.preset, r.state,
       coalesce(r.commit_sha, ''), coalesce(r.branch, ''), array_to_string(r.gpu_models, ','),
       extract(epoch FROM r.submitted_at)::float8, extract(epoch FROM r.finished_at)::float8,
       c.jobs, c.done, c.failed, c.cancelled
FROM runs r CROSS JOIN LATERAL (
  SELECT count(*) AS jobs,
         count(*) FILTER (WHERE j.state = 'done') AS done,
         count(*) FILTER (WHERE j.state = 'failed') AS failed,
         count(*) FILTER (WHERE j.state = 'cancelled') AS cancelled
  FROM jobs j WHERE j.run_id = r.id) c
)SQL";

std::optional<double> optional_double(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<double>();
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

RunRow run_from_row(const pqxx::row& row) {
  RunRow run;
  run.id = row[0].as<int64_t>();
  run.submitted_by = row[1].as<std::string>();
  run.suite = row[2].as<std::string>();
  run.preset = row[3].as<std::string>();
  run.state = row[4].as<std::string>();
  run.commit_sha = row[5].as<std::string>();
  run.branch = row[6].as<std::string>();
  run.gpu_models = split_commas(row[7].as<std::string>());
  run.submitted_at = row[8].as<double>();
  run.finished_at = optional_double(row[9]);
  run.jobs = row[10].as<int64_t>();
  run.done = row[11].as<int64_t>();
  run.failed = row[12].as<int64_t>();
  run.cancelled = row[13].as<int64_t>();
  return run;
}

ResultRow result_from_row(const pqxx::row& row) {
  ResultRow r;
  r.job_id = row[0].as<int64_t>();
  r.problem_id = row[1].as<std::string>();
  r.job_state = row[2].as<std::string>();
  r.gpu_model = row[3].as<std::string>();
  r.status = row[4].as<std::string>();
  r.message = row[5].as<std::string>();
  r.reference_median_ms = optional_double(row[6]);
  r.custom_median_ms = optional_double(row[7]);
  r.speedup = optional_double(row[8]);
  r.speedup_ci_low = optional_double(row[9]);
  r.speedup_ci_high = optional_double(row[10]);
  r.custom_tflops = optional_double(row[11]);
  r.wall_ms = optional_double(row[12]);
  r.attempt = row[13].as<int>();
  r.worker = row[14].as<std::string>();
  return r;
}

// What summarize_results reads of each job of several runs ($1, an array of run ids): run id,
// GPU model, job state, result status, speedup. The results are bounded by run too (a result's
// run is its job's), which lets PostgreSQL read them through results_run instead of scanning
// every result (tests/integration/dashboard_scale_test.cpp).
constexpr const char* kSummaryRowsOfRuns = R"SQL(
SELECT j.run_id, coalesce(res.gpu_model, j.gpu_model, ''), j.state, coalesce(res.status, ''),
       res.speedup
FROM jobs j
LEFT JOIN results res ON res.job_id = j.id AND res.run_id = ANY ($1::bigint[])
WHERE j.run_id = ANY ($1::bigint[]))SQL";

}  // namespace

int64_t RunStatus::finished() const {
  int64_t n = 0;
  for (const char* state : {"done", "failed", "cancelled"}) {
    const auto it = jobs_by_state.find(state);
    if (it != jobs_by_state.end()) n += it->second;
  }
  return n;
}

std::optional<double> RunStatus::eta_seconds() const {
  if (is_final()) return 0.0;
  if (remaining_predicted_ms > 0 && live_workers > 0) {
    return remaining_predicted_ms / 1000.0 / static_cast<double>(live_workers);
  }
  const int64_t left = run.jobs - finished();
  const double elapsed = now - run.submitted_at;
  if (finished() == 0 || elapsed <= 0) return std::nullopt;
  return elapsed / static_cast<double>(finished()) * static_cast<double>(left);
}

std::string redact_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

struct ResultsReader::Connection {
  explicit Connection(const std::string& url) : pq(url) {}
  pqxx::connection pq;
};

ResultsReader::ResultsReader(std::unique_ptr<Connection> connection, std::string url)
    : connection_(std::move(connection)), url_(std::move(url)) {}

ResultsReader::~ResultsReader() = default;

Result<std::unique_ptr<ResultsReader>> ResultsReader::connect(const std::string& url) {
  try {
    auto connection = std::make_unique<Connection>(url);
    return std::unique_ptr<ResultsReader>(new ResultsReader(std::move(connection), redact_url(url)));
  } catch (const std::exception& e) {
    return Status::io_error("cannot connect to the database at " + redact_url(url) + ": " +
                            e.what() + " (check --db / KB_DB_URL)");
  }
}

Status ResultsReader::query_error(const std::exception& e) const {
  std::string what = e.what();
  while (!what.empty() && what.back() == '\n') what.pop_back();
  return Status::io_error("database query failed (" + url_ + "): " + what);
}

Result<std::vector<RunRow>> ResultsReader::runs(int last) {
  try {
    pqxx::read_transaction txn(connection_->pq);
    std::vector<RunRow> rows;
    for (const auto& row :
         txn.exec_params(std::string(kRunSelect) + "ORDER BY r.id DESC LIMIT $1", last)) {
      rows.push_back(run_from_row(row));
    }
    return rows;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<RunStatus> ResultsReader::run_status(int64_t run_id) {
  try {
    pqxx::read_transaction txn(connection_->pq);
    const pqxx::result runs = txn.exec_params(std::string(kRunSelect) + "WHERE r.id = $1", run_id);
    if (runs.empty()) return Status::not_found("no run " + std::to_string(run_id) + " in the database");
    RunStatus status;
    status.run = run_from_row(runs[0]);
    for (const auto& row : txn.exec_params(
             "SELECT state, count(*), coalesce(sum(predicted_ms), 0)::float8 FROM jobs "
             "WHERE run_id = $1 GROUP BY state",
             run_id)) {
      const std::string state = row[0].as<std::string>();
      status.jobs_by_state[state] = row[1].as<int64_t>();
      if (state == "queued" || state == "leased") status.remaining_predicted_ms += row[2].as<double>();
    }
    const pqxx::row workers = txn.exec_params1(
        "SELECT count(*), extract(epoch FROM now())::float8 FROM workers w, runs r "
        "WHERE r.id = $1 AND w.state IN ('idle', 'busy') "
        "AND (cardinality(r.gpu_models) = 0 OR w.gpu_model = ANY (r.gpu_models))",
        run_id);
    status.live_workers = workers[0].as<int64_t>();
    status.now = workers[1].as<double>();
    return status;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<std::vector<ResultRow>> ResultsReader::results(int64_t run_id) {
  try {
    pqxx::read_transaction txn(connection_->pq);
    const pqxx::result runs = txn.exec_params("SELECT 1 FROM runs WHERE id = $1", run_id);
    if (runs.empty()) return Status::not_found("no run " + std::to_string(run_id) + " in the database");
    std::vector<ResultRow> rows;
    for (const auto& row : txn.exec_params(R"SQL(
SELECT j.id, j.problem_id, j.state, coalesce(res.gpu_model, j.gpu_model, ''),
       coalesce(res.status, ''), coalesce(res.message, j.failure_reason, ''),
       res.reference_median_ms, res.custom_median_ms, res.speedup, res.speedup_ci_low,
       res.speedup_ci_high, res.custom_tflops, res.wall_ms, coalesce(res.attempt, j.attempt),
       coalesce(w.name, '')
FROM jobs j
LEFT JOIN results res ON res.job_id = j.id
LEFT JOIN workers w ON w.id = coalesce(res.worker_id, j.worker_id)
WHERE j.run_id = $1
ORDER BY j.problem_id, 4, j.id)SQL",
                                           run_id)) {
      rows.push_back(result_from_row(row));
    }
    return rows;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<std::map<int64_t, std::vector<ResultRow>>> ResultsReader::summary_rows_of_runs(
    const std::vector<int64_t>& run_ids) {
  std::string ids = "{";
  for (int64_t id : run_ids) ids += (ids.size() > 1 ? "," : "") + std::to_string(id);
  try {
    pqxx::read_transaction txn(connection_->pq);
    std::map<int64_t, std::vector<ResultRow>> rows;
    for (int64_t id : run_ids) rows[id];
    for (const auto& row : txn.exec_params(kSummaryRowsOfRuns, ids + "}")) {
      ResultRow r;
      r.gpu_model = row[1].as<std::string>();
      r.job_state = row[2].as<std::string>();
      r.status = row[3].as<std::string>();
      r.speedup = optional_double(row[4]);
      rows[row[0].as<int64_t>()].push_back(std::move(r));
    }
    return rows;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<std::vector<WorkerRow>> ResultsReader::workers() {
  try {
    pqxx::read_transaction txn(connection_->pq);
    std::vector<WorkerRow> rows;
    for (const auto& row : txn.exec(R"SQL(
SELECT w.name, w.state, w.device_kind, w.gpu_model, coalesce(w.host, ''),
       extract(epoch FROM w.last_seen)::float8, extract(epoch FROM now() - w.last_seen)::float8,
       (SELECT count(*) FROM results r WHERE r.worker_id = w.id),
       (SELECT count(*) FROM jobs j WHERE j.worker_id = w.id AND j.state = 'leased')
FROM workers w
ORDER BY w.state = 'gone', w.name)SQL")) {
      WorkerRow w;
      w.name = row[0].as<std::string>();
      w.state = row[1].as<std::string>();
      w.device_kind = row[2].as<std::string>();
      w.gpu_model = row[3].as<std::string>();
      w.host = row[4].as<std::string>();
      w.last_seen = row[5].as<double>();
      w.seconds_since_seen = row[6].as<double>();
      w.jobs_done = row[7].as<int64_t>();
      w.jobs_leased = row[8].as<int64_t>();
      rows.push_back(std::move(w));
    }
    return rows;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<std::optional<int64_t>> ResultsReader::last_run_on_branch(const std::string& branch,
                                                                 const std::string& preset,
                                                                 int64_t before_run_id) {
  try {
    pqxx::read_transaction txn(connection_->pq);
    const pqxx::result r = txn.exec_params(
        "SELECT r.id FROM runs r WHERE r.branch = $1 AND r.preset = $2 AND r.id < $3 "
        "AND r.state = 'done' AND EXISTS (SELECT 1 FROM results s WHERE s.run_id = r.id) "
        "ORDER BY r.id DESC LIMIT 1",
        branch, preset, before_run_id);
    if (r.empty()) return std::optional<int64_t>();
    return std::optional<int64_t>(r[0][0].as<int64_t>());
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

}  // namespace kb::cli
