#include "coordinator/regression_store.h"

#include <cstdlib>
#include <map>
#include <string>

#include "coordinator/pg_status.h"

namespace kb::coord {
namespace {

constexpr int kVariantCount = 2;
constexpr const char* kVariants[kVariantCount] = {"custom", "reference"};

struct NewPoint {
  int64_t id = 0;
  std::string problem, gpu_model, preset, commit_sha;
  double median_ms[kVariantCount] = {0, 0};
  std::vector<double> history_ms[kVariantCount];  // oldest first
};

struct OpenFlag {
  int64_t id = 0;
  int64_t point_id = 0;  // the new point that moves it
  int variant = 0;
  FlagProgress progress;
};

std::string sql_id_array(const std::vector<int64_t>& ids) {
  std::string out = "{";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "}";
}


int variant_index(const std::string& name) { return name == "reference" ? 1 : 0; }

// The new points in series order, each with its last `history_points` ok points before it.
constexpr const char* kLoadPoints = R"sql(
SELECT n.id, n.problem_id, n.gpu_model, n.preset, COALESCE(n.commit_sha, ''),
       COALESCE(n.custom_median_ms, 0), COALESCE(n.reference_median_ms, 0),
       COALESCE(h.custom_hist, ''), COALESCE(h.reference_hist, '')
FROM results n
CROSS JOIN LATERAL (
  SELECT array_to_string(array_agg(p.custom_median_ms ORDER BY p.k, p.id), ',') AS custom_hist,
         array_to_string(array_agg(p.reference_median_ms ORDER BY p.k, p.id), ',') AS reference_hist
  FROM (SELECT COALESCE(r.commit_time, r.created_at) AS k, r.id, r.custom_median_ms,
               r.reference_median_ms
        FROM results r
        WHERE r.problem_id = n.problem_id AND r.gpu_model = n.gpu_model AND r.preset = n.preset
          AND (COALESCE(r.commit_time, r.created_at), r.id)
              < (COALESCE(n.commit_time, n.created_at), n.id)
          AND r.status = 'ok' AND r.device_kind <> 'sim'
        ORDER BY COALESCE(r.commit_time, r.created_at) DESC, r.id DESC
        LIMIT $2) p) h
WHERE n.id = ANY($1::bigint[]) AND n.status = 'ok' AND n.device_kind <> 'sim'
ORDER BY COALESCE(n.commit_time, n.created_at), n.id)sql";

// Open flags whose flagged point precedes a new point of their series and that this new point has
// not moved yet.
constexpr const char* kLoadOpenFlags = R"sql(
SELECT g.id, n.id, g.variant, g.state, g.slow_bound_ms, g.slow_points
FROM results n
JOIN regressions g ON g.problem_id = n.problem_id AND g.gpu_model = n.gpu_model
                  AND g.preset = n.preset AND g.state IN ('flagged', 'confirmed')
JOIN results f ON f.id = g.result_id
WHERE n.id = ANY($1::bigint[]) AND n.id > g.last_result_id
  AND (COALESCE(f.commit_time, f.created_at), f.id) < (COALESCE(n.commit_time, n.created_at), n.id)
ORDER BY g.id)sql";

constexpr const char* kInsertFlag = R"sql(
INSERT INTO regressions (result_id, problem_id, gpu_model, variant, preset, commit_sha, median_ms,
                         baseline_ms, ratio, bound, slow_bound_ms, p_value, adjusted_p,
                         history_points, last_result_id)
VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, $8, $9, $10, $11, $12, $13, $14, $1)
ON CONFLICT (result_id, variant) DO NOTHING)sql";

constexpr const char* kUpdateFlag = R"sql(
UPDATE regressions SET state = $2, slow_points = $3, last_result_id = $4, updated_at = now()
WHERE id = $1)sql";

std::vector<NewPoint> load_points(pqxx::work& txn, const std::vector<int64_t>& ids,
                                  int history_points) {
  std::vector<NewPoint> points;
  for (const pqxx::row& row : txn.exec_params(kLoadPoints, sql_id_array(ids), history_points)) {
    NewPoint p;
    p.id = row[0].as<int64_t>();
    p.problem = row[1].as<std::string>();
    p.gpu_model = row[2].as<std::string>();
    p.preset = row[3].as<std::string>();
    p.commit_sha = row[4].as<std::string>();
    p.median_ms[0] = row[5].as<double>();
    p.median_ms[1] = row[6].as<double>();
    p.history_ms[0] = parse_double_list(row[7].as<std::string>());
    p.history_ms[1] = parse_double_list(row[8].as<std::string>());
    points.push_back(std::move(p));
  }
  return points;
}

std::vector<OpenFlag> load_open_flags(pqxx::work& txn, const std::vector<int64_t>& ids) {
  std::vector<OpenFlag> flags;
  for (const pqxx::row& row : txn.exec_params(kLoadOpenFlags, sql_id_array(ids))) {
    OpenFlag f;
    f.id = row[0].as<int64_t>();
    f.point_id = row[1].as<int64_t>();
    f.variant = variant_index(row[2].as<std::string>());
    f.progress.state = flag_state_from_string(row[3].as<std::string>());
    f.progress.slow_bound_ms = row[4].as<double>();
    f.progress.slow_points = row[5].as<int>();
    flags.push_back(f);
  }
  return flags;
}

// Moves the open flags on, point by point in series order; returns for each (point, variant)
// whether a still-unconfirmed flag holds it (such points are not checked for a new flag).
std::map<std::pair<int64_t, int>, bool> advance_open_flags(pqxx::work& txn,
                                                           const std::vector<NewPoint>& points,
                                                           const std::vector<OpenFlag>& flags,
                                                           const RegressionConfig& config) {
  std::map<int64_t, FlagProgress> progress;  // flag id -> current state
  std::map<std::pair<int64_t, int>, bool> held;
  for (const NewPoint& p : points) {
    for (const OpenFlag& f : flags) {
      if (f.point_id != p.id || p.median_ms[f.variant] <= 0) continue;
      auto [it, inserted] = progress.try_emplace(f.id, f.progress);
      if (it->second.state == FlagState::kCleared) continue;
      const bool was_flagged = it->second.state == FlagState::kFlagged;
      it->second = advance_flag(it->second, p.median_ms[f.variant], config);
      txn.exec_params(kUpdateFlag, f.id, to_string(it->second.state), it->second.slow_points,
                      p.id);
      if (was_flagged && it->second.state != FlagState::kCleared) held[{p.id, f.variant}] = true;
    }
  }
  return held;
}

}  // namespace

Status detect_regressions(pqxx::connection& conn, const std::vector<int64_t>& result_ids,
                          const RegressionConfig& config, int* flagged) {
  if (flagged) *flagged = 0;
  if (result_ids.empty()) return Status::ok();
  try {
    pqxx::work txn(conn, "detect_regressions");
    const std::vector<NewPoint> points = load_points(txn, result_ids, config.history_points);
    const auto held = advance_open_flags(txn, points, load_open_flags(txn, result_ids), config);
    std::vector<SeriesCheck> checks;
    std::vector<std::pair<const NewPoint*, int>> owners;
    for (const NewPoint& p : points) {
      for (int v = 0; v < kVariantCount; ++v) {
        if (p.median_ms[v] <= 0 || held.count({p.id, v})) continue;
        checks.push_back({p.history_ms[v], p.median_ms[v]});
        owners.emplace_back(&p, v);
      }
    }
    const std::vector<PointDecision> decisions = check_points(checks, config);
    int inserted = 0;
    for (size_t i = 0; i < decisions.size(); ++i) {
      const PointDecision& d = decisions[i];
      if (!d.flagged) continue;
      const NewPoint& p = *owners[i].first;
      const int v = owners[i].second;
      const pqxx::result r = txn.exec_params(
          kInsertFlag, p.id, p.problem, p.gpu_model, kVariants[v], p.preset, p.commit_sha,
          p.median_ms[v], d.baseline_ms, d.ratio, d.bound_ms, slow_bound_ms(d, config), d.p_value,
          d.adjusted_p, static_cast<int>(checks[i].history_ms.size()));
      inserted += static_cast<int>(r.affected_rows());
    }
    txn.commit();
    if (flagged) *flagged = inserted;
    return Status::ok();
  } catch (...) {
    return current_pg_status("detect_regressions");
  }
}

Result<int64_t> count_open_regressions(pqxx::connection& conn) {
  try {
    pqxx::read_transaction txn(conn, "count_open_regressions");
    return txn.exec("SELECT count(*) FROM regressions WHERE state IN ('flagged', 'confirmed')")[0][0]
        .as<int64_t>();
  } catch (...) {
    return current_pg_status("count_open_regressions");
  }
}

std::vector<double> parse_double_list(const std::string& csv) {
  std::vector<double> values;
  const char* p = csv.c_str();
  while (*p) {
    char* end = nullptr;
    values.push_back(std::strtod(p, &end));
    if (end == p) break;
    p = *end == ',' ? end + 1 : end;
  }
  return values;
}

}  // namespace kb::coord
