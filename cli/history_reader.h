// Read-only queries behind `kb history`, `kb compare`, `kb regressions` and `kb report` over
// schemas/0001_initial.sql and 0002_history.sql. Every query runs in a READ ONLY transaction
// (pqxx::read_transaction) on a connection with the read-only role's URL.
//
// A series is (problem, GPU model, variant, preset); its points are results on real devices
// (device_kind not 'sim') ordered by COALESCE(commit_time, created_at), then id — the order of the
// index results_series_history, which keeps one series' last N points an index scan however many
// results there are (1,000,000 rows: see tests/unit/cli/history_scale_test.cpp).
// A selector names a set of results: "run:N" (run N's results) or a commit SHA or unique prefix.
//
// Errors (Status): kIoError when the database cannot be reached or a query fails (the message
// carries the URL without its password), kNotFound for an unknown commit / run, kInvalidArgument
// for an ambiguous prefix, a malformed selector or variant.
// Times are seconds since the Unix epoch.
//
// Thread safety: one HistoryReader per thread (it owns a libpqxx connection).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb::cli {

struct HistoryQuery {
  std::string problem;
  std::string gpu_model;         // "" = every model (one series each)
  std::string variant = "custom";  // custom | reference
  std::string preset;            // "" = every preset
  int last = 30;                 // points per series
  std::optional<double> from_s, until_s;  // series-time bounds, inclusive
};

struct HistoryPoint {
  int64_t result_id = 0, run_id = 0;
  std::string problem, gpu_model, preset, commit_sha, branch, status;
  double time_s = 0;       // commit time, else when the result arrived
  bool has_commit_time = false;
  std::optional<double> median_ms;  // of the variant
  std::vector<double> samples_ms;   // of the variant
  std::optional<double> speedup, speedup_ci_low, speedup_ci_high;
  std::optional<double> floor_ms;       // fp32-FMA roofline (results.floor_ms)
  std::optional<double> hard_floor_ms;  // the hard floor verification used (result JSON)
};

// One series' points, oldest first.
struct Series {
  std::string problem, gpu_model, preset, variant;
  std::vector<HistoryPoint> points;
};

struct RegressionRow {
  int64_t id = 0, result_id = 0, run_id = 0;
  std::string problem, gpu_model, variant, preset, commit_sha, state;
  double median_ms = 0, baseline_ms = 0, ratio = 0, bound_ms = 0, p_value = 1, adjusted_p = 1;
  int slow_points = 0;
  double created_s = 0, updated_s = 0;
};

struct RegressionFilter {
  std::string since;      // a date/time PostgreSQL understands ("2024-06-01"); "" = all
  std::string gpu_model;  // "" = every model
  std::string problem;    // "" = every problem
  std::optional<int64_t> run_id;
  std::optional<double> from_s, until_s;  // the flagged point's series time
};

class HistoryReader {
 public:
  static Result<std::unique_ptr<HistoryReader>> connect(const std::string& url);
  ~HistoryReader();

  // The query's series (one per GPU model and preset found), each with its last `last` points.
  Result<std::vector<Series>> history(const HistoryQuery& query);
  // The full SHA for a SHA or unique prefix.
  Result<std::string> resolve_commit(const std::string& prefix);
  // The newest result per (problem, GPU model, preset) of a selector ("run:N" or a commit), with
  // the variant's samples; optionally of one GPU model.
  Result<std::vector<HistoryPoint>> results_at(const std::string& selector,
                                               const std::string& gpu_model,
                                               const std::string& variant);
  // The series time of a commit (its earliest result), kNotFound when it has none.
  Result<double> commit_time(const std::string& sha);
  Result<std::vector<RegressionRow>> regressions(const RegressionFilter& filter);

 private:
  struct Connection;
  HistoryReader(std::unique_ptr<Connection> connection, std::string url);
  Result<std::vector<HistoryPoint>> series_points(const HistoryQuery& query,
                                                  const std::string& gpu_model,
                                                  const std::string& preset);
  Status query_error(const std::exception& e) const;

  std::unique_ptr<Connection> connection_;
  std::string url_;  // without the password
};

}  // namespace kb::cli
