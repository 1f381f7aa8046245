// Synthetic results for tests of history, compare, regressions and reports: inserts runs, jobs and
// results rows (with raw samples) straight into a migrated test database, many rows per statement.
//
//   std::vector<SyntheticPoint> points = ...;
//   auto ids = kb::testing::insert_synthetic_results(conn, points);  // result ids, input order
//
// Each call makes one run (done; commit of the first point) holding every point; each point gets
// its own job. Medians are computed from the samples unless given. Throws libpqxx exceptions
// (tests only). Header-only.
//
// insert_bulk_history(conn, rows, problems, models) makes a large history in SQL alone
// (generate_series): runs of problems x models results each, one point per series per run and
// commit, one worker per model doing that model's jobs; then VACUUM ANALYZE. For scale tests.
//
// Thread safety: uses `conn` only.
#pragma once

#include <pqxx/pqxx>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/statistics.h"

namespace kb::testing {

struct SyntheticPoint {
  std::string problem = "L1_001";
  std::string gpu_model = "NVIDIA H200";
  std::string preset = "full";
  std::string device_kind = "cuda";
  std::string status = "ok";
  std::string commit_sha;             // "" = NULL
  int64_t commit_time_s = 0;          // seconds since the epoch; 0 = NULL
  std::vector<double> custom_samples_ms, reference_samples_ms;
  double floor_ms = 0;                // 0 = NULL
};

inline std::string sql_double_array(const std::vector<double>& v) {
  std::string out = "'{";
  char buf[40];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.17g", i ? "," : "", v[i]);
    out += buf;
  }
  return out + "}'::float8[]";
}

inline std::string sql_nullable(double v) {
  if (v == 0) return "NULL";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline std::vector<int64_t> insert_synthetic_results(pqxx::connection& conn,
                                                     const std::vector<SyntheticPoint>& points) {
  std::vector<int64_t> ids;
  if (points.empty()) return ids;
  pqxx::work txn(conn, "insert_synthetic_results");
  const SyntheticPoint& first = points.front();
  const std::string commit_time =
      first.commit_time_s ? "to_timestamp(" + std::to_string(first.commit_time_s) + ")" : "NULL";
  const int64_t run_id =
      txn.exec("INSERT INTO runs (submitted_by, problems, preset, gpu_models, commit_sha, "
               "commit_time, state) VALUES ('test', '{}', " + txn.quote(first.preset) + ", '{}', " +
               (first.commit_sha.empty() ? "NULL" : txn.quote(first.commit_sha)) + ", " +
               commit_time + ", 'done') RETURNING id")[0][0]
          .as<int64_t>();
  const std::string run = std::to_string(run_id);
  std::string jobs = "INSERT INTO jobs (run_id, problem_id, preset, seed, state) VALUES ";
  for (size_t i = 0; i < points.size(); ++i) {
    jobs += (i ? ",(" : "(") + run + "," + txn.quote(points[i].problem) + "," +
            txn.quote(points[i].preset) + ",0,'done')";
  }
  const pqxx::result job_ids = txn.exec(jobs + " RETURNING id");
  std::string results =
      "INSERT INTO results (job_id, run_id, attempt, problem_id, preset, gpu_model, device_kind, "
      "status, reference_median_ms, custom_median_ms, speedup, floor_ms, reference_samples_ms, "
      "custom_samples_ms, commit_sha, commit_time, result) VALUES ";
  for (size_t i = 0; i < points.size(); ++i) {
    const SyntheticPoint& p = points[i];
    const double ref = summarize(p.reference_samples_ms).median;
    const double cus = summarize(p.custom_samples_ms).median;
    results += std::string(i ? ",(" : "(") + job_ids[static_cast<int>(i)][0].c_str() + "," + run +
               ",1," + txn.quote(p.problem) + "," + txn.quote(p.preset) + "," +
               txn.quote(p.gpu_model) + "," + txn.quote(p.device_kind) + "," +
               txn.quote(p.status) + "," + sql_nullable(ref) + "," + sql_nullable(cus) + "," +
               sql_nullable(cus > 0 ? ref / cus : 0) + "," + sql_nullable(p.floor_ms) + "," +
               sql_double_array(p.reference_samples_ms) + "," +
               sql_double_array(p.custom_samples_ms) + "," +
               (p.commit_sha.empty() ? "NULL" : txn.quote(p.commit_sha)) + "," +
               (p.commit_time_s ? "to_timestamp(" + std::to_string(p.commit_time_s) + ")"
                                : "NULL") +
               ",'{}')";
  }
  for (const pqxx::row& row : txn.exec(results + " RETURNING id")) ids.push_back(row[0].as<int64_t>());
  txn.commit();
  return ids;
}

inline void insert_bulk_history(pqxx::connection& conn, int64_t rows, int problems, int models) {
  const std::string n = std::to_string(rows), per_run = std::to_string(problems * models);
  const std::string p = std::to_string(problems), m = std::to_string(models);
  pqxx::work txn(conn);
  txn.exec(
      "INSERT INTO workers (id, name, device_kind, gpu_model, state) SELECT g, 'worker' || g, "
      "'cuda', 'GPU' || g, 'idle' FROM generate_series(0, " +
      m + " - 1) g");
  txn.exec(
      "INSERT INTO runs (id, submitted_by, problems, preset, gpu_models, state) "
      "SELECT g, 'bench', '{}', 'full', '{}', 'done' FROM generate_series(1, " +
      n + " / " + per_run + " + 1) g");
  txn.exec(
      "INSERT INTO jobs (id, run_id, problem_id, preset, seed, state) "
      "SELECT g, 1 + (g - 1) / " +
      per_run + ", 'P' || ((g - 1) % " + p + "), 'full', 0, 'done' FROM generate_series(1, " + n +
      ") g");
  txn.exec(
      "INSERT INTO results (job_id, run_id, attempt, worker_id, problem_id, preset, gpu_model, "
      "device_kind, status, reference_median_ms, custom_median_ms, speedup, reference_samples_ms, "
      "custom_samples_ms, commit_sha, commit_time, result) "
      "SELECT g, 1 + (g - 1) / " +
      per_run + ", 1, ((g - 1) / " + p + ") % " + m + ", 'P' || ((g - 1) % " + p +
      "), 'full', 'GPU' || (((g - 1) / " + p + ") % " + m +
      "), 'cuda', 'ok', 2.0, "
      "1.0 + random() * 0.01, 2.0, array_fill(2.0::float8, ARRAY[20]), "
      "array_fill(1.0::float8, ARRAY[20]), md5(((g - 1) / " +
      per_run +
      ")::text), "
      "to_timestamp(1700000000 + ((g - 1) / " +
      per_run +
      ") * 60), '{}' "
      "FROM generate_series(1, " +
      n + ") g");
  txn.exec("SELECT setval(pg_get_serial_sequence('runs', 'id'), (SELECT max(id) FROM runs))");
  txn.exec("SELECT setval(pg_get_serial_sequence('jobs', 'id'), (SELECT max(id) FROM jobs))");
  txn.commit();
  pqxx::nontransaction(conn).exec("VACUUM ANALYZE");
}

}  // namespace kb::testing
