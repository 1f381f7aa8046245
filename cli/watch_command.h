// `kb watch RUN`: follows a run in the database until it is done or cancelled. On a terminal, a
// progress bar redrawn in place; otherwise one line per change (logs, CI). The database may
// go away for a while (a restart, the fault tests): the watcher reconnects and keeps waiting
// (kDatabaseGraceSeconds), saying so once.
//
// Exit code: 0 when the run is done and no job failed; 1 when a job failed (its attempts ran out),
// the run was cancelled or the database stayed unreachable.
//
// Thread safety: called from main's thread only.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "cli/results_reader.h"

namespace kb::cli {

inline constexpr double kDatabaseGraceSeconds = 120;

struct WatchOptions {
  bool json = false;           // progress to stderr; the final status as JSON on stdout
  bool print_results = false;  // kb submit --wait: the results table (or JSON) at the end
  double poll_seconds = 0.5;
};

// Follows run_id on the database at db_url; returns the exit code (above).
int watch_run(const std::string& db_url, int64_t run_id, const WatchOptions& options);

void add_watch_command(CLI::App& app);

}  // namespace kb::cli
