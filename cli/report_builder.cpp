#include "cli/report_builder.h"

#include <algorithm>
#include <ctime>

#include "common/hypothesis_tests.h"

namespace kb::cli {
namespace {

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

ResultsSummary summary_of(const std::vector<HistoryPoint>& points) {
  std::vector<ResultRow> rows;
  for (const HistoryPoint& p : points) {
    ResultRow r;
    r.problem_id = p.problem;
    r.job_state = "done";
    r.gpu_model = p.gpu_model;
    r.status = p.status;
    r.speedup = p.speedup;
    rows.push_back(std::move(r));
  }
  return summarize_results(rows);
}

ReportProblem problem_of(const HistoryPoint& p) {
  ReportProblem r;
  r.problem = p.problem;
  r.gpu_model = p.gpu_model;
  r.preset = p.preset;
  r.status = p.status;
  r.commit_sha = p.commit_sha;
  r.speedup = p.speedup;
  r.speedup_ci_low = p.speedup_ci_low;
  r.speedup_ci_high = p.speedup_ci_high;
  r.custom_median_ms = p.median_ms;
  r.floor_ms = p.floor_ms;
  r.hard_floor_ms = p.hard_floor_ms;
  return r;
}

}  // namespace

std::vector<ChartPoint> chart_points(const std::vector<HistoryPoint>& points,
                                     const std::vector<int64_t>& flagged) {
  std::vector<ChartPoint> out;
  for (const HistoryPoint& p : points) {
    if (p.status != "ok" || !p.median_ms) continue;
    ChartPoint c;
    c.label = p.commit_sha.empty() ? "run " + std::to_string(p.run_id) : p.commit_sha.substr(0, 8);
    c.median_ms = *p.median_ms;
    const MedianInterval mi = median_interval(p.samples_ms);
    c.low_ms = p.samples_ms.empty() ? c.median_ms : mi.low;
    c.high_ms = p.samples_ms.empty() ? c.median_ms : mi.high;
    c.flagged = std::find(flagged.begin(), flagged.end(), p.result_id) != flagged.end();
    out.push_back(std::move(c));
  }
  return out;
}

Result<ReportData> build_report(HistoryReader& reader, const ReportRequest& request) {
  ReportData data;
  data.generated_at = now_iso8601();
  std::string selector;
  std::optional<double> from_s;
  RegressionFilter filter;
  filter.gpu_model = request.gpu_model;
  if (request.run_id) {
    selector = "run:" + std::to_string(*request.run_id);
    data.scope = "run " + std::to_string(*request.run_id);
    filter.run_id = request.run_id;
  } else {
    const size_t dots = request.commits.find("..");
    if (dots == std::string::npos || dots == 0 || dots + 2 >= request.commits.size()) {
      return Status::invalid_argument("--commits wants A..B, not '" + request.commits + "'");
    }
    KB_ASSIGN_OR_RETURN(const std::string a,
                        reader.resolve_commit(request.commits.substr(0, dots)));
    KB_ASSIGN_OR_RETURN(selector, reader.resolve_commit(request.commits.substr(dots + 2)));
    KB_ASSIGN_OR_RETURN(from_s, reader.commit_time(a));
    data.scope = "commits " + a.substr(0, 10) + ".." + selector.substr(0, 10);
    filter.from_s = from_s;
  }
  KB_ASSIGN_OR_RETURN(const std::vector<HistoryPoint> head,
                      reader.results_at(selector, request.gpu_model, "custom"));
  double until_s = 0;
  for (const HistoryPoint& p : head) until_s = std::max(until_s, p.time_s);
  if (!request.run_id) filter.until_s = until_s;
  KB_ASSIGN_OR_RETURN(data.regressions, reader.regressions(filter));
  // Flags on older points of the same series, for the charts.
  RegressionFilter chart_filter;
  chart_filter.gpu_model = request.gpu_model;
  chart_filter.until_s = until_s;
  KB_ASSIGN_OR_RETURN(const std::vector<RegressionRow> chart_flags,
                      reader.regressions(chart_filter));
  std::vector<int64_t> flagged;
  for (const RegressionRow& g : chart_flags) {
    if (g.variant == "custom") flagged.push_back(g.result_id);
  }
  data.summary = summary_of(head);
  for (const HistoryPoint& p : head) {
    ReportProblem problem = problem_of(p);
    HistoryQuery q{p.problem, p.gpu_model, "custom", p.preset, request.history_points, from_s,
                   p.time_s};
    KB_ASSIGN_OR_RETURN(const std::vector<Series> series, reader.history(q));
    if (!series.empty()) problem.history = chart_points(series.front().points, flagged);
    data.problems.push_back(std::move(problem));
  }
  return data;
}

}  // namespace kb::cli
