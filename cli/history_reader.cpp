#include "cli/history_reader.h"

#include <pqxx/pqxx>

#include <cctype>
#include <cstdlib>
#include <limits>

#include "cli/results_reader.h"
#include "coordinator/regression_store.h"

namespace kb::cli {

struct HistoryReader::Connection {
  explicit Connection(const std::string& url) : conn(url) {}
  pqxx::connection conn;
};

namespace {

// The series order (index results_series_history).
constexpr const char* kSeriesTime = "COALESCE(r.commit_time, r.created_at)";

std::optional<double> optional_double(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<double>();
}


Result<std::string> variant_prefix(const std::string& variant) {
  if (variant == "custom" || variant == "reference") return variant;
  return Status::invalid_argument("variant must be custom or reference, not '" + variant + "'");
}

bool is_sha_prefix(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Columns of a point, in the order point_from_row reads them; `v` is the variant's column prefix.
std::string point_columns(const std::string& v) {
  return "r.id, r.run_id, r.problem_id, r.gpu_model, r.preset, COALESCE(r.commit_sha, ''), "
         "COALESCE(r.branch, ''), r.status, extract(epoch FROM " +
         std::string(kSeriesTime) + ")::float8, r.commit_time IS NOT NULL, r." + v +
         "_median_ms, array_to_string(r." + v +
         "_samples_ms, ','), r.speedup, r.speedup_ci_low, r.speedup_ci_high, r.floor_ms, "
         "NULLIF(r.result->>'hard_floor_ms', '')::float8";
}

HistoryPoint point_from_row(const pqxx::row& row) {
  HistoryPoint p;
  p.result_id = row[0].as<int64_t>();
  p.run_id = row[1].as<int64_t>();
  p.problem = row[2].as<std::string>();
  p.gpu_model = row[3].as<std::string>();
  p.preset = row[4].as<std::string>();
  p.commit_sha = row[5].as<std::string>();
  p.branch = row[6].as<std::string>();
  p.status = row[7].as<std::string>();
  p.time_s = row[8].as<double>();
  p.has_commit_time = row[9].as<bool>();
  p.median_ms = optional_double(row[10]);
  p.samples_ms = coord::parse_double_list(row[11].is_null() ? "" : row[11].as<std::string>());
  p.speedup = optional_double(row[12]);
  p.speedup_ci_low = optional_double(row[13]);
  p.speedup_ci_high = optional_double(row[14]);
  p.floor_ms = optional_double(row[15]);
  p.hard_floor_ms = optional_double(row[16]);
  if (p.hard_floor_ms && *p.hard_floor_ms <= 0) p.hard_floor_ms.reset();  // 0: no floor known
  return p;
}

// Series-time bounds as SQL over bound parameters $from and $until (numbers of the query's
// parameter list): an absent bound is passed as NaN, which the SQL reads as "no bound".
std::string time_bounds(int from_param, int until_param, const std::string& time_expr) {
  const std::string from = "$" + std::to_string(from_param), until = "$" + std::to_string(until_param);
  return " AND (" + from + "::float8 = 'NaN' OR " + time_expr + " >= to_timestamp(" + from +
         "::float8)) AND (" + until + "::float8 = 'NaN' OR " + time_expr + " <= to_timestamp(" +
         until + "::float8))";
}

double bound_or_nan(const std::optional<double>& bound) {
  return bound ? *bound : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

HistoryReader::HistoryReader(std::unique_ptr<Connection> connection, std::string url)
    : connection_(std::move(connection)), url_(std::move(url)) {}

HistoryReader::~HistoryReader() = default;

Result<std::unique_ptr<HistoryReader>> HistoryReader::connect(const std::string& url) {
  try {
    auto connection = std::make_unique<Connection>(url);
    return std::unique_ptr<HistoryReader>(new HistoryReader(std::move(connection), redact_url(url)));
  } catch (const std::exception& e) {
    return Status::io_error("cannot connect to " + redact_url(url) + ": " + e.what());
  }
}

Status HistoryReader::query_error(const std::exception& e) const {
  return Status::io_error("query on " + url_ + " failed: " + e.what());
}

Result<std::vector<HistoryPoint>> HistoryReader::series_points(const HistoryQuery& q,
                                                               const std::string& gpu_model,
                                                               const std::string& preset) {
  pqxx::read_transaction txn(connection_->conn, "history");
  // Only fixed SQL text is concatenated (the variant is custom|reference, checked); every value
  // is a bound parameter.
  const std::string sql =
      "SELECT " + point_columns(q.variant) + " FROM results r WHERE r.problem_id = $1"
      " AND r.gpu_model = $2 AND r.preset = $3 AND r.device_kind <> 'sim'" +
      time_bounds(4, 5, kSeriesTime) + " ORDER BY " + kSeriesTime + " DESC, r.id DESC LIMIT $6";
  std::vector<HistoryPoint> points;
  for (const pqxx::row& row : txn.exec_params(sql, q.problem, gpu_model, preset, bound_or_nan(q.from_s),
                                              bound_or_nan(q.until_s), q.last)) {
    points.push_back(point_from_row(row));
  }
  return std::vector<HistoryPoint>(points.rbegin(), points.rend());
}

Result<std::vector<Series>> HistoryReader::history(const HistoryQuery& q) {
  KB_TRY(variant_prefix(q.variant).status());
  if (q.last <= 0) return Status::invalid_argument("--last must be positive");
  try {
    std::vector<Series> series;
    std::vector<std::pair<std::string, std::string>> keys;
    if (!q.gpu_model.empty() && !q.preset.empty()) {
      keys.emplace_back(q.gpu_model, q.preset);
    } else {
      pqxx::read_transaction txn(connection_->conn, "history_series");
      const char* sql =
          "SELECT DISTINCT gpu_model, preset FROM results WHERE problem_id = $1 AND "
          "device_kind <> 'sim' AND ($2 = '' OR gpu_model = $2) AND ($3 = '' OR preset = $3) "
          "ORDER BY 1, 2";
      for (const pqxx::row& row : txn.exec_params(sql, q.problem, q.gpu_model, q.preset)) {
        keys.emplace_back(row[0].as<std::string>(), row[1].as<std::string>());
      }
    }
    for (const auto& [gpu, preset] : keys) {
      KB_ASSIGN_OR_RETURN(auto points, series_points(q, gpu, preset));
      if (points.empty()) continue;
      series.push_back({q.problem, gpu, preset, q.variant, std::move(points)});
    }
    return series;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<std::string> HistoryReader::resolve_commit(const std::string& prefix) {
  if (!is_sha_prefix(prefix)) return Status::invalid_argument("not a commit SHA: '" + prefix + "'");
  try {
    pqxx::read_transaction txn(connection_->conn, "resolve_commit");
    const pqxx::result r = txn.exec_params(
        "SELECT DISTINCT commit_sha FROM results WHERE commit_sha LIKE $1 ORDER BY 1 LIMIT 3",
        prefix + "%");
    if (r.empty()) return Status::not_found("no results for commit " + prefix);
    for (const pqxx::row& row : r) {
      if (row[0].as<std::string>() == prefix) return prefix;
    }
    if (r.size() > 1) {
      return Status::invalid_argument("commit prefix " + prefix + " is ambiguous (" +
                                      r[0][0].as<std::string>() + ", " +
                                      r[1][0].as<std::string>() + ", ...)");
    }
    return r[0][0].as<std::string>();
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<std::vector<HistoryPoint>> HistoryReader::results_at(const std::string& selector,
                                                            const std::string& gpu_model,
                                                            const std::string& variant) {
  KB_TRY(variant_prefix(variant).status());
  // Exactly one of run / sha selects the results; both are bound parameters. (The SHA comes
  // back from the database, so it is data, never SQL: a stored "abc1' OR ''='" once turned
  // `kb compare` into a comparison of the head run with itself.)
  int64_t run = 0;
  std::string sha;
  if (selector.rfind("run:", 0) == 0) {
    char* end = nullptr;
    run = std::strtoll(selector.c_str() + 4, &end, 10);
    if (end == selector.c_str() + 4 || *end || run <= 0) {
      return Status::invalid_argument("bad run selector '" + selector + "' (run:N)");
    }
  } else {
    KB_ASSIGN_OR_RETURN(sha, resolve_commit(selector));
  }
  try {
    pqxx::read_transaction txn(connection_->conn, "results_at");
    const std::string sql = "SELECT DISTINCT ON (r.problem_id, r.gpu_model, r.preset) " +
                            point_columns(variant) +
                            " FROM results r WHERE (CASE WHEN $1::bigint > 0 THEN r.run_id = $1"
                            " ELSE r.commit_sha = $2 END) AND ($3 = '' OR r.gpu_model = $3)"
                            " AND r.device_kind <> 'sim' ORDER BY r.problem_id, r.gpu_model, "
                            "r.preset, r.created_at DESC, r.id DESC";
    std::vector<HistoryPoint> points;
    for (const pqxx::row& row : txn.exec_params(sql, run, sha, gpu_model)) {
      points.push_back(point_from_row(row));
    }
    if (points.empty()) return Status::not_found("no results for " + selector);
    return points;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<double> HistoryReader::commit_time(const std::string& sha) {
  try {
    pqxx::read_transaction txn(connection_->conn, "commit_time");
    const pqxx::result r = txn.exec_params(
        "SELECT extract(epoch FROM min(" + std::string(kSeriesTime) +
        "))::float8 FROM results r WHERE r.commit_sha = $1", sha);
    if (r[0][0].is_null()) return Status::not_found("no results for commit " + sha);
    return r[0][0].as<double>();
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

Result<std::vector<RegressionRow>> HistoryReader::regressions(const RegressionFilter& f) {
  try {
    pqxx::read_transaction txn(connection_->conn, "regressions");
    std::string sql =
        "SELECT g.id, g.result_id, r.run_id, g.problem_id, g.gpu_model, g.variant, g.preset, "
        "COALESCE(g.commit_sha, ''), g.state, g.median_ms, g.baseline_ms, g.ratio, g.bound, "
        "g.p_value, g.adjusted_p, g.slow_points, extract(epoch FROM g.created_at)::float8, "
        "extract(epoch FROM g.updated_at)::float8 "
        "FROM regressions g JOIN results r ON r.id = g.result_id "
        "WHERE g.created_at >= COALESCE(NULLIF($1, '')::timestamptz, '-infinity') AND ($2 = '' OR "
        "g.gpu_model = $2) "
        "AND ($3::bigint = 0 OR r.run_id = $3) AND ($6 = '' OR g.problem_id = $6)" +
        time_bounds(4, 5, kSeriesTime) + " ORDER BY g.created_at DESC, g.id DESC";
    std::vector<RegressionRow> rows;
    for (const pqxx::row& row :
         txn.exec_params(sql, f.since, f.gpu_model, f.run_id.value_or(0), bound_or_nan(f.from_s),
                         bound_or_nan(f.until_s), f.problem)) {
      RegressionRow g;
      g.id = row[0].as<int64_t>();
      g.result_id = row[1].as<int64_t>();
      g.run_id = row[2].as<int64_t>();
      g.problem = row[3].as<std::string>();
      g.gpu_model = row[4].as<std::string>();
      g.variant = row[5].as<std::string>();
      g.preset = row[6].as<std::string>();
      g.commit_sha = row[7].as<std::string>();
      g.state = row[8].as<std::string>();
      g.median_ms = row[9].as<double>();
      g.baseline_ms = row[10].as<double>();
      g.ratio = row[11].as<double>();
      g.bound_ms = row[12].as<double>();
      g.p_value = row[13].as<double>();
      g.adjusted_p = row[14].as<double>();
      g.slow_points = row[15].as<int>();
      g.created_s = row[16].as<double>();
      g.updated_s = row[17].as<double>();
      rows.push_back(std::move(g));
    }
    return rows;
  } catch (const std::exception& e) {
    return query_error(e);
  }
}

}  // namespace kb::cli
