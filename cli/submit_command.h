// `kb submit`: sends a run to the coordinator (SUBMIT, schemas/protocol.md) — a suite or problem
// ids checked locally against the problem catalog, a preset, GPU models, commit labels (from git
// when run inside a work tree), the kernel pack by content hash (its bytes only when the
// coordinator lacks them), or a list of sim jobs for the dispatch benchmark. --wait then follows
// the run like `kb watch` and prints the results table; --gate then decides whether CI passes
// (ci_gate_command.h: a failed job or a slowdown against the baseline exits 1).
//
// Exit codes (cli_app.h): 2 for bad input (unknown problem or preset, no pack, no endpoint),
// 1 when the coordinator does not answer or refuses, or (with --wait) a job failed, or (with
// --gate) the gate failed.
//
// Thread safety: called from main's thread only.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb::cli {

void add_submit_command(CLI::App& app);

// --sim-jobs: "N:MS" (N jobs of MS milliseconds) or a file of sleep times in ms (separated by
// spaces, commas or newlines; '#' starts a comment).
Result<std::vector<double>> parse_sim_jobs(const std::string& spec);

struct GitLabels {
  std::string commit_sha, branch, commit_time;  // "" when unknown
};
// From `git` in the current directory; all empty outside a work tree or without git.
GitLabels read_git_labels();

}  // namespace kb::cli
