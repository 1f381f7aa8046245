// The options every fleet subcommand shares (--coordinator, --db, --config, --curve-key,
// --coordinator-key, --json, --timeout) and the steps every one starts with: resolve the
// configuration (cli_config.h), connect to the coordinator or open the read-only database.
// Failures end the command through fail() (cli_app.h) with a message saying what to do.
//
// Thread safety: called from main's thread only.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "cli/cli_config.h"
#include "cli/fleet_client.h"
#include "cli/results_reader.h"

namespace kb::cli {

struct FleetOptions {
  ConfigFlags flags;
  bool json = false;
  double timeout_s = 5;  // per request to the coordinator
};

enum class Needs { kCoordinator = 1, kDatabase = 2, kBoth = 3 };

void add_fleet_options(CLI::App* command, FleetOptions& options, Needs needs);
// The required RUN positional: a positive integer, with a message that says where ids come from.
void add_run_argument(CLI::App* command, int64_t& run_id);

FleetConfig resolve_or_fail(const FleetOptions& options, Needs needs);
std::unique_ptr<FleetClient> connect_or_fail(const FleetConfig& config);
std::unique_ptr<ResultsReader> open_db_or_fail(const FleetConfig& config);

std::chrono::milliseconds request_timeout(const FleetOptions& options);

}  // namespace kb::cli
