// `kb bench`: the local runner. Runs one problem, a list or a suite on the local GPU (or on the
// CPU device at small presets, labelled `cpu`), one kb-executor process per job, and prints the
// results table with fast_p and the geometric-mean speedup; --json for machines.
//
// Thread safety: called once from main.
#pragma once

#include <CLI/CLI.hpp>

namespace kb::cli {

void add_bench_command(CLI::App& app);

// `kb sweep-table SWEEP_JSON [AFTER_JSON]`: a saved sweep's tables (cli/sweep_report.h), or two
// sweeps side by side.
void add_sweep_table_command(CLI::App& app);

// Whether this host has an NVIDIA GPU (its device nodes exist): what `--device auto` picks.
bool gpu_present();

}  // namespace kb::cli
