// The CI gate of `kb submit --wait --gate` (README "Gating a merge in CI"): decides from a
// finished run and its comparison with a baseline whether CI passes, and writes the decision for
// the CI system (a Markdown job summary and JUnit XML, one test case per problem and GPU model).
//
// A case FAILS when
//   1. its job did not end with a result of status `ok` (a failed, cancelled or unfinished job,
//      `mismatch`, `crashed`, `timeout`, ...), or
//   2. `kb compare`'s verdict against the baseline (compare_results(), with its practical band
//      set to --max-slowdown) is `slower`: the Benjamini–Hochberg q is within alpha, the ratio's
//      95% interval excludes 1 and the median is slower by more than max_slowdown.
// Everything else passes: faster, same, ambiguous (too noisy to tell), a problem new in the head
// run, or no baseline at all (the first run on a branch).
//
// Pure: no I/O (ci_gate_command.h reads the database and writes the files).
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/compare_table.h"
#include "cli/results_reader.h"

namespace kb::cli {

struct GatePolicy {
  double max_slowdown = 0.03;  // 3%
  double alpha = 0.05;         // FDR of the slowdown verdicts
};

// compare_results()'s options for this policy: the gate and `kb compare` share one comparison.
CompareOptions gate_compare_options(const GatePolicy& policy);

struct GateCase {
  ResultRow job;                     // the head run's job and its result
  std::optional<CompareRow> versus;  // against the baseline; nullopt when it has no such pair
  std::string failure_kind;          // "" (passed), "status" or "slowdown"
  std::string failure;               // why, for people
};

struct GateReport {
  int64_t run_id = 0;
  std::string run_label;      // "kernelbench22, preset small, commit abc123, branch feature"
  std::string baseline;       // selector ("run:12", a commit); "" without a baseline
  std::string baseline_note;  // why there is none, or where it came from
  GatePolicy policy;
  std::vector<GateCase> cases;  // by problem, then GPU model (the results table's order)
  int failed_jobs() const;
  int slowdowns() const;
  bool passed() const { return failed_jobs() == 0 && slowdowns() == 0; }
};

// One case per job of `head_jobs`; `versus` are compare_results() rows of baseline vs head,
// matched to a job by (problem, GPU model).
GateReport evaluate_gate(const std::vector<ResultRow>& head_jobs,
                         const std::vector<CompareRow>& versus, const GatePolicy& policy);

// For the CI job summary ($GITHUB_STEP_SUMMARY): the verdict, then a table per case.
std::string gate_markdown(const GateReport& report);
// JUnit XML: one <testsuite> for the run, one <testcase> per case (classname kbfleet.<GPU
// model>, name the problem) with a <failure> when it failed and <properties> carrying the
// times, the speedup with its interval and the change against the baseline with its interval.
std::string gate_junit(const GateReport& report);

}  // namespace kb::cli
