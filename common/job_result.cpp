#include "common/job_result.h"

#include <array>
#include <cmath>
#include <utility>

namespace kb {

JobResult JobResult::failure(std::string problem_id, std::string preset, std::string device_kind,
                             JobStatus status, std::string message) {
  JobResult r;
  r.problem_id = std::move(problem_id);
  r.preset = std::move(preset);
  r.device_kind = std::move(device_kind);
  r.status = status;
  r.message = std::move(message);
  return r;
}
namespace {

constexpr std::array<std::pair<JobStatus, const char*>, 14> kNames = {{
    {JobStatus::kOk, "ok"},
    {JobStatus::kMismatch, "mismatch"},
    {JobStatus::kNonFinite, "non_finite"},
    {JobStatus::kInputMutated, "input_mutated"},
    {JobStatus::kNoCustomKernel, "no_custom_kernel"},
    {JobStatus::kForeignStream, "foreign_stream"},
    {JobStatus::kLibraryDominated, "library_dominated"},
    {JobStatus::kImplausible, "implausible"},
    {JobStatus::kFragile, "fragile"},
    {JobStatus::kRuntimeError, "runtime_error"},
    {JobStatus::kNotImplemented, "not_implemented"},
    {JobStatus::kUnsupported, "unsupported"},
    {JobStatus::kCrashed, "crashed"},
    {JobStatus::kTimeout, "timeout"},
}};

nlohmann::json summary_json(const SampleSummary& s) {
  return {{"count", s.count}, {"median", s.median}, {"mean", s.mean},
          {"stddev", s.stddev}, {"min", s.min}, {"max", s.max}};
}

SampleSummary summary_from(const nlohmann::json& j) {
  SampleSummary s;
  s.count = j.value("count", 0);
  s.median = j.value("median", 0.0);
  s.mean = j.value("mean", 0.0);
  s.stddev = j.value("stddev", 0.0);
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  return s;
}

nlohmann::json timing_json(const VariantTiming& t) {
  return {{"samples_ms", t.samples_ms}, {"summary", summary_json(t.summary)}};
}

VariantTiming timing_from(const nlohmann::json& j) {
  VariantTiming t;
  if (j.is_null()) return t;
  t.samples_ms = j.value("samples_ms", std::vector<double>{});
  if (j.contains("summary")) t.summary = summary_from(j["summary"]);
  return t;
}

// JSON has no infinity: an unbounded interval is written as null.
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
double finite_or_inf(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : INFINITY; }

nlohmann::json robustness_json(const std::vector<RobustnessTrial>& trials) {
  nlohmann::json out = nlohmann::json::array();
  for (const RobustnessTrial& t : trials) {
    out.push_back({{"kind", t.kind}, {"preset", t.preset}, {"ref_err", finite_or_null(t.ref_err)},
                   {"custom_err", finite_or_null(t.custom_err)}, {"ref_excess", finite_or_null(t.ref_excess)},
                   {"custom_excess", finite_or_null(t.custom_excess)}, {"verdict", t.verdict}, {"note", t.note}});
  }
  return out;
}

std::vector<RobustnessTrial> robustness_from(const nlohmann::json& j) {
  std::vector<RobustnessTrial> out;
  if (!j.is_array()) return out;
  for (const nlohmann::json& t : j) {
    out.push_back({t.value("kind", ""), t.value("preset", ""), finite_or_inf(t.value("ref_err", nlohmann::json())),
                   finite_or_inf(t.value("custom_err", nlohmann::json())),
                   finite_or_inf(t.value("ref_excess", nlohmann::json())),
                   finite_or_inf(t.value("custom_excess", nlohmann::json())), t.value("verdict", ""),
                   t.value("note", "")});
  }
  return out;
}

}  // namespace

std::string to_string(JobStatus status) {
  for (const auto& [s, name] : kNames) {
    if (s == status) return name;
  }
  return "runtime_error";
}

JobStatus job_status_from_string(const std::string& name) {
  for (const auto& [s, n] : kNames) {
    if (name == n) return s;
  }
  return JobStatus::kRuntimeError;
}

nlohmann::json to_json(const JobResult& r) {
  nlohmann::json j = {
      {"problem_id", r.problem_id}, {"preset", r.preset}, {"dims", r.dims},
      {"device_kind", r.device_kind}, {"status", to_string(r.status)}, {"message", r.message},
      {"correctness_trials", r.correctness_trials},
      {"errors", {{"max_abs_error", r.errors.max_abs_error}, {"max_rel_error", r.errors.max_rel_error},
                  {"mismatches", r.errors.mismatches}, {"first_mismatch_index", r.errors.first_mismatch_index},
                  {"non_finite", r.errors.non_finite}}},
      {"custom_kernels", r.custom_kernels},
      {"reference", timing_json(r.reference)}, {"custom", timing_json(r.custom)},
      {"rounds", r.rounds}, {"stop_reason", r.stop_reason},
      {"speedup", {{"value", r.speedup.speedup}, {"ci_low", r.speedup.ci_low},
                   {"ci_high", finite_or_null(r.speedup.ci_high)},
                   {"relative_half_width", finite_or_null(r.speedup.relative_half_width)}}},
      {"flops", r.flops}, {"min_bytes", r.min_bytes}, {"custom_tflops", r.custom_tflops},
      {"custom_gbps", r.custom_gbps}, {"floor_ms", r.floor_ms}, {"custom_over_floor", r.custom_over_floor},
      {"reference_over_floor", r.reference_over_floor}, {"hard_floor_ms", r.hard_floor_ms},
      {"custom_over_hard_floor", r.custom_over_hard_floor}, {"verified", r.verified},
      {"unverified_reason", r.unverified_reason}, {"traced_rounds", r.traced_rounds},
      {"environment", r.environment}, {"overhead_ms", r.overhead_ms},
      {"robustness", robustness_json(r.robustness)},
  };
  if (!r.robustness_note.empty()) j["robustness_note"] = r.robustness_note;
  return j;
}

JobResult job_result_from_json(const nlohmann::json& j) {
  JobResult r;
  r.problem_id = j.value("problem_id", "");
  r.preset = j.value("preset", "");
  r.dims = j.value("dims", nlohmann::json::object());
  r.device_kind = j.value("device_kind", "");
  r.status = job_status_from_string(j.value("status", "runtime_error"));
  r.message = j.value("message", "");
  r.correctness_trials = j.value("correctness_trials", 0);
  if (const auto& e = j.value("errors", nlohmann::json::object()); !e.empty()) {
    r.errors.max_abs_error = e.value("max_abs_error", 0.0);
    r.errors.max_rel_error = e.value("max_rel_error", 0.0);
    r.errors.mismatches = e.value("mismatches", int64_t{0});
    r.errors.first_mismatch_index = e.value("first_mismatch_index", int64_t{-1});
    r.errors.non_finite = e.value("non_finite", int64_t{0});
  }
  r.custom_kernels = j.value("custom_kernels", std::vector<std::string>{});
  r.reference = timing_from(j.value("reference", nlohmann::json()));
  r.custom = timing_from(j.value("custom", nlohmann::json()));
  r.rounds = j.value("rounds", 0);
  r.stop_reason = j.value("stop_reason", "");
  if (const auto& s = j.value("speedup", nlohmann::json::object()); !s.empty()) {
    r.speedup.speedup = s.value("value", 0.0);
    r.speedup.ci_low = s.value("ci_low", 0.0);
    r.speedup.ci_high = finite_or_inf(s.value("ci_high", nlohmann::json()));
    r.speedup.relative_half_width = finite_or_inf(s.value("relative_half_width", nlohmann::json()));
  }
  r.flops = j.value("flops", 0.0);
  r.min_bytes = j.value("min_bytes", 0.0);
  r.custom_tflops = j.value("custom_tflops", 0.0);
  r.custom_gbps = j.value("custom_gbps", 0.0);
  r.floor_ms = j.value("floor_ms", 0.0);
  r.custom_over_floor = j.value("custom_over_floor", 0.0);
  r.reference_over_floor = j.value("reference_over_floor", 0.0);
  r.hard_floor_ms = j.value("hard_floor_ms", 0.0);
  r.custom_over_hard_floor = j.value("custom_over_hard_floor", 0.0);
  r.verified = j.value("verified", true);
  r.unverified_reason = j.value("unverified_reason", "");
  r.traced_rounds = j.value("traced_rounds", 0);
  r.environment = j.value("environment", nlohmann::json::object());
  r.overhead_ms = j.value("overhead_ms", nlohmann::json::object());
  r.robustness = robustness_from(j.value("robustness", nlohmann::json()));
  r.robustness_note = j.value("robustness_note", "");
  return r;
}

}  // namespace kb
