// The dashboard's HTML pages (coordinator/dashboard.h serves them): server-rendered, inline CSS
// and inline SVG, no script, no external URL. Every value from the database is escaped
// (cli::html_escape) before it reaches the page. The numbers come from the structures that
// `kb runs/results/history/regressions/workers/compare` print (cli/ kb_views), so a page and its
// JSON twin (?format=json) show the same figures.
//
//   runs_page         state, progress, commit, GPU models, fast_1 and geomean per run
//   run_page          a run's jobs: status, error, times, speedup with CI, worker; summary per
//   model history_page      a problem's series per GPU model and variant: chart (svg_chart.h) with
//   the
//                     CI band, flagged points, the ±5% median band; regressions with commit ranges
//   regressions_page  open (flagged, confirmed) and cleared
//   workers_page      state, GPU model, jobs, last seen, quarantine
//   compare_page      the `kb compare` table, with a form for BASE and HEAD
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "cli/compare_table.h"
#include "cli/history_reader.h"
#include "cli/history_views.h"
#include "cli/results_reader.h"
#include "cli/results_summary.h"

namespace kb::coord {

struct RunWithSummary {
  cli::RunRow run;
  cli::ResultsSummary summary;
};

std::string runs_page(const std::vector<RunWithSummary>& runs);
std::string run_page(const cli::RunStatus& status, const std::vector<cli::ResultRow>& rows,
                     const cli::ResultsSummary& summary);
std::string history_page(const cli::HistoryQuery& query, const std::vector<cli::Series>& series,
                         const std::vector<cli::RegressionRow>& regressions);
std::string regressions_page(const std::vector<cli::RegressionRow>& regressions);
std::string workers_page(const std::vector<cli::WorkerRow>& workers);
// `view` is null when no comparison was asked for (the form alone).
std::string compare_page(const cli::CompareRequest& request, const cli::CompareView* view);
std::string error_page(int status, const std::string& message);

// A query-string value escaped for a URL (RFC 3986 unreserved characters kept).
std::string url_encode(const std::string& text);

}  // namespace kb::coord
