// What the fleet commands print: text tables for people and JSON for machines (`--json`), for
// runs, a run's status, its results with the summary (results_summary.h) and the workers.
// Times are shown in local time; JSON carries ISO 8601 UTC and raw numbers.
//
// Thread safety: pure functions over values.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cli/results_reader.h"
#include "cli/results_summary.h"

namespace kb::cli {

// snprintf into a string (up to 511 characters), for the tables and reports of the CLI.
std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));

std::string format_local_time(double epoch_seconds);  // "2025-01-31 14:05:09"
std::string format_iso_utc(double epoch_seconds);     // "2025-01-31T13:05:09Z"
std::string format_duration(double seconds);          // "45 s", "3m05s", "1h02m"

std::string format_runs_table(const std::vector<RunRow>& runs);
std::string format_run_status(const RunStatus& status);
std::string format_results_table(const std::vector<ResultRow>& rows, const ResultsSummary& summary);
std::string format_workers_table(const std::vector<WorkerRow>& workers);

// One line of progress: "run 12  [#####.....]  11/22 done, 0 failed, 2 running  ETA 1m10s".
// bar_width 0 leaves the bar out (non-TTY output).
std::string format_progress(const RunStatus& status, int bar_width);

nlohmann::json to_json(const RunRow& run);
nlohmann::json to_json(const RunStatus& status);
nlohmann::json to_json(const ResultRow& row);
nlohmann::json to_json(const ModelSummary& summary);
nlohmann::json to_json(const std::vector<ResultRow>& rows, const ResultsSummary& summary);
nlohmann::json to_json(const WorkerRow& worker);

}  // namespace kb::cli
