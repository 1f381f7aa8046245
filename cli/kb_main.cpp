// kb: the kbfleet command-line tool. Each group of subcommands registers itself here; exit codes
// and error printing are cli_app.h's.
#include <CLI/CLI.hpp>

#include "cli/bench_command.h"
#include "cli/cli_app.h"
#include "cli/fleet_commands.h"
#include "cli/history_commands.h"
#include "cli/problems_command.h"

int main(int argc, char** argv) {
  CLI::App app{"kb: verify and time GPU kernels against their references (kbfleet)"};
  app.require_subcommand(1);
  kb::cli::add_problems_command(app);  // problems list | show | validate | generate | run-golden
  kb::cli::add_bench_command(app);     // the local runner
  kb::cli::add_sweep_table_command(app);  // a saved sweep, or two side by side
  kb::cli::add_fleet_commands(app);    // submit watch runs status results workers cancel keygen
  kb::cli::register_history_commands(app);  // history compare regressions report
  return kb::cli::run_app(app, argc, argv);
}
