#include "cli/watch_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/cli_app.h"
#include "cli/fleet_options.h"
#include "cli/fleet_report.h"
#include "cli/results_summary.h"

namespace kb::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Polls the run's status, reconnecting after a failure; gives up after kDatabaseGraceSeconds
// of failures in a row.
class StatusPoller {
 public:
  StatusPoller(std::string url, int64_t run_id) : url_(std::move(url)), run_id_(run_id) {}

  // The run's status; nullopt while the database is unreachable (within the grace period).
  Result<std::optional<RunStatus>> poll() {
    if (!reader_) {
      auto reader = ResultsReader::connect(url_);
      if (!reader.is_ok()) return note_failure(reader.status());
      reader_ = std::move(reader).value();
    }
    auto status = reader_->run_status(run_id_);
    if (!status.is_ok()) {
      if (status.status().code() == StatusCode::kNotFound) return status.status();
      reader_.reset();
      return note_failure(status.status());
    }
    if (failing_since_) std::fprintf(stderr, "kb watch: the database is back\n");
    failing_since_.reset();
    return std::optional<RunStatus>(std::move(status).value());
  }

  ResultsReader* reader() { return reader_.get(); }

 private:
  Result<std::optional<RunStatus>> note_failure(const Status& status) {
    if (!failing_since_) {
      failing_since_ = Clock::now();
      std::fprintf(stderr, "kb watch: %s; retrying for up to %.0f s\n", status.message().c_str(),
                   kDatabaseGraceSeconds);
    }
    const double failing = std::chrono::duration<double>(Clock::now() - *failing_since_).count();
    if (failing > kDatabaseGraceSeconds) return status;
    return std::optional<RunStatus>();
  }

  std::string url_;
  int64_t run_id_;
  std::unique_ptr<ResultsReader> reader_;
  std::optional<Clock::time_point> failing_since_;
};

int print_final(ResultsReader& reader, const RunStatus& status, const WatchOptions& options) {
  nlohmann::json json = {{"status", to_json(status)}};
  if (options.print_results) {
    auto rows = reader.results(status.run.id);
    if (!rows.is_ok()) fail(kExitFailure, rows.status().message());
    const ResultsSummary summary = summarize_results(rows.value());
    if (options.json) {
      json["results"] = to_json(rows.value(), summary);
    } else {
      std::printf("\n%s", format_results_table(rows.value(), summary).c_str());
    }
  }
  if (options.json) std::printf("%s\n", json.dump(1).c_str());
  const auto failed = status.jobs_by_state.find("failed");
  const int64_t failed_jobs = failed == status.jobs_by_state.end() ? 0 : failed->second;
  if (status.run.state == "cancelled") {
    std::fprintf(stderr, "kb: run %lld was cancelled\n", static_cast<long long>(status.run.id));
    return kExitFailure;
  }
  if (failed_jobs > 0) {
    std::fprintf(stderr, "kb: %lld job(s) of run %lld failed (attempts exhausted); see `kb results %lld`\n",
                 static_cast<long long>(failed_jobs), static_cast<long long>(status.run.id),
                 static_cast<long long>(status.run.id));
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int watch_run(const std::string& db_url, int64_t run_id, const WatchOptions& options) {
  const bool tty = !options.json && isatty(STDOUT_FILENO) == 1;
  FILE* progress = options.json ? stderr : stdout;
  StatusPoller poller(db_url, run_id);
  std::string last_counts;
  while (true) {
    auto polled = poller.poll();
    if (!polled.is_ok()) {
      fail(polled.status().code() == StatusCode::kNotFound ? kExitUsage : kExitFailure,
           polled.status().message());
    }
    if (const std::optional<RunStatus>& status = polled.value()) {
      const std::string line = format_progress(*status, tty ? 30 : 0);
      // Off a terminal, a line per change of the job counts (not of the ETA alone).
      std::string counts = status->run.state;
      for (const auto& [state, n] : status->jobs_by_state) counts += " " + state + "=" + std::to_string(n);
      if (tty) {
        std::fprintf(progress, "\r%s\033[K", line.c_str());
      } else if (counts != last_counts) {
        std::fprintf(progress, "%s\n", line.c_str());
      }
      std::fflush(progress);
      last_counts = counts;
      if (status->is_final()) {
        if (tty) std::fprintf(progress, "\n");
        return print_final(*poller.reader(), *status, options);
      }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options.poll_seconds));
  }
}

void add_watch_command(CLI::App& app) {
  struct Options {
    FleetOptions fleet;
    int64_t run_id = 0;
    bool results = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* watch = app.add_subcommand("watch", "Follow a run until it is done (progress from the database)");
  add_run_argument(watch, o->run_id);
  watch->add_flag("--results", o->results, "Print the results table at the end");
  add_fleet_options(watch, o->fleet, Needs::kDatabase);
  watch->callback([o] {
    const FleetConfig config = resolve_or_fail(o->fleet, Needs::kDatabase);
    WatchOptions options;
    options.json = o->fleet.json;
    options.print_results = o->results;
    const int code = watch_run(config.db, o->run_id, options);
    if (code != kExitOk) throw CLI::RuntimeError(code);
  });
}

}  // namespace kb::cli
