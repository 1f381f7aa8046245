#include "executor/executor.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "executor/executor_job.h"
#include "executor/robustness_trials.h"
#include "executor/trial_export.h"
#include "executor/verification.h"

namespace kb::detail {

namespace {

// JobRequest::timing_secret when given, else 8 bytes of getrandom(2) (falling back to the clock
// and the process id only if the kernel refuses, which Linux >= 3.17 does not).
uint64_t timing_secret_of(const JobRequest& request) {
  if (request.timing_secret) return *request.timing_secret;
  uint64_t secret = 0;
  if (getrandom(&secret, sizeof secret, 0) == static_cast<ssize_t>(sizeof secret)) return secret;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return static_cast<uint64_t>(now) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(getpid());
}

// The traced rounds' draw: from the job's timing secret, so that a pack cannot foresee them and
// the jobs of one run do not all trace the same rounds (their count sets the run's wall time).
uint64_t trace_seed(uint64_t timing_secret) {
  return timing_secret ^ 0x7472616365ull;
}

// The hash salts' draw (ExecutionDevice::input_hash), from the same secret.
uint64_t hash_salt_seed(uint64_t timing_secret) {
  return timing_secret ^ 0x68617368ull;
}

}  // namespace

Job::Job(ExecutionDevice& device, const JobRequest& request, const ProblemInstance& problem,
         JobResult& result)
    : device_(device),
      request_(request),
      problem_(problem),
      result_(result),
      timing_secret_(timing_secret_of(request)),
      trace_rng_(trace_seed(timing_secret_)),
      hash_salts_(hash_salt_seed(timing_secret_)) {}

bool Job::fail(JobStatus status, const std::string& message) {
  result_.status = status;
  result_.message = message;
  return false;
}

bool Job::fail_error(const std::string& where, const Status& status) {
  return fail(JobStatus::kRuntimeError, where + status.message());
}

bool Job::create_variants() {
  CreateOutcome ref = device_.create(Slot::kReference, device_.pack_variant(Slot::kReference),
                                     problem_, request_.spec_yaml);
  if (ref.code == KB_PACK_UNSUPPORTED)
    return fail(JobStatus::kUnsupported, "reference: " + ref.message);
  if (ref.code != KB_PACK_OK) return fail(JobStatus::kRuntimeError, "reference: " + ref.message);
  if (request_.config.aa) {
    has_custom_ = true;  // B samples run the reference instance itself (see timed_reference_pair)
    return true;
  }
  CreateOutcome custom = device_.create(Slot::kCustom, device_.pack_variant(Slot::kCustom),
                                        problem_, request_.spec_yaml);
  if (custom.code == KB_PACK_NOT_IMPLEMENTED) {
    result_.status = JobStatus::kNotImplemented;
    result_.message = custom.message;
    return true;  // the reference is still timed
  }
  if (custom.code == KB_PACK_UNSUPPORTED)
    return fail(JobStatus::kUnsupported, "custom: " + custom.message);
  if (custom.code != KB_PACK_OK) return fail(JobStatus::kRuntimeError, "custom: " + custom.message);
  has_custom_ = true;
  return true;
}

bool Job::judge_errors(const ErrorStats& errors, const std::string& where) {
  merge_errors(result_.errors, errors);
  const JobStatus verdict = verdict_of(errors);
  if (verdict == JobStatus::kOk) return true;
  return fail(verdict, where + std::to_string(errors.mismatches) + " of " +
                           std::to_string(element_count(problem_.output_shape())) +
                           " outputs outside tolerance; first at index " +
                           std::to_string(errors.first_mismatch_index));
}

bool Job::compare_trial_outputs(int trial) {
  if (!request_.config.export_dir.empty()) {
    Result<std::vector<float>> ref = device_.read_output(Slot::kReference);
    Result<std::vector<float>> custom = device_.read_output(Slot::kCustom);
    if (!ref.is_ok()) return fail_error("", ref.status());
    if (!custom.is_ok()) return fail_error("", custom.status());
    Status s = export_trial(request_.config.export_dir, problem_,
                            GeneratorKey{request_.seed, static_cast<uint32_t>(trial)}, ref.value(),
                            custom.value());
    if (!s.is_ok()) return fail_error("export: ", s);
  }
  Result<ErrorStats> e = device_.compare_slots(request_.spec->tolerance);
  if (!e.is_ok()) return fail_error("", e.status());
  return judge_errors(e.value(), "");
}

// One traced custom call: everything on the job stream and launched by the executor's thread
// during the call, a kernel of its own, and own kernels carrying the spec's share of its time.
bool Job::check_custom_call(const CallTrace& call, const std::string& where) {
  if (result_.custom_kernels.empty()) result_.custom_kernels = call.kernel_names;
  if (!call.foreign.empty()) {
    return fail(JobStatus::kForeignStream,
                where + std::to_string(call.foreign.size()) +
                    " activities of the custom call ran off the job stream or after the "
                    "call; first: " +
                    call.foreign.front());
  }
  if (call.own_kernels == 0) {
    return fail(JobStatus::kNoCustomKernel, where + "the custom call launched " +
                                                std::to_string(call.library_kernels) +
                                                " library kernels and none of its own");
  }
  const double share_min = request_.spec->verification.own_kernel_share_min;
  const double share = call.total_gpu_ms > 0 ? call.own_gpu_ms / call.total_gpu_ms : 1.0;
  if (share < share_min) {
    char text[160];
    std::snprintf(
        text, sizeof text,
        "own kernels carry %.1f%% of the custom call's %.3f ms of GPU time (minimum %.0f%%)",
        100 * share, call.total_gpu_ms, 100 * share_min);
    return fail(JobStatus::kLibraryDominated, where + text);
  }
  return true;
}

bool Job::check_trace(const LaunchTrace& trace, const std::string& where) {
  if (!trace.available || request_.config.aa) return true;
  if (!trace.stray.empty()) {
    return fail(
        JobStatus::kForeignStream,
        where + std::to_string(trace.stray.size()) +
            " activities launched outside the executor's calls; first: " + trace.stray.front());
  }
  for (const CallTrace& call : trace.calls) {
    if (call.slot == Slot::kCustom && !check_custom_call(call, where)) return false;
  }
  return true;
}

bool Job::check_correctness() {
  if (!has_custom_ || request_.config.aa) return true;
  for (int t = 0; t < request_.config.correctness_trials; ++t) {
    const std::string where = "correctness trial " + std::to_string(t) + ": ";
    Status s = device_.generate(0, problem_, GeneratorKey{request_.seed, static_cast<uint32_t>(t)});
    if (s.is_ok()) s = device_.run(Slot::kReference, 0);
    if (s.is_ok()) s = device_.poison_output(Slot::kCustom);
    if (!s.is_ok()) return fail_error(where, s);
    const uint64_t salt = hash_salts_();
    Result<uint64_t> before = device_.input_hash(0, salt);
    if (!before.is_ok()) return fail_error(where, before.status());
    const bool traced = !request_.config.no_launch_trace;
    if (traced && !(s = device_.begin_trace()).is_ok()) return fail_error(where, s);
    s = device_.run(Slot::kCustom, 0);
    if (!s.is_ok()) return fail_error(where + "custom: ", s);
    if (traced) {
      Result<LaunchTrace> trace = device_.end_trace();
      if (!trace.is_ok()) return fail_error(where, trace.status());
      if (!check_trace(trace.value(), where)) return false;
    } else if (!(s = device_.synchronize()).is_ok()) {
      return fail_error(where + "custom: ", s);
    }
    Result<uint64_t> after = device_.input_hash(0, salt);
    if (!after.is_ok()) return fail_error(where, after.status());
    if (after.value() != before.value()) {
      return fail(JobStatus::kInputMutated,
                  where + "the custom call changed its inputs or parameters");
    }
    if (!compare_trial_outputs(t)) return false;
    ++result_.correctness_trials;
  }
  return true;
}

bool Job::check_floor() {
  if (!has_custom_ || request_.config.aa || result_.status != JobStatus::kOk) return true;
  const double floor = result_.hard_floor_ms, custom_ms = result_.custom.summary.median;
  if (floor <= 0 || custom_ms <= 0 || custom_ms >= floor) return true;
  char text[256];
  std::snprintf(
      text, sizeof text,
      "the custom median %.4g ms is below the hard physical floor %.4g ms (%.4g bytes at peak DRAM "
      "bandwidth, %.4g FLOPs at 3xTF32 tensor-core peak)",
      custom_ms, floor, result_.min_bytes, result_.flops);
  return fail(JobStatus::kImplausible, text);
}

// The custom's timed median against the GPU time its work kept the GPU busy in the traced timed
// calls (CallTrace::busy_ms, from CUPTI's activity timestamps, which the trace's callbacks do not
// stretch; the events of a call on one stream span at least that). A median under
// kMinShareOfTracedWork of it means the untraced calls did less work than the traced ones: a
// custom that tells when it is traced (docs/verification.md, trick 3d).
bool Job::check_traced_work() {
  if (!has_custom_ || request_.config.aa || result_.status != JobStatus::kOk) return true;
  if (traced_custom_busy_ms_.empty()) return true;
  const double busy = summarize(traced_custom_busy_ms_).median;
  const double custom_ms = result_.custom.summary.median;
  if (busy <= 0 || custom_ms <= 0 || custom_ms >= kMinShareOfTracedWork * busy) return true;
  char text[320];
  std::snprintf(
      text, sizeof text,
      "the custom median %.4g ms is under %.0f%% of the %.4g ms its work kept the GPU "
      "busy in traced timed calls (median of %zu): its calls do less work when not traced",
      custom_ms, 100 * kMinShareOfTracedWork, busy, traced_custom_busy_ms_.size());
  return fail(JobStatus::kImplausible, text);
}

void Job::derive_figures() {
  result_.flops = problem_.cost().flops;
  result_.min_bytes = problem_.cost().min_bytes;
  result_.floor_ms = 1e3 * std::max(result_.flops / device_.peak_flops(),
                                    result_.min_bytes / device_.peak_bytes_per_s());
  result_.hard_floor_ms = hard_floor_ms(result_.min_bytes, result_.flops, device_.floor_peaks());
  if (result_.reference.summary.median > 0) {
    result_.reference_over_floor = result_.reference.summary.median / result_.floor_ms;
  }
  const double custom_ms = result_.custom.summary.median;
  if (custom_ms > 0) {
    result_.custom_tflops = result_.flops / (custom_ms * 1e-3) / 1e12;
    result_.custom_gbps = result_.min_bytes / (custom_ms * 1e-3) / 1e9;
    result_.custom_over_floor = custom_ms / result_.floor_ms;
    if (result_.hard_floor_ms > 0)
      result_.custom_over_hard_floor = custom_ms / result_.hard_floor_ms;
  }
}

}  // namespace kb::detail

namespace kb {

namespace {

// Wall time of the job's phases, in milliseconds, into JobResult::overhead_ms (where the suite's
// seconds go: `kb bench --json-out` keeps them per job).
class PhaseClock {
 public:
  explicit PhaseClock(nlohmann::json& into)
      : into_(into), last_(std::chrono::steady_clock::now()) {}
  void lap(const std::string& phase) {
    const auto now = std::chrono::steady_clock::now();
    into_[phase] = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }

 private:
  nlohmann::json& into_;
  std::chrono::steady_clock::time_point last_;
};

// The fleet's policy (docs/verification.md). The CPU device has no launch trace, but runs no
// custom GPU code either: its results are correctness-only and labelled `cpu`, not unverified.
void label_policy(const ExecutorConfig& c, JobResult& result) {
  std::string reason;
  if (c.correctness_trials < kMinVerifiedTrials) {
    reason = std::to_string(c.correctness_trials) +
             " correctness trials (the fleet requires >= " + std::to_string(kMinVerifiedTrials) +
             ")";
  }
  if (c.no_launch_trace)
    reason += std::string(reason.empty() ? "" : "; ") + "launch trace disabled";
  result.verified = reason.empty();
  result.unverified_reason = reason;
}

}  // namespace

JobResult execute_job(ExecutionDevice& device, const JobRequest& request) {
  JobResult result;
  result.problem_id = request.spec->id;
  result.preset = request.preset;
  result.device_kind = device.kind();
  result.environment = device.environment();
  Result<ProblemInstance> problem = request.preset.empty()
                                        ? ProblemInstance::create(request.spec, request.dims)
                                        : ProblemInstance::create(request.spec, request.preset);
  label_policy(request.config, result);
  if (!problem.is_ok()) {
    result.status = JobStatus::kUnsupported;
    result.message = problem.status().message();
    return result;
  }
  result.dims = problem->dims();
  detail::Job job(device, request, problem.value(), result);
  PhaseClock phases(result.overhead_ms);
  const bool checked = job.create_variants() && job.check_correctness();
  phases.lap("correctness");
  if (!checked) return result;
  const bool timed = job.time_variants();
  phases.lap("timing");
  // Robustness trials after timing and before the figures: a `fragile` verdict overrides `ok`.
  if (timed && result.status == JobStatus::kOk) {
    run_robustness_trials(device, request, result);
    phases.lap("robustness");
  }
  job.derive_figures();
  if (timed && job.check_floor()) job.check_traced_work();
  // Read again after timing: a void sample turns the device's timing gate off (TimedCall).
  result.environment.update(device.environment());
  result.environment["clocks"] = device.clock_report();
  if (request.config.no_launch_trace) result.environment["launch_trace"] = "disabled";
  result.environment["trace_fraction"] = request.config.trace_fraction;
  return result;
}

}  // namespace kb
