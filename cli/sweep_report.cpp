#include "cli/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/problem_spec.h"

namespace kb::cli {

std::vector<SweepVerdict> sweep_verdicts(const std::vector<SweepRow>& rows) {
  std::vector<SweepVerdict> out;
  for (const SweepRow& row : rows) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const SweepVerdict& v) { return v.problem_id == row.problem_id; });
    if (it == out.end()) {
      SweepVerdict v;
      v.problem_id = row.problem_id;
      out.push_back(v);
      it = out.end() - 1;
    }
    ++it->shapes;
    const double s = row.result.speedup.speedup;
    if (row.result.status != JobStatus::kOk || !(s > 0)) {
      ++it->failed;
      continue;
    }
    if (it->worst == 0 || s < it->worst) {
      it->worst = s;
      it->worst_dims = row.dims;
    }
    if (row.shape.flop_share >= kSweepLargeShare) {
      ++it->large_shapes;
      if (it->worst_large == 0 || s < it->worst_large) it->worst_large = s;
    }
  }
  for (SweepVerdict& v : out) {
    v.meets_goal = v.failed == 0 && v.worst >= kSweepMinSpeedup &&
                   (v.large_shapes == 0 || v.worst_large >= kSweepLargeMinSpeedup);
  }
  return out;
}

std::string sweep_text(const std::vector<SweepRow>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-7s %-44s %7s %-12s %9s %9s %8s\n", "problem", "dims", "flops",
                "status", "ref_ms", "cust_ms", "speedup");
  out += line;
  for (const SweepRow& r : rows) {
    std::snprintf(line, sizeof line, "%-7s %-44s %6.1f%% %-12s %9.4f %9.4f %7.3fx\n",
                  r.problem_id.c_str(), r.dims.c_str(), 100 * r.shape.flop_share,
                  to_string(r.result.status).c_str(), r.result.reference.summary.median,
                  r.result.custom.summary.median, r.result.speedup.speedup);
    out += line;
  }
  const std::vector<SweepVerdict> verdicts = sweep_verdicts(rows);
  std::snprintf(line, sizeof line, "\n%-7s %6s %6s %8s %8s  %-5s %s\n", "problem", "shapes",
                "failed", "worst", "worst25", "goal", "worst at");
  out += line;
  int meets = 0;
  for (const SweepVerdict& v : verdicts) {
    meets += v.meets_goal;
    std::snprintf(line, sizeof line, "%-7s %6d %6d %7.3fx %7.3fx  %-5s %s\n", v.problem_id.c_str(),
                  v.shapes, v.failed, v.worst, v.worst_large, v.meets_goal ? "met" : "MISS",
                  v.worst_dims.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line,
                "\n%d of %zu problems meet the sweep goal (custom >= %.1fx the reference at every "
                "shape, >= %.1fx at shapes with >= %.0f%% of the preset's FLOPs)\n",
                meets, verdicts.size(), kSweepMinSpeedup, kSweepLargeMinSpeedup,
                100 * kSweepLargeShare);
  out += line;
  return out;
}

nlohmann::json sweep_rows_to_json(const std::vector<SweepRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const SweepRow& row : rows) {
    out.push_back({{"problem_id", row.problem_id},
                   {"dims", row.dims},
                   {"flop_share", row.shape.flop_share},
                   {"large", row.shape.large},
                   {"result", to_json(row.result)}});
  }
  return out;
}

Result<std::vector<SweepRow>> sweep_rows_from_json(const nlohmann::json& rows) {
  if (!rows.is_array()) return Status::invalid_argument("sweep: no array of rows");
  std::vector<SweepRow> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& j = rows[i];
    const std::string where = "sweep row " + std::to_string(i);
    if (!j.is_object() || !j.contains("problem_id") || !j.contains("dims") ||
        !j.contains("flop_share") || !j.contains("result")) {
      return Status::invalid_argument(where + ": needs problem_id, dims, flop_share and result");
    }
    SweepRow row;
    try {
      row.problem_id = j.at("problem_id").get<std::string>();
      row.dims = j.at("dims").get<std::string>();
      row.shape.flop_share = j.at("flop_share").get<double>();
      row.shape.large = j.value("large", false);
      row.result = job_result_from_json(j.at("result"));
    } catch (const nlohmann::json::exception& e) {
      return Status::invalid_argument(where + ": " + e.what());
    }
    Result<Dims> dims = parse_dims(row.dims);
    if (!dims.is_ok()) return Status::invalid_argument(where + ": " + dims.status().message());
    row.shape.dims = std::move(dims).value();
    out.push_back(std::move(row));
  }
  return out;
}

namespace {

std::set<std::string> dims_of(const std::vector<SweepRow>& rows, const std::string& id) {
  std::set<std::string> out;
  for (const SweepRow& r : rows)
    if (r.problem_id == id) out.insert(r.dims);
  return out;
}

// The ok row of problem `id` furthest under its threshold (0.9x, or 1.2x at large shapes): the
// shape that decides a missed goal. Null when none is ok.
const SweepRow* deciding_row(const std::vector<SweepRow>& rows, const std::string& id) {
  const SweepRow* out = nullptr;
  double lowest = 0;
  for (const SweepRow& r : rows) {
    const double s = r.result.speedup.speedup;
    if (r.problem_id != id || r.result.status != JobStatus::kOk || !(s > 0)) continue;
    const double margin =
        s / (r.shape.flop_share >= kSweepLargeShare ? kSweepLargeMinSpeedup : kSweepMinSpeedup);
    if (out == nullptr || margin < lowest) out = &r, lowest = margin;
  }
  return out;
}

const SweepRow* row_at(const std::vector<SweepRow>& rows, const std::string& id,
                       const std::string& dims) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const SweepRow& r) {
    return r.problem_id == id && r.dims == dims && r.result.status == JobStatus::kOk;
  });
  return it == rows.end() ? nullptr : &*it;
}

// "the reference moved" / "the custom moved" / "both moved": which median changed between the
// sweeps at one shape. A side moved when its median changed by more than kSweepMoved and by more
// than twice the other side's change (in log terms).
constexpr double kSweepMoved = 0.15;
std::string which_moved(const SweepRow& b, const SweepRow& a) {
  const auto change = [](double before, double after) {
    return before > 0 && after > 0 ? std::abs(std::log(after / before)) : 0.0;
  };
  const double ref = change(b.result.reference.summary.median, a.result.reference.summary.median);
  const double cust = change(b.result.custom.summary.median, a.result.custom.summary.median);
  const double moved = std::log1p(kSweepMoved);
  if (ref > moved && ref > 2 * cust) return "the reference moved";
  if (cust > moved && cust > 2 * ref) return "the custom moved";
  return "both moved";
}

std::string speedup_cell(const SweepVerdict* v, double SweepVerdict::*field) {
  if (v == nullptr) return "-";
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.3fx", v->*field);
  return v->*field > 0 ? cell : "-";
}

}  // namespace

std::string sweep_comparison_text(const std::vector<SweepRow>& before,
                                  const std::vector<SweepRow>& after) {
  const std::vector<SweepVerdict> was = sweep_verdicts(before), now = sweep_verdicts(after);
  std::vector<std::string> ids;
  for (const auto* list : {&was, &now})
    for (const SweepVerdict& v : *list)
      if (std::find(ids.begin(), ids.end(), v.problem_id) == ids.end()) ids.push_back(v.problem_id);
  const auto find = [](const std::vector<SweepVerdict>& list, const std::string& id) {
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const SweepVerdict& v) { return v.problem_id == id; });
    return it == list.end() ? nullptr : &*it;
  };
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-7s %13s %19s %19s %-12s %s\n", "problem", "shapes", "worst",
                "worst25", "goal", "shapes drawn");
  out += line;
  int met_before = 0, met_after = 0;
  for (const std::string& id : ids) {
    const SweepVerdict *b = find(was, id), *a = find(now, id);
    met_before += b != nullptr && b->meets_goal;
    met_after += a != nullptr && a->meets_goal;
    const auto goal = [](const SweepVerdict* v) -> std::string {
      return v == nullptr ? "-" : (v->meets_goal ? "met" : "MISS");
    };
    const std::string shapes =
        std::to_string(b ? b->shapes : 0) + " -> " + std::to_string(a ? a->shapes : 0);
    const std::string worst =
        speedup_cell(b, &SweepVerdict::worst) + " -> " + speedup_cell(a, &SweepVerdict::worst);
    const std::string worst25 = speedup_cell(b, &SweepVerdict::worst_large) + " -> " +
                                speedup_cell(a, &SweepVerdict::worst_large);
    const bool same = dims_of(before, id) == dims_of(after, id);
    std::snprintf(line, sizeof line, "%-7s %13s %19s %19s %-12s %s\n", id.c_str(), shapes.c_str(),
                  worst.c_str(), worst25.c_str(), (goal(b) + " -> " + goal(a)).c_str(),
                  same ? "the same" : "different");
    out += line;
  }
  std::snprintf(line, sizeof line, "\n%d -> %d of %zu problems meet the sweep goal\n", met_before,
                met_after, ids.size());
  out += line;
  // Where a goal flipped over the same shapes: the deciding shape of the side that missed, its
  // medians in both sweeps, and which of them moved (a reference's spread between machines or
  // leases can flip a verdict at shapes of tens of microseconds with the custom unchanged).
  std::string flips;
  for (const std::string& id : ids) {
    const SweepVerdict *b = find(was, id), *a = find(now, id);
    if (b == nullptr || a == nullptr || b->meets_goal == a->meets_goal ||
        dims_of(before, id) != dims_of(after, id))
      continue;
    const SweepVerdict* missing = b->meets_goal ? a : b;
    if (missing->failed > 0) {  // a job that did not end ok decides it, whatever the speeds
      std::snprintf(line, sizeof line, "%-7s %s: %d shape(s) did not end ok\n", id.c_str(),
                    b->meets_goal ? "met -> MISS" : "MISS -> met", missing->failed);
      flips += line;
      continue;
    }
    const SweepRow* missed = deciding_row(b->meets_goal ? after : before, id);
    if (missed == nullptr) continue;
    const SweepRow* rb = row_at(before, id, missed->dims);
    const SweepRow* ra = row_at(after, id, missed->dims);
    if (rb == nullptr || ra == nullptr) continue;
    std::snprintf(line, sizeof line,
                  "%-7s %s at %s: reference %.4f -> %.4f ms, custom %.4f -> %.4f ms (%.3fx -> "
                  "%.3fx): %s\n",
                  id.c_str(), b->meets_goal ? "met -> MISS" : "MISS -> met", missed->dims.c_str(),
                  rb->result.reference.summary.median, ra->result.reference.summary.median,
                  rb->result.custom.summary.median, ra->result.custom.summary.median,
                  rb->result.speedup.speedup, ra->result.speedup.speedup,
                  which_moved(*rb, *ra).c_str());
    flips += line;
  }
  if (!flips.empty())
    out += "\nGoals that flipped, at the shape that decides them (medians):\n" + flips;
  return out;
}

}  // namespace kb::cli
