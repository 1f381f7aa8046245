// kb: the kbfleet command-line tool.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/bench_command.h"
#include "cli/problems_command.h"

int main(int argc, char** argv) {
  CLI::App app{"kb: verify and time GPU kernels against their references (kbfleet)"};
  app.require_subcommand(1);
  kb::cli::add_problems_command(app);
  kb::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kb: %s\n", e.what());
    return 1;
  }
  return 0;
}
