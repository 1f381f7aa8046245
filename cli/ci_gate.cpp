#include "cli/ci_gate.h"

#include <cstdio>
#include <map>
#include <utility>

#include "cli/fleet_report.h"
#include "cli/report_html.h"

namespace kb::cli {
namespace {

std::string fmt(const char* format, double value) {
  return printf_string(format, value);
}
std::string opt(const std::optional<double>& v, const char* format) {
  return v ? fmt(format, *v) : "-";
}

std::string percent(double ratio) {
  return fmt("%+.2f%%", (ratio - 1) * 100);
}

// "+4.02% [+3.10%, +4.95%]" for a tested pair.
std::string change_text(const CompareRow& row) {
  return percent(row.change.ratio) + " [" + percent(row.change.ci_low) + ", " +
         percent(row.change.ci_high) + "]";
}

void judge(GateCase& c, const GatePolicy& policy) {
  if (c.job.job_state != "done" || c.job.status != "ok") {
    c.failure_kind = "status";
    const std::string status =
        c.job.status.empty() ? "no result (job " + c.job.job_state + ")" : c.job.status;
    c.failure = status + (c.job.message.empty() ? "" : ": " + c.job.message);
  } else if (c.versus && c.versus->verdict == "slower") {
    c.failure_kind = "slowdown";
    c.failure = "slower than the baseline by " + change_text(*c.versus) +
                " (q = " + fmt("%.2g", c.versus->q_value) + "), above the " +
                fmt("%.1f%%", policy.max_slowdown * 100) + " allowed";
  }
}

std::string versus_cell(const GateCase& c) {
  if (!c.versus) return "-";
  if (c.versus->tested) return change_text(*c.versus) + " " + c.versus->verdict;
  if (c.versus->verdict == "status") return c.versus->base_status + " → " + c.versus->head_status;
  return c.versus->verdict;
}

std::string speedup_cell(const ResultRow& r) {
  if (!r.speedup) return "-";
  std::string out = fmt("%.3f×", *r.speedup);
  if (r.speedup_ci_low && r.speedup_ci_high) {
    out += " [" + fmt("%.3f", *r.speedup_ci_low) + ", " + fmt("%.3f", *r.speedup_ci_high) + "]";
  }
  return out;
}

// Markdown table cells may not hold '|' or line breaks.
std::string cell(std::string text) {
  for (char& ch : text) {
    if (ch == '|') ch = '/';
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  return text;
}

void property(std::string& out, const char* name, const std::string& value) {
  out +=
      "      <property name=\"" + std::string(name) + "\" value=\"" + html_escape(value) + "\"/>\n";
}

void property(std::string& out, const char* name, const std::optional<double>& value) {
  if (value) property(out, name, fmt("%.6g", *value));
}

std::string junit_properties(const GateCase& c) {
  std::string out = "    <properties>\n";
  property(out, "status", c.job.status.empty() ? c.job.job_state : c.job.status);
  property(out, "reference_median_ms", c.job.reference_median_ms);
  property(out, "custom_median_ms", c.job.custom_median_ms);
  property(out, "speedup", c.job.speedup);
  property(out, "speedup_ci_low", c.job.speedup_ci_low);
  property(out, "speedup_ci_high", c.job.speedup_ci_high);
  if (c.versus && c.versus->tested) {
    property(out, "baseline_median_ms", c.versus->base_median_ms);
    property(out, "change", fmt("%.6g", c.versus->change.ratio - 1));
    property(out, "change_ci_low", fmt("%.6g", c.versus->change.ci_low - 1));
    property(out, "change_ci_high", fmt("%.6g", c.versus->change.ci_high - 1));
    property(out, "q_value", fmt("%.6g", c.versus->q_value));
  }
  property(out, "verdict", c.versus ? c.versus->verdict : "no baseline");
  return out + "    </properties>\n";
}

}  // namespace

CompareOptions gate_compare_options(const GatePolicy& policy) {
  CompareOptions options;
  options.alpha = policy.alpha;
  options.threshold = policy.max_slowdown;
  return options;
}

int GateReport::failed_jobs() const {
  int n = 0;
  for (const GateCase& c : cases) n += c.failure_kind == "status";
  return n;
}

int GateReport::slowdowns() const {
  int n = 0;
  for (const GateCase& c : cases) n += c.failure_kind == "slowdown";
  return n;
}

GateReport evaluate_gate(const std::vector<ResultRow>& head_jobs,
                         const std::vector<CompareRow>& versus, const GatePolicy& policy) {
  std::map<std::pair<std::string, std::string>, const CompareRow*> by_key;
  for (const CompareRow& row : versus) by_key[{row.problem, row.head_gpu}] = &row;
  GateReport report;
  report.policy = policy;
  for (const ResultRow& job : head_jobs) {
    GateCase c;
    c.job = job;
    if (auto it = by_key.find({job.problem_id, job.gpu_model}); it != by_key.end()) {
      c.versus = *it->second;
    }
    judge(c, policy);
    report.cases.push_back(std::move(c));
  }
  return report;
}

std::string gate_markdown(const GateReport& r) {
  std::string out = std::string("## kbfleet gate: ") + (r.passed() ? "passed" : "FAILED") + "\n\n";
  out += "Run " + std::to_string(r.run_id) + " (" + r.run_label +
         "): " + std::to_string(r.cases.size()) + " jobs, " + std::to_string(r.failed_jobs()) +
         " failed, " + std::to_string(r.slowdowns()) + " slower than the baseline by more than " +
         fmt("%.1f%%", r.policy.max_slowdown * 100) + ".\n\n";
  out += "Baseline: " + (r.baseline.empty() ? "none" : "`" + r.baseline + "`") +
         (r.baseline_note.empty() ? "" : " (" + r.baseline_note + ")") + ".\n\n";
  out +=
      "| problem | GPU | status | custom ms | speedup [95% CI] | vs baseline [95% CI] | gate |\n";
  out += "| --- | --- | --- | ---: | ---: | --- | --- |\n";
  for (const GateCase& c : r.cases) {
    const std::string gate = c.failure_kind.empty() ? "pass" : "**fail**: " + c.failure;
    out += "| " + cell(c.job.problem_id) + " | " + cell(c.job.gpu_model) + " | " +
           cell(c.job.status.empty() ? c.job.job_state : c.job.status) + " | " +
           opt(c.job.custom_median_ms, "%.4g") + " | " + speedup_cell(c.job) + " | " +
           cell(versus_cell(c)) + " | " + cell(gate) + " |\n";
  }
  return out;
}

std::string gate_junit(const GateReport& r) {
  double total_s = 0;
  for (const GateCase& c : r.cases) total_s += c.job.wall_ms.value_or(0) / 1000;
  const int failures = r.failed_jobs() + r.slowdowns();
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kbfleet\" tests=\"" +
      std::to_string(r.cases.size()) + "\" failures=\"" + std::to_string(failures) + "\" time=\"" +
      fmt("%.3f", total_s) + "\">\n";
  out += "  <testsuite name=\"" +
         html_escape("kbfleet run " + std::to_string(r.run_id) + " (" + r.run_label + ")") +
         "\" tests=\"" + std::to_string(r.cases.size()) + "\" failures=\"" +
         std::to_string(failures) + "\" errors=\"0\" skipped=\"0\" time=\"" + fmt("%.3f", total_s) +
         "\">\n";
  for (const GateCase& c : r.cases) {
    out += "   <testcase classname=\"" + html_escape("kbfleet." + c.job.gpu_model) + "\" name=\"" +
           html_escape(c.job.problem_id) + "\" time=\"" +
           fmt("%.3f", c.job.wall_ms.value_or(0) / 1000) + "\">\n" + junit_properties(c);
    if (!c.failure_kind.empty()) {
      out += "    <failure type=\"" + c.failure_kind + "\" message=\"" + html_escape(c.failure) +
             "\">" + html_escape(c.failure) + "</failure>\n";
    }
    out += "   </testcase>\n";
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

}  // namespace kb::cli
