// Gathers `kb report`'s ReportData from the database (through HistoryReader):
//   --run N         the run's results (newest per problem, GPU model and preset), the series
//                   history of each up to that result, and the regressions flagged on the run;
//   --commits A..B  the results at commit B, the series history from A's commit time to B's, and
//                   the regressions flagged on points in that range.
// The summary (correct, fast_p, geomean per GPU model) counts the results found: jobs of the run
// that produced no result do not appear (`kb results RUN` shows those).
//
// Errors: those of HistoryReader; kInvalidArgument for a malformed range.
// Thread safety: uses the given reader only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/history_reader.h"
#include "cli/report_html.h"

namespace kb::cli {

struct ReportRequest {
  std::optional<int64_t> run_id;
  std::string commits;    // "A..B"
  std::string gpu_model;  // "" = every model
  int history_points = 30;
};

Result<ReportData> build_report(HistoryReader& reader, const ReportRequest& request);

// ChartPoints of a series: per point its median and the 95% interval of the median from its raw
// samples; points whose result id is in `flagged` are marked.
std::vector<ChartPoint> chart_points(const std::vector<HistoryPoint>& points,
                                     const std::vector<int64_t>& flagged);

}  // namespace kb::cli
