// `kb report`'s outputs from one ReportData: a self-contained HTML page (inline CSS and inline SVG
// drawn here; no JavaScript, no external URL: it opens offline), a JSON document and a CSV table.
//
// The page holds: the summary per GPU model (jobs, correct, fast_1, fast_1.2, geomean speedup);
// speedup bars and roofline-fraction bars (floor_ms / custom median: 1 = at the roofline bound)
// per GPU model; one history chart per problem series (median per point with its 95% interval as
// a band, flagged points in red); and the flagged regressions table.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cli/history_reader.h"
#include "cli/results_summary.h"

namespace kb::cli {

struct ChartPoint {
  std::string label;  // short commit SHA or run
  double median_ms = 0, low_ms = 0, high_ms = 0;
  bool flagged = false;
};

struct ReportProblem {
  std::string problem, gpu_model, preset, status, commit_sha;
  std::optional<double> speedup, speedup_ci_low, speedup_ci_high, custom_median_ms, floor_ms;
  std::vector<ChartPoint> history;  // oldest first
  std::optional<double> roofline_fraction() const;
};

struct ReportData {
  std::string title = "kbfleet report";
  std::string scope;         // "run 12", "commits abc..def"
  std::string generated_at;  // ISO 8601
  ResultsSummary summary;
  std::vector<ReportProblem> problems;  // by problem, then GPU model
  std::vector<RegressionRow> regressions;
};

std::string render_report_html(const ReportData& data);
nlohmann::json report_json(const ReportData& data);
// One line per problem result: problem,gpu_model,preset,status,commit,custom_median_ms,speedup,
// speedup_ci_low,speedup_ci_high,floor_ms,roofline_fraction.
std::string report_csv(const ReportData& data);

// "&<>\"'" escaped, for text and attribute values.
std::string html_escape(const std::string& text);

}  // namespace kb::cli
