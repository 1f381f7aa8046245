// The fleet subcommands of `kb` (README, "Using the fleet"):
//
//   submit [SUITE|IDS...]   a run to the coordinator (submit_command.h); --wait follows it
//   watch RUN               progress until the run is done (watch_command.h)
//   runs [--last N]         recent runs                      (database, read-only role)
//   status RUN              one run: jobs by state, ETA      (database)
//   results RUN             results table, fast_p, geomean   (database)
//   workers                 the pool: state, model, last seen, jobs done (database)
//   cancel RUN              cancels a run's open jobs        (coordinator)
//   keygen OUT_PREFIX       a CURVE key pair: OUT_PREFIX.key (0600) and OUT_PREFIX.pub
//
// All take --json. Reads go to PostgreSQL with the read-only role; writes go to the coordinator.
// Exit codes: cli_app.h.
//
// Thread safety: called from main's thread only.
#pragma once

#include <CLI/CLI.hpp>

namespace kb::cli {

void add_fleet_commands(CLI::App& app);

}  // namespace kb::cli
