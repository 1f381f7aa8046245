#include "cli/fleet_report.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace kb::cli {

std::string printf_string(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

namespace {

std::string time_text(double epoch_seconds, bool utc, const char* format) {
  const std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm parts{};
  if (utc) {
    gmtime_r(&t, &parts);
  } else {
    localtime_r(&t, &parts);
  }
  char buffer[64];
  std::strftime(buffer, sizeof buffer, format, &parts);
  return buffer;
}

std::string ms_cell(const std::optional<double>& ms) {
  return ms && *ms > 0 ? printf_string("%9.3f", *ms) : printf_string("%9s", "-");
}

std::string speedup_cell(const ResultRow& r) {
  if (!r.speedup || !(*r.speedup > 0)) return printf_string("%-24s", "-");
  const double high = r.speedup_ci_high && std::isfinite(*r.speedup_ci_high) ? *r.speedup_ci_high : 0.0;
  return printf_string("%6.3fx [%5.3f, %5.3f]", *r.speedup, r.speedup_ci_low.value_or(0.0), high);
}

// The verdict column: the result's status, else what the job is doing or why it ended.
std::string status_cell(const ResultRow& r) { return r.status.empty() ? "(" + r.job_state + ")" : r.status; }

std::string summary_line(const ModelSummary& s, const char* label) {
  return printf_string("%-14s %lld of %lld correct; fast_1 = %.3f, fast_1.2 = %.3f; geomean speedup "
                       "over correct = %s%s\n",
                       label, static_cast<long long>(s.correct), static_cast<long long>(s.jobs),
                       s.fast_1, s.fast_1_2,
                       s.geomean_speedup ? printf_string("%.3fx", *s.geomean_speedup).c_str() : "-",
                       s.failed ? printf_string("; %lld failed", static_cast<long long>(s.failed)).c_str() : "");
}

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

std::string format_local_time(double epoch_seconds) {
  return time_text(epoch_seconds, false, "%Y-%m-%d %H:%M:%S");
}

std::string format_iso_utc(double epoch_seconds) {
  return time_text(epoch_seconds, true, "%Y-%m-%dT%H:%M:%SZ");
}

std::string format_duration(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  if (s < 60) return printf_string("%lld s", s);
  if (s < 3600) return printf_string("%lldm%02llds", s / 60, s % 60);
  return printf_string("%lldh%02lldm", s / 3600, (s % 3600) / 60);
}

std::string format_runs_table(const std::vector<RunRow>& runs) {
  if (runs.empty()) return "no runs yet (submit one with `kb submit`)\n";
  std::string out = printf_string("%6s  %-19s  %-10s  %-14s  %-6s  %-9s  %-13s  %-10s  %s\n", "run",
                                  "submitted", "state", "suite", "preset", "jobs", "done/fail", "commit",
                                  "gpu");
  for (const RunRow& r : runs) {
    out += printf_string("%6lld  %-19s  %-10s  %-14s  %-6s  %-9lld  %5lld/%-7lld  %-10s  %s\n",
                         static_cast<long long>(r.id), format_local_time(r.submitted_at).c_str(),
                         r.state.c_str(), r.suite.empty() ? "(ids)" : r.suite.c_str(), r.preset.c_str(),
                         static_cast<long long>(r.jobs), static_cast<long long>(r.done),
                         static_cast<long long>(r.failed), r.commit_sha.substr(0, 10).c_str(),
                         r.gpu_models.empty() ? "any" : nlohmann::json(r.gpu_models).dump().c_str());
  }
  return out;
}

std::string format_run_status(const RunStatus& s) {
  const RunRow& r = s.run;
  std::string out = printf_string("run %lld: %s   (%s, preset %s, submitted %s by %s)\n",
                                  static_cast<long long>(r.id), r.state.c_str(),
                                  r.suite.empty() ? "problem list" : r.suite.c_str(), r.preset.c_str(),
                                  format_local_time(r.submitted_at).c_str(), r.submitted_by.c_str());
  if (!r.commit_sha.empty()) {
    out += printf_string("commit %s%s%s\n", r.commit_sha.c_str(), r.branch.empty() ? "" : " on ",
                         r.branch.c_str());
  }
  out += "jobs:";
  for (const char* state : {"queued", "leased", "done", "failed", "cancelled"}) {
    const auto it = s.jobs_by_state.find(state);
    out += printf_string(" %s %lld", state, static_cast<long long>(it == s.jobs_by_state.end() ? 0 : it->second));
  }
  out += printf_string("   (%lld of %lld finished)\n", static_cast<long long>(s.finished()),
                       static_cast<long long>(r.jobs));
  if (r.finished_at) {
    out += printf_string("finished %s after %s\n", format_local_time(*r.finished_at).c_str(),
                         format_duration(*r.finished_at - r.submitted_at).c_str());
  } else if (const auto eta = s.eta_seconds()) {
    out += printf_string("ETA %s (%lld live workers for this run)\n", format_duration(*eta).c_str(),
                         static_cast<long long>(s.live_workers));
  } else {
    out += printf_string("ETA unknown (%lld live workers for this run)\n", static_cast<long long>(s.live_workers));
  }
  return out;
}

std::string format_results_table(const std::vector<ResultRow>& rows, const ResultsSummary& summary) {
  std::string out = printf_string("%-7s  %-14s  %-16s  %9s  %9s  %-24s  %8s  %3s  %s\n", "problem", "gpu",
                                  "status", "ref_ms", "cust_ms", "speedup [95% CI]", "TFLOP/s", "att",
                                  "worker / message");
  for (const ResultRow& r : rows) {
    const std::string tflops = r.custom_tflops && *r.custom_tflops > 0 ? printf_string("%8.2f", *r.custom_tflops)
                                                                       : printf_string("%8s", "-");
    std::string note = r.worker;
    if (!r.message.empty()) note += (note.empty() ? "" : "  ") + r.message.substr(0, 80);
    out += printf_string("%-7s  %-14s  %-16s  %s  %s  %s  %s  %3d  %s\n", r.problem_id.c_str(),
                         (r.gpu_model.empty() ? std::string("any") : r.gpu_model.substr(0, 14)).c_str(),
                         status_cell(r).c_str(), ms_cell(r.reference_median_ms).c_str(),
                         ms_cell(r.custom_median_ms).c_str(), speedup_cell(r).c_str(), tflops.c_str(),
                         r.attempt, note.c_str());
  }
  out += "\n";
  if (summary.per_model.size() > 1) {
    for (const ModelSummary& m : summary.per_model) {
      out += summary_line(m, (m.gpu_model.empty() ? std::string("any") : m.gpu_model).c_str());
    }
  }
  out += summary_line(summary.overall, summary.per_model.size() > 1 ? "all" : "summary");
  const bool cpu_only = !summary.per_model.empty() && summary.per_model.size() == 1 &&
                        summary.per_model.front().gpu_model == "cpu";
  if (cpu_only) {
    out += "CPU device: reference = golden model in double, custom = the same algorithm in fp32; "
           "times are CPU times, not GPU figures.\n";
  }
  return out;
}

std::string format_workers_table(const std::vector<WorkerRow>& workers) {
  if (workers.empty()) return "no workers have registered yet (start one with `kb-worker --coordinator ...`)\n";
  std::string out = printf_string("%-24s  %-6s  %-5s  %-22s  %-19s  %9s  %5s  %s\n", "worker", "state", "kind",
                                  "model", "last seen", "ago", "done", "running");
  for (const WorkerRow& w : workers) {
    out += printf_string("%-24s  %-6s  %-5s  %-22s  %-19s  %9s  %5lld  %lld\n", w.name.c_str(), w.state.c_str(),
                         w.device_kind.c_str(), w.gpu_model.c_str(), format_local_time(w.last_seen).c_str(),
                         format_duration(w.seconds_since_seen).c_str(), static_cast<long long>(w.jobs_done),
                         static_cast<long long>(w.jobs_leased));
  }
  return out;
}

std::string format_progress(const RunStatus& s, int bar_width) {
  const long long total = s.run.jobs, finished = s.finished();
  std::string bar;
  if (bar_width > 0) {
    const int filled = total > 0 ? static_cast<int>(finished * bar_width / total) : 0;
    bar = "[" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "]  ";
  }
  const auto count = [&](const char* state) {
    const auto it = s.jobs_by_state.find(state);
    return static_cast<long long>(it == s.jobs_by_state.end() ? 0 : it->second);
  };
  const auto eta = s.eta_seconds();
  return printf_string("run %lld  %s%lld/%lld finished (%lld done, %lld failed), %lld running, %lld queued  %s",
                       static_cast<long long>(s.run.id), bar.c_str(), finished, total, count("done"),
                       count("failed"), count("leased"), count("queued"),
                       s.is_final() ? s.run.state.c_str()
                                    : (eta ? ("ETA " + format_duration(*eta)).c_str() : "ETA ?"));
}

nlohmann::json to_json(const RunRow& r) {
  return {{"run_id", r.id}, {"submitted_by", r.submitted_by}, {"submitted_at", format_iso_utc(r.submitted_at)},
          {"suite", r.suite}, {"preset", r.preset}, {"state", r.state}, {"commit_sha", r.commit_sha},
          {"branch", r.branch}, {"gpu_models", r.gpu_models},
          {"finished_at", r.finished_at ? nlohmann::json(format_iso_utc(*r.finished_at)) : nlohmann::json(nullptr)},
          {"jobs", r.jobs}, {"done", r.done}, {"failed", r.failed}, {"cancelled", r.cancelled}};
}

nlohmann::json to_json(const RunStatus& s) {
  const auto eta = s.eta_seconds();
  return {{"run", to_json(s.run)}, {"jobs_by_state", s.jobs_by_state}, {"finished", s.finished()},
          {"remaining_predicted_ms", s.remaining_predicted_ms}, {"live_workers", s.live_workers},
          {"eta_s", eta ? nlohmann::json(*eta) : nlohmann::json(nullptr)}};
}

nlohmann::json to_json(const ResultRow& r) {
  return {{"job_id", r.job_id}, {"problem", r.problem_id}, {"job_state", r.job_state},
          {"gpu_model", r.gpu_model}, {"status", r.status}, {"message", r.message},
          {"reference_median_ms", optional_json(r.reference_median_ms)},
          {"custom_median_ms", optional_json(r.custom_median_ms)}, {"speedup", optional_json(r.speedup)},
          {"speedup_ci_low", optional_json(r.speedup_ci_low)}, {"speedup_ci_high", optional_json(r.speedup_ci_high)},
          {"custom_tflops", optional_json(r.custom_tflops)}, {"wall_ms", optional_json(r.wall_ms)},
          {"attempt", r.attempt}, {"worker", r.worker}};
}

nlohmann::json to_json(const ModelSummary& s) {
  return {{"gpu_model", s.gpu_model}, {"jobs", s.jobs}, {"with_result", s.with_result},
          {"correct", s.correct}, {"failed", s.failed}, {"fast_1", s.fast_1}, {"fast_1_2", s.fast_1_2},
          {"geomean_speedup", optional_json(s.geomean_speedup)}};
}

nlohmann::json to_json(const std::vector<ResultRow>& rows, const ResultsSummary& summary) {
  nlohmann::json out = {{"results", nlohmann::json::array()}, {"summary", to_json(summary.overall)},
                        {"per_gpu_model", nlohmann::json::array()}};
  for (const ResultRow& r : rows) out["results"].push_back(to_json(r));
  for (const ModelSummary& m : summary.per_model) out["per_gpu_model"].push_back(to_json(m));
  return out;
}

nlohmann::json to_json(const WorkerRow& w) {
  return {{"name", w.name}, {"state", w.state}, {"device_kind", w.device_kind}, {"gpu_model", w.gpu_model},
          {"host", w.host}, {"last_seen", format_iso_utc(w.last_seen)},
          {"seconds_since_seen", w.seconds_since_seen}, {"jobs_done", w.jobs_done},
          {"jobs_running", w.jobs_leased}};
}

}  // namespace kb::cli
