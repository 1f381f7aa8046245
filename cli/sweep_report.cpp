#include "cli/sweep_report.h"

#include <algorithm>
#include <cstdio>

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

}  // namespace kb::cli
