#include "cli/ci_gate_command.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli/ci_gate.h"
#include "cli/cli_app.h"
#include "cli/history_reader.h"
#include "cli/results_reader.h"

namespace kb::cli {
namespace {

template <typename T>
T value_or_fail(Result<T> r) {
  if (!r.is_ok()) fail(r.status());
  return std::move(r).value();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.good()) fail(kExitFailure, "cannot write " + path);
}

std::string run_label(const RunRow& run) {
  std::string label = (run.suite.empty() ? "problem list" : run.suite) + ", preset " + run.preset;
  if (!run.commit_sha.empty()) label += ", commit " + run.commit_sha.substr(0, 10);
  if (!run.branch.empty()) label += ", branch " + run.branch;
  return label;
}

// The baseline's selector, or "" (with *note saying why) when there is none.
std::string find_baseline(ResultsReader& reader, const RunRow& run, const GateFlags& flags,
                          std::string* note) {
  if (!flags.baseline.empty()) {
    *note = "--baseline";
    return flags.baseline;
  }
  const auto last =
      value_or_fail(reader.last_run_on_branch(flags.target_branch, run.preset, run.id));
  if (!last) {
    *note = "no finished " + run.preset + " run on branch " + flags.target_branch + " before run " +
            std::to_string(run.id) + ": nothing to compare with";
    return "";
  }
  *note = "the last " + run.preset + " run on branch " + flags.target_branch;
  return "run:" + std::to_string(*last);
}

// The selector's custom-variant results; none when it has no results (a run whose jobs all failed).
std::vector<HistoryPoint> points_of(HistoryReader& reader, const std::string& selector) {
  auto points = reader.results_at(selector, "", "custom");
  if (!points.is_ok() && points.status().code() == StatusCode::kNotFound &&
      selector.rfind("run:", 0) == 0) {
    return {};
  }
  return value_or_fail(std::move(points));
}

}  // namespace

Result<double> parse_slowdown(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const bool percent = end != text.c_str() && std::string(end) == "%";
  if (end == text.c_str() || (!percent && *end != '\0') || value < 0 || (!percent && value >= 1)) {
    return Status::invalid_argument("--max-slowdown " + text +
                                    ": write a percentage (3%) or a "
                                    "fraction below 1 (0.03)");
  }
  return percent ? value / 100 : value;
}

Status check_gate_flags(const GateFlags& flags) {
  if (!flags.gate &&
      (!flags.baseline.empty() || !flags.summary_md.empty() || !flags.junit.empty())) {
    return Status::invalid_argument("--baseline, --summary-md and --junit need --gate");
  }
  KB_TRY(parse_slowdown(flags.max_slowdown).status());
  return Status::ok();
}

void add_gate_options(CLI::App* command, GateFlags& flags) {
  command->add_flag("--gate", flags.gate,
                    "With --wait: fail (exit 1) when a job fails or a problem got slower than the "
                    "baseline by more than --max-slowdown");
  command->add_option("--baseline", flags.baseline,
                      "Gate against this run (run:N) or commit (default: the last run of the same "
                      "preset on --target-branch)");
  command
      ->add_option("--target-branch", flags.target_branch,
                   "The branch whose last run is the baseline")
      ->capture_default_str();
  command
      ->add_option("--max-slowdown", flags.max_slowdown,
                   "Largest slowdown that passes (3% or 0.03)")
      ->capture_default_str();
  command->add_option("--summary-md", flags.summary_md, "Write the gate's Markdown summary here");
  command->add_option("--junit", flags.junit, "Write JUnit XML here (one test case per problem)");
}

int run_gate(const std::string& db_url, int64_t run_id, const GateFlags& flags, FILE* out) {
  GatePolicy policy;
  policy.max_slowdown = value_or_fail(parse_slowdown(flags.max_slowdown));
  auto results = value_or_fail(ResultsReader::connect(db_url));
  const RunStatus status = value_or_fail(results->run_status(run_id));
  std::string note;
  const std::string baseline = find_baseline(*results, status.run, flags, &note);
  std::vector<CompareRow> versus;
  if (!baseline.empty()) {
    auto history = value_or_fail(HistoryReader::connect(db_url));
    versus = compare_results(points_of(*history, baseline),
                             points_of(*history, "run:" + std::to_string(run_id)),
                             gate_compare_options(policy));
  }
  GateReport report = evaluate_gate(value_or_fail(results->results(run_id)), versus, policy);
  report.run_id = run_id;
  report.run_label = run_label(status.run);
  report.baseline = baseline;
  report.baseline_note = note;
  const std::string markdown = gate_markdown(report);
  std::fprintf(out, "\n%s", markdown.c_str());
  if (!flags.summary_md.empty()) write_file(flags.summary_md, markdown);
  if (!flags.junit.empty()) write_file(flags.junit, gate_junit(report));
  return report.passed() ? kExitOk : kExitFailure;
}

}  // namespace kb::cli
