// `kb submit --wait --gate`: after the run is done, compares it with a baseline through the
// comparison `kb compare` uses (compare_table.h) and decides with ci_gate.h whether CI passes.
//
//   --gate                 decide: exit 1 when a job failed or a problem got slower
//   --baseline REF         run:N or a commit (SHA or unique prefix); default: the last finished
//                          run of the same preset on --target-branch before this one
//   --target-branch B      default: main
//   --max-slowdown P       3% (also 0.03)
//   --summary-md FILE      Markdown for the CI job summary
//   --junit FILE           JUnit XML, one test case per problem and GPU model
//
// Reads the database with the read-only role. Exit codes as cli_app.h: 0 passed, 1 failed (or
// the database could not be read), 2 bad flags (an unknown --baseline).
//
// Thread safety: called from main's thread only.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/status.h"

namespace kb::cli {

struct GateFlags {
  bool gate = false;
  std::string baseline, target_branch = "main", max_slowdown = "3%", summary_md, junit;
};

void add_gate_options(CLI::App* command, GateFlags& flags);
// Checks the flags before anything is submitted (a typo must not cost a whole run).
Status check_gate_flags(const GateFlags& flags);
// "3%" or "0.03" -> 0.03; a bare number of 1 or more is refused (write "3%").
Result<double> parse_slowdown(const std::string& text);

// Gates the finished run `run_id`; prints the Markdown summary to `out` and writes the files.
// Returns the exit code.
int run_gate(const std::string& db_url, int64_t run_id, const GateFlags& flags, FILE* out);

}  // namespace kb::cli
