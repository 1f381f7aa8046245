// `kb problems ...`: list, show, validate and generate the suite's problem specs, and run a
// problem's golden model.
//
// Thread safety: called once from main.
#pragma once

#include <CLI/CLI.hpp>

namespace kb::cli {

// Adds the `problems` subcommand and its children to `app`.
void add_problems_command(CLI::App& app);

}  // namespace kb::cli
