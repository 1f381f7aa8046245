// `kb history`, `kb compare`, `kb regressions` and `kb report` (issue 8; README "History"):
//
//   kb history PROBLEM [--gpu MODEL] [--variant custom|reference] [--preset P] [--last N]
//              [--json | --csv]            the series' points and a terminal chart
//   kb compare BASE HEAD [--gpu MODEL]     BASE/HEAD: commit SHA, unique prefix, or run:N
//   kb compare --commit X --gpus A,B       two GPU models at one commit
//   kb regressions [--since DATE] [--gpu MODEL] [--json]
//   kb report (--run N | --commits A..B) --out FILE.html [--json FILE] [--csv FILE]
//
// All read PostgreSQL with the read-only role: --db URL / env KB_DB_URL / config file
// (cli_config.h). Exit codes as cli_app.h: 2 for bad arguments or an unknown commit, 1 when the
// database cannot be reached.
//
// Thread safety: called once from main.
#pragma once

#include <CLI/CLI.hpp>

namespace kb::cli {

void register_history_commands(CLI::App& app);

}  // namespace kb::cli
