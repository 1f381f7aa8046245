// `kb report`'s outputs from one ReportData: a self-contained HTML page (inline CSS and inline SVG
// drawn here; no JavaScript, no external URL: it opens offline), a JSON document and a CSV table.
//
// The page holds: the summary per GPU model (jobs, correct, fast_1, fast_1.2, geomean speedup);
// speedup bars and floor-fraction bars per GPU model; one history chart per problem series
// (svg_chart.h); and the flagged regressions table.
//
// Two floors, labelled apart: the floor shown as "floor" is the hard physical floor of the allowed
// math (hard_floor_ms: peak DRAM bandwidth and 3xTF32 tensor cores, common/physical_floor.h), the
// one verification uses for `implausible`, so an honest kernel's fraction never exceeds 1; the
// fp32-FMA roofline (floor_ms) is kept as its own column, where a tensor-core kernel may read
// above 1 (L1_003 reads 1.02).
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cli/history_reader.h"
#include "cli/results_summary.h"
#include "cli/svg_chart.h"

namespace kb::cli {

struct ReportProblem {
  std::string problem, gpu_model, preset, status, commit_sha;
  std::optional<double> speedup, speedup_ci_low, speedup_ci_high, custom_median_ms;
  std::optional<double> floor_ms;       // fp32-FMA roofline (measured bandwidth)
  std::optional<double> hard_floor_ms;  // hard floor of the allowed math (physical_floor.h)
  std::vector<ChartPoint> history;  // oldest first
  std::optional<double> floor_fraction() const;     // hard_floor_ms / custom median (≤ 1)
  std::optional<double> roofline_fraction() const;  // floor_ms / custom median
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
// speedup_ci_low,speedup_ci_high,floor_ms,roofline_fraction,hard_floor_ms,floor_fraction.
std::string report_csv(const ReportData& data);

// "&<>\"'" escaped, for text and attribute values.
std::string html_escape(const std::string& text);
// One number printf-formatted ("%.3f"), and "–" for an absent one: the figures of the report, the
// chart and the dashboard's pages.
std::string format_number(const char* format, double v);
std::string format_optional(const std::optional<double>& v, const char* format);

}  // namespace kb::cli
